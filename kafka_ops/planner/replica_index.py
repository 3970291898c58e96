"""Indexes of the replicas the replica count goal may move: by size, and per broker and topic.

The goal asks, per move, for the replicas of a giver nearest an ideal size, and for those of
the topics the giver holds most of. On the largest benchmark that is 1.3 million replicas, so
the indexes are built in numpy once and kept up to date as replicas move, never rescanned.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from kafka_ops.planner.state import WorkingState

TOPIC_SCAN = 100  # topics fullest() orders per broker (a giver's fullest are looked for among them)
REORDER = 32  # moves off a broker before its fullest-topics order is recomputed


class BySize:
    """Replicas (size, partition) sorted by size, with the sizes alone beside them: bisecting a
    list of floats is several times faster than one of tuples, and this is searched per move."""

    __slots__ = ("items", "xs")

    def __init__(self, items: list[tuple[float, int]], xs: list[float] | None = None) -> None:
        self.items = items  # sorted
        self.xs = [x for x, _ in items] if xs is None else xs

    def __len__(self) -> int:
        return len(self.items)

    def nearest(self, target: float, n: int) -> list[tuple[float, int]]:
        """Up to n entries nearest to target, nearest first (ties: the smaller first)."""
        xs, items = self.xs, self.items
        size = len(xs)
        hi = bisect_left(xs, target)
        lo = hi - 1
        out: list[tuple[float, int]] = []
        while len(out) < n:
            if lo >= 0 and (hi >= size or target - xs[lo] <= xs[hi] - target):
                out.append(items[lo])
                lo -= 1
            elif hi < size:
                out.append(items[hi])
                hi += 1
            else:
                break
        return out

    def remove(self, x: float, p: int) -> None:
        xs, items = self.xs, self.items
        i = bisect_left(xs, x)
        while i < len(xs) and xs[i] == x:
            if items[i][1] == p:
                del xs[i]
                del items[i]
                return
            i += 1


class SortedReplicas(NamedTuple):
    """Replicas sorted by a key (a broker, or topic * nb + broker), then size, then partition;
    ``keys[i]`` owns ``xs``/``parts`` from ``starts[i]`` to ``ends[i]``."""

    keys: list[int]
    starts: list[int]
    ends: list[int]
    xs: list[float]
    parts: list[int]

    def slice(self, i: int) -> BySize:
        lo, hi = self.starts[i], self.ends[i]
        x = self.xs[lo:hi]
        return BySize(list(zip(x, self.parts[lo:hi], strict=True)), x)


def sort_replicas(st: WorkingState, on: Mapping[int, Sequence[int]], per_topic: bool) -> SortedReplicas:
    """Sorted in numpy: this indexes every movable replica (1.3 million on the largest
    benchmark), and sorting tuples in Python took seconds."""
    brokers = np.fromiter(on, dtype=np.int64, count=len(on))
    lengths = np.fromiter((len(on[b]) for b in on), dtype=np.int64, count=len(on))
    parts = np.fromiter((p for b in on for p in on[b]), dtype=np.int64, count=int(lengths.sum()))
    keys = np.repeat(brokers, lengths)
    if per_topic:
        keys = np.asarray(st.topic, dtype=np.int64)[parts] * st.nb + keys
    sizes = [st.size[p] for p in parts.tolist()]
    order = np.lexsort((parts, np.asarray(sizes, dtype=np.float64), keys))
    keys = keys[order]
    cuts = (np.flatnonzero(np.diff(keys)) + 1).tolist()
    starts, ends = [0, *cuts], [*cuts, len(keys)]
    return SortedReplicas(keys[starts].tolist() if len(keys) else [], starts if len(keys) else [],
                   ends if len(keys) else [], [sizes[i] for i in order.tolist()],
                   parts[order].tolist())


class TopicIndex:
    """Per broker and topic, the movable replicas by size; per broker, its topics fullest first.

    Lets the replica count goal look at the replicas of the topics a source holds most of
    without scanning all of its replicas. The fullest-first order is refreshed every
    ``REORDER`` moves off the broker (a heuristic order: stale by a few replicas at most).
    """

    def __init__(self, st: WorkingState, cands: Mapping[int, BySize]) -> None:
        self.st = st
        # Each topic's replicas per broker of the group, on average (the balanced count).
        topic = np.asarray(st.topic, dtype=np.int64)
        rf = np.fromiter(map(len, st.replicas), dtype=np.int64, count=st.np)
        n = max(1, len(cands))
        self.mean = (np.bincount(topic, weights=rf) / n).tolist()
        # ... and its leaders per broker: moving a leader replica moves the leadership too.
        self.lead_mean = (np.bincount(topic) / n).tolist()
        nb = st.nb
        # Per topic and broker, the replicas by size: built when first asked for (most are
        # never: only a giver's fullest topics are), from one sort of them all.
        self._sorted = sort_replicas(st, {b: [p for _, p in lst.items] for b, lst in cands.items()},
                             per_topic=True)
        self._where = {key: i for i, key in enumerate(self._sorted.keys)}
        self._on: dict[int, BySize] = {}
        topics_of = _topics_by_size(st, cands)
        # Per broker, its topics as arrays (in first-seen order): topic, mean, current count, and
        # whether the topic is still in the running; where each topic sits in them.
        counts = st.topic_count
        self._topics: dict[int, np.ndarray] = {}
        self._means: dict[int, np.ndarray] = {}
        self._counts: dict[int, np.ndarray] = {}
        self._live: dict[int, np.ndarray] = {}
        self._slot: dict[int, dict[int, int]] = {}
        for b, ts in topics_of.items():
            self._topics[b] = np.array(ts, dtype=np.int64)
            self._means[b] = np.array([self.mean[t] for t in ts], dtype=np.float64)
            self._counts[b] = np.array([counts[t * nb + b] for t in ts], dtype=np.int64)
            self._live[b] = np.ones(len(ts), dtype=bool)
            self._slot[b] = {t: i for i, t in enumerate(ts)}
        self._topics_seen = topics_of  # for tests: each broker's topics, first-seen order
        # Per broker, its replicas and leaders per topic: the state's dicts keyed by topic and
        # broker together hold millions of entries, and a lookup in one that size misses the
        # CPU caches; a move's two brokers' own dicts stay in them.
        self.count_on = _per_broker(counts, nb)
        self.lead_on = _per_broker(st.topic_leaders, nb)
        self._order: dict[int, list[int]] = {}
        self._age: dict[int, int] = {}

    def holds(self, t: int, b: int) -> bool:
        """Whether b started with movable replicas of t (on() knows them)."""
        return t * self.st.nb + b in self._where

    def on(self, t: int, b: int) -> BySize:
        """b's movable replicas of topic t, by size."""
        key = t * self.st.nb + b
        got = self._on.get(key)
        if got is None:
            got = self._sorted.slice(self._where[key])
            replicas = self.st.replicas
            # Those that left b since the index was built (a replica moves once in this goal).
            got = BySize([(x, p) for x, p in got.items if b in replicas[p]])
            self._on[key] = got
        return got

    def fullest(self, b: int) -> list[int]:
        if b not in self._order or self._age.get(b, 0) >= REORDER:
            if b not in self._topics:
                self._order[b] = []
            else:
                live = self._live[b]
                counts = self._counts[b]
                # A topic b holds one replica of never evens out by leaving b: dropped for good
                # (b only gives in this goal; what it receives could not move again anyway).
                live &= counts >= 2
                sel = np.flatnonzero(live)
                excess = counts[sel] - self._means[b][sel]
                # Fullest first; equal excess in first-seen order (a stable sort, as sorted()).
                order = sel[np.argsort(-excess, kind="stable")[:TOPIC_SCAN]]
                self._order[b] = self._topics[b][order].tolist()
            self._age[b] = 0
        return self._order[b]

    def moved(self, p: int, src: int, dst: int) -> None:
        """p's replica moved from src to dst: both brokers' topic counts follow topic_count."""
        t = self.st.topic[p]
        on_src, on_dst = self.count_on[src], self.count_on[dst]
        on_src[t] -= 1
        on_dst[t] = on_dst.get(t, 0) + 1
        if self.st.replicas[p][0] == dst:  # the leadership went along
            on_src, on_dst = self.lead_on[src], self.lead_on[dst]
            on_src[t] -= 1
            on_dst[t] = on_dst.get(t, 0) + 1
        for b, d in ((src, -1), (dst, 1)):
            slot = self._slot.get(b)
            if slot is not None:
                i = slot.get(t)
                if i is not None:
                    self._counts[b][i] += d

    def forget(self, b: int, p: int) -> None:
        lst = self._on.get(self.st.topic[p] * self.st.nb + b)
        if lst:
            lst.remove(self.st.size[p], p)
        self._age[b] = self._age.get(b, 0) + 1


