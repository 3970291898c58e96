"""The replica count goal: per-broker replica counts within bounds, with as few moves as they need.

It makes most of a plan's moves, so it picks which replica moves with the later goals in mind
(disk and per-topic spread); split from balance.py, whose BalanceGoal it specialises.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from kafka_ops.planner.balance import _SCAN, BalanceGoal
from kafka_ops.planner.context import Run
from kafka_ops.planner.state import WorkingState

_NEAREST = 32  # replicas nearest the ideal size the replica count goal weighs per move
_TAKER_WEIGHT = 0.3  # how much the receiving broker's disk wish counts against the giver's
_TOPICS = 8  # a source's fullest topics the replica count goal weighs per move
_TOPIC_SCAN = 100  # ... looked for among this many of them (the rest the taker has enough of)
_MISSES = 16  # ... giving up after this many in a row that the taker holds enough of
_REORDER = 32  # moves off a broker before its fullest-topics order is recomputed
_GAIN = 10  # topic evening-out beyond this many replicas counts the same
_FAR = 2.0  # a replica this many "near" widths from the ideal size ...
_FAR_COST = 3  # ... counts as evening its topic out by this many replicas less (disk first)


def _nearest(lst: Sequence[tuple[float, int]], target: float, n: int) -> list[tuple[float, int]]:
    """_around as a list: up to n entries nearest to target first (ties: the smaller first)."""
    size = len(lst)
    i = bisect_left(lst, (target, -1))
    lo, hi = i - 1, i
    out: list[tuple[float, int]] = []
    while len(out) < n:
        if lo >= 0 and (hi >= size or target - lst[lo][0] <= lst[hi][0] - target):
            out.append(lst[lo])
            lo -= 1
        elif hi < size:
            out.append(lst[hi])
            hi += 1
        else:
            break
    return out


class ReplicaCountGoal(BalanceGoal):
    """Replica count per broker within bounds, moving as few replicas as the counts require.

    This goal makes most of a plan's moves, so it chooses WHICH replica to move with the later
    goals in mind: a size close to what evens out disk usage between the two brokers, and a
    topic that the source has too many of and the destination too few. That is why disk and
    per-topic balance seldom need moves of their own.
    """

    def __init__(self) -> None:
        super().__init__("replica_count", "replicas", 0.0)

    def accepts_move(self, run: Run, p: int, src: int, dst: int) -> bool:
        """accepts() of one move, without the deltas dict: later goals ask this per candidate."""
        st = run.state
        count, group, eligible = st.count, st.broker_group, st.eligible
        g = group[src]
        if g >= 0 and eligible[src] and count[src] - 1 < self.bounds(run, g)[0]:
            return False
        g = group[dst]
        return not (g >= 0 and eligible[dst] and count[dst] + 1 > self.bounds(run, g)[1])

    def _balance_replicas(self, run: Run, g: int) -> None:
        st = run.state
        brokers = run.group_brokers(g)
        on = run.movable_replicas()
        size = st.size
        if len(st.groups) > 1:
            on = [[p for p in ps if st.group_of(p) == g] for ps in on]
        cands = {b: sorted(zip(map(size.__getitem__, on[b]), on[b], strict=True)) for b in brokers}
        lo, hi = self.bounds(run, g)
        n = len(brokers)
        mean = _Means(sum(st.count[b] for b in brokers) / n, sum(st.disk[b] for b in brokers) / n)
        topics = _TopicIndex(st, cands)
        # First brokers above the upper bound give to the emptiest; then brokers below the lower
        # bound take from the fullest. Each move fixes one unit of imbalance: the count minimum.
        for limit in (hi, lo):
            srcs = [(-st.count[b], b) for b in brokers if st.count[b] > limit]
            heapq.heapify(srcs)
            # Takers per rack: a same-rack move never breaks rack awareness, so try those first.
            dsts: dict[int, list[tuple[int, int]]] = {}
            for b in brokers:
                if st.count[b] < limit and run.dst_ok[b]:
                    heapq.heappush(dsts.setdefault(st.rack[b], []), (st.count[b], b))
            while srcs and any(dsts.values()):
                _, s = heapq.heappop(srcs)
                chosen = None
                racks = sorted((r for r, h in dsts.items() if h),
                               key=lambda r: (r != st.rack[s], dsts[r][0], r))
                for r in racks:
                    # Of the rack's two emptiest takers, the first offered a replica that keeps
                    # every topic even wins; else the one whose best replica crowds a topic
                    # least (topic-aware tie-break: both are equally good for the count).
                    heap = dsts[r]
                    tried = []
                    for _ in range(min(2, len(heap))):
                        tried.append(heapq.heappop(heap))
                        c = self._choose(run, cands[s], s, tried[-1][1], mean, topics)
                        if c and (chosen is None or c[3] < chosen[3]):
                            chosen = c
                        if chosen and chosen[3] <= 0:
                            break
                    for item in tried:
                        if chosen is None or item[1] != chosen[1]:
                            heapq.heappush(heap, item)
                    if chosen:
                        break
                if chosen is None:
                    # Rare (rack and capacity vetoes): every replica of s against every taker.
                    for d in sorted(b for heap in dsts.values() for _, b in heap):
                        chosen = self._choose(run, cands[s], s, d, mean, topics,
                                              exhaustive=True)
                        if chosen:
                            heap = dsts[st.rack[d]]
                            heap.remove((st.count[d], d))
                            heapq.heapify(heap)
                            break
                if chosen is None:
                    continue  # nothing on s can go anywhere: give up on s
                i, d, p, _ = chosen
                if not run.room_for_move(st.size[p]):
                    return
                st.move(p, s, d)
                del cands[s][i]
                topics.forget(s, p)
                topics.moved(p, s, d)
                if st.count[s] > limit:
                    heapq.heappush(srcs, (-st.count[s], s))
                if st.count[d] < limit:
                    heapq.heappush(dsts[st.rack[d]], (st.count[d], d))

    def _choose(self, run: Run, lst: Sequence[tuple[float, int]], s: int, d: int, mean: _Means,
                topics: _TopicIndex,
                exhaustive: bool = False) -> tuple[int, int, int, float] | None:
        """(index in lst, d, partition, topic gain) of the best replica to move from s to d.

        Looks at the sizes nearest the ideal one among the topics s holds most of compared with
        d, then at the sizes nearest the ideal one overall; ``exhaustive`` looks at every replica.
        """
        st = run.state
        # Each side wants the size that spreads its disk gap over its remaining moves. The
        # giver's wish weighs more: every byte it gives beyond its excess is a byte the disk
        # goal must later copy back, while a taker left short is filled by the swaps that
        # follow (they may move a replica again at no cost). Measured on the generator's
        # presets: weighting the taker 10x moved 1.17-1.20x the bytes bound on xl, 0.3x 1.10.
        left_s = max(1.0, st.count[s] - mean.replicas)
        left_d = max(1.0, mean.replicas - st.count[d])
        want_s = (st.disk[s] - mean.disk) / left_s
        want_d = (mean.disk - st.disk[d]) / left_d
        desired = max(0.0, (want_s + _TAKER_WEIGHT * want_d) / (1 + _TAKER_WEIGHT))
        nb, topic, counts, means = st.nb, st.topic, st.topic_count, topics.mean
        replicas, tl, lead_mean = st.replicas, st.topic_leaders, topics.lead_mean
        can_move = run.can_move
        best: int | None = None
        best_key: tuple[int, float, float, float, int] | None = None
        seen = 0
        # "Near the ideal size": within half of it, or of a typical replica when it is tiny.
        near = 0.5 * max(desired, lst[len(lst) // 2][0] if lst else 0.0)
        far = _FAR * near

        def chunks() -> Iterator[Sequence[tuple[float, int]]]:
            if exhaustive:
                yield lst
                return
            # The topics s holds most more of than its share, when d holds at least two fewer:
            # moving one evens the topic out.
            found = misses = 0
            on = topics.on
            for t in topics.fullest(s):
                key = t * nb
                if counts[key + s] - counts.get(key + d, 0) >= 2:
                    yield _nearest(on[key + s], desired, 2)
                    found += 1
                    misses = 0
                    if found == _TOPICS:
                        break
                else:
                    misses += 1
                    if misses == _MISSES:
                        break  # d holds its share of s's fullest topics: the rest are less full
            yield _nearest(lst, desired, _NEAREST)
            # Partitions of one topic have similar sizes, so the nearest sizes can all be one
            # topic that d already has enough of: then sample the size range around the ideal.
            if best_key is None or best_key[0] > 0:
                yield [(x, p) for x, p in lst[:: max(1, len(lst) // (2 * _SCAN))]
                       if abs(x - desired) <= near]

        # Candidates come in chunks (a topic's, the nearest sizes, a sample), evaluated in order;
        # ``best_key`` is read by chunks() between them, so every chunk sees the best so far.
        stop = 0.2 * near
        done = False
        for chunk in chunks():
            for x, p in chunk:
                if best_key is not None and best_key[0] < 0:
                    seen += 1
                    if seen > 8 or best_key[2] <= stop:
                        done = True  # nearest first: later sizes only win on a topic bonus
                        break
                t = topic[p]
                kt = t * nb
                on_d, on_s = counts.get(kt + d, 0), counts[kt + s]
                # Negative is good: by how much further apart s and d hold the topic (the sum of
                # squared counts drops by 2 x (on_s - on_d - 1)), less for a size far from the
                # ideal one; then how much closer to the topic's mean both end up (-2 at best).
                gain = on_d + 1 - on_s
                gain = -_GAIN if gain < -_GAIN else (_GAIN if gain > _GAIN else gain)
                err = x - desired if x >= desired else desired - x
                if err > far:
                    gain += _FAR_COST
                if best_key is not None and gain > best_key[0]:
                    continue  # cheap: only a better key faces the vetoes
                m = means[t]
                crowding = abs(on_s - 1 - m) - abs(on_s - m) + abs(on_d + 1 - m) - abs(on_d - m)
                if replicas[p][0] == s:  # the leadership goes along: crowd the topic's leaders less
                    lm = lead_mean[t]
                    ld, ls = tl.get(kt + d, 0), tl.get(kt + s, 0)
                    crowding += abs(ls - 1 - lm) - abs(ls - lm) + abs(ld + 1 - lm) - abs(ld - lm)
                key = (gain, crowding, err, x, p)  # equal balance: the smaller replica
                if best_key is not None and key >= best_key:
                    continue
                if not can_move(p, s, d):
                    continue
                best, best_key = p, key
            if done:
                break
        if best is None:
            return None
        assert best_key is not None  # set together with best
        return bisect_left(lst, (st.size[best], best)), d, best, best_key[0]


class _TopicIndex:
    """Per broker and topic, the movable replicas by size; per broker, its topics fullest first.

    Lets the replica count goal look at the replicas of the topics a source holds most of
    without scanning all of its replicas. The fullest-first order is refreshed every
    ``_REORDER`` moves off the broker (a heuristic order: stale by a few replicas at most).
    """

    def __init__(self, st: WorkingState, cands: Mapping[int, Sequence[tuple[float, int]]]) -> None:
        self.st = st
        # Each topic's replicas per broker of the group, on average (the balanced count).
        totals: dict[int, int] = {}
        leaders: dict[int, int] = {}
        for p in range(st.np):
            totals[st.topic[p]] = totals.get(st.topic[p], 0) + len(st.replicas[p])
            leaders[st.topic[p]] = leaders.get(st.topic[p], 0) + 1
        self.mean = {t: c / max(1, len(cands)) for t, c in totals.items()}
        # ... and its leaders per broker: moving a leader replica moves the leadership too.
        self.lead_mean = {t: c / max(1, len(cands)) for t, c in leaders.items()}
        self.on: dict[int, list[tuple[float, int]]] = {}
        nb = st.nb
        for b, lst in cands.items():
            for x, p in lst:  # already by size
                self.on.setdefault(st.topic[p] * nb + b, []).append((x, p))
        topics_of: dict[int, list[int]] = {}
        for key in self.on:
            topics_of.setdefault(key % nb, []).append(key // nb)
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
        self._order: dict[int, list[int]] = {}
        self._age: dict[int, int] = {}

    def fullest(self, b: int) -> list[int]:
        if self._age.get(b, _REORDER) >= _REORDER:
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
                order = sel[np.argsort(-excess, kind="stable")[:_TOPIC_SCAN]]
                self._order[b] = self._topics[b][order].tolist()
            self._age[b] = 0
        return self._order[b]

    def moved(self, p: int, src: int, dst: int) -> None:
        """p's replica moved from src to dst: both brokers' topic counts follow topic_count."""
        t = self.st.topic[p]
        for b, d in ((src, -1), (dst, 1)):
            slot = self._slot.get(b)
            if slot is not None:
                i = slot.get(t)
                if i is not None:
                    self._counts[b][i] += d

    def forget(self, b: int, p: int) -> None:
        lst = self.on.get(self.st.topic[p] * self.st.nb + b)
        if lst:
            i = bisect_left(lst, (self.st.size[p], p))
            if i < len(lst) and lst[i][1] == p:
                del lst[i]
        self._age[b] = self._age.get(b, 0) + 1


class _Means(NamedTuple):
    """Per-broker replica count and disk bytes of a group, on average."""

    replicas: float  # not ``count``: that would shadow tuple.count
    disk: float