def _topics_by_size(st: WorkingState, cands: Mapping[int, BySize]) -> dict[int, list[int]]:
    """Per broker, its topics in the order its smallest replica of each comes (by size, then
    partition): the tie-break of fullest() among equally full topics, which decides which
    replicas the goal moves (and so what the later goals can still reach)."""
    brokers = [b for b, lst in cands.items() if len(lst)]
    lengths = np.fromiter((len(cands[b]) for b in brokers), dtype=np.int64, count=len(brokers))
    parts = np.fromiter((p for b in brokers for _, p in cands[b].items), dtype=np.int64,
                        count=int(lengths.sum()))
    owner = np.repeat(np.arange(len(brokers), dtype=np.int64), lengths)
    pair = owner * max(1, len(st.topic)) + np.asarray(st.topic, dtype=np.int64)[parts]
    _, first = np.unique(pair, return_index=True)
    first.sort()  # first appearances in list order: broker by broker, by size within each
    topics = np.asarray(st.topic, dtype=np.int64)[parts[first]].tolist()
    cuts = np.searchsorted(owner[first], np.arange(len(brokers) + 1)).tolist()
    return {b: topics[cuts[i]:cuts[i + 1]] for i, b in enumerate(brokers)}


def _per_broker(counts: Mapping[int, int], nb: int) -> list[dict[int, int]]:
    """A dict keyed by topic * nb + broker, as one dict per broker keyed by topic."""
    keys = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    values = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    order = np.argsort(keys % nb, kind="stable")
    brokers = (keys % nb)[order]
    topics, values = (keys // nb)[order].tolist(), values[order].tolist()
    bounds = np.searchsorted(brokers, np.arange(nb + 1)).tolist()
    return [dict(zip(topics[i:j], values[i:j], strict=True))
            for i, j in zip(bounds, bounds[1:], strict=False)]
