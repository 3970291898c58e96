"""Where the pool membership goal sends each replica that enters its pool, kept incrementally.

The goal's order (see PoolMembershipGoal.optimize) is, per broker of the pool: the rack rule
first, then below the replica count the pool ends with, then the fewest of the replica's topic
among those below, then the fewest of the pool's own replicas, the least disk, the lowest
broker. A migration into pools relocates most of a cluster's replicas (658,000 of 1.3 million
on the xxl preset with fuzz_grown's pools), and building that key in Python for every broker of
the pool was 88 million tuples. Here the key is packed into one int64 per broker over arrays
kept in step with each move, and the Python order is kept as the fallback for the rare replica
whose best broker a veto refuses: the same broker is chosen either way. While one topic's
replicas relocate, only the broker each one goes to changes its key: a heap per rack of the
pool holds (key, disk, broker), rebuilt when the topic changes and pushed to after each move
(the whole pool's key in numpy per replica was 16 us, 10.6 of the 19 s the hard goals took on
pooled xxl).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from kafka_ops.planner.context import Run

_RACK, _ABOVE, _TOPIC = 1 << 62, 1 << 61, 1 << 30  # own replicas fill the low 30 bits


def pool_counts(run: Run) -> tuple[list[int], list[int]]:
    """Per broker, the replicas on it of movable partitions of other groups (the pool
    membership goal relocates them all); per group, the replicas per broker that balances it
    ends with, rounded down."""
    st = run.state
    reps = st.replica_matrix()
    group = np.asarray(st.group_of_topic, dtype=np.int64)[np.asarray(st.topic, dtype=np.int64)]
    member = np.zeros((len(st.groups), st.nb + 1), dtype=bool)  # the last column: padding
    for g, brokers in enumerate(st.in_group):
        member[g, list(brokers)] = True
    held = reps >= 0
    away = held & ~member[group[:, None], np.where(held, reps, st.nb)]
    away &= np.asarray(run.partition_movable, dtype=bool)[:, None]
    foreign = np.bincount(reps[away], minlength=st.nb).tolist()
    per_group = np.bincount(group, weights=held.sum(axis=1), minlength=len(st.groups))
    ends = [int(per_group[g] // max(1, len(run.group_brokers(g)))) for g in range(len(st.groups))]
    return foreign, ends


class PoolFill:
    """The goal's order over each pool's brokers, as arrays: a broker's own replicas (its
    count less the replicas of other groups' partitions still on it), its disk, and, for the
    topic being relocated, its replicas of that topic. Only brokers a move may go to at all
    are candidates (the mode's dst_ok; and live, not excluded, once broker_exclusions vetoes):
    the others fail every try, so skipping them picks the broker the Python order reaches."""

    def __init__(self, run: Run) -> None:
        st = run.state
        self.run = run
        self.foreign, self.ends = pool_counts(run)
        live = any(g.name == "broker_exclusions" for g in run.vetoes)
        self.members = [np.array(sorted(b for b in g.brokers if run.dst_ok[b]
                                        and (st.eligible[b] or not live)), dtype=np.int64)
                        for g in st.groups]
        self.member_lists = [m.tolist() for m in self.members]
        self.rack_lists = [[st.rack[b] for b in m] for m in self.member_lists]
        self.row: list[int] = []  # for the topic relocating (_topic_heaps) ...
        self.keys: list[int] = []
        self.disks: list[int] = []
        self.heaps: dict[int, list[tuple[int, int, int]]] = {}  # ... per rack
        self.slots: list[list[tuple[int, int]]] = [[] for _ in range(st.nb)]  # (group, index)
        for g, members in enumerate(self.members):
            for i, b in enumerate(members.tolist()):
                self.slots[b].append((g, i))
        self._sync()

    def _sync(self) -> None:
        """Reread the arrays from the state (after a fallback, which may move other replicas)."""
        st = self.run.state
        own = np.asarray(st.count, dtype=np.int64) - np.asarray(self.foreign, dtype=np.int64)
        disk = np.asarray(st.disk, dtype=np.int64)
        self.own = [own[m] for m in self.members]
        self.disk = [disk[m] for m in self.members]
        self.topic = -1

    def _topic_heaps(self, t: int, g: int) -> None:
        """For topic t (relocating into pool g): the pool's brokers' replicas of t, each
        broker's key and disk, and a heap of (key, disk, index) per rack (in Python: 33,000
        topics relocate on pooled xxl, each over a pool of about 100 brokers)."""
        tc, base, end = self.run.state.topic_count, t * self.run.state.nb, self.ends[g]
        self.row = [tc.get(base + b, 0) for b in self.member_lists[g]]
        self.keys = [_ABOVE + o if o >= end else r * _TOPIC + o
                     for r, o in zip(self.row, self.own[g].tolist(), strict=True)]
        self.disks = self.disk[g].tolist()
        self.heaps = {}
        for i, r in enumerate(self.rack_lists[g]):
            self.heaps.setdefault(r, []).append((self.keys[i], self.disks[i], i))
        for heap in self.heaps.values():
            heapq.heapify(heap)
        self.topic = t

    def _top(self, heap: list[tuple[int, int, int]]) -> tuple[int, int, int] | None:
        """The heap's first entry still current (older ones of a broker that took a replica
        since are dropped)."""
        keys, disks = self.keys, self.disks
        while heap:
            k, d, i = heap[0]
            if keys[i] == k and disks[i] == d:
                return heap[0]
            heapq.heappop(heap)
        return None

    def order(self, p: int) -> Callable[[int], tuple[bool, int, int, float, int]]:
        """The same order in Python: the fallback's sort key (relocate's ``order``)."""
        st = self.run.state
        count, tc, disk, foreign = st.count, st.topic_count, st.disk, self.foreign
        end, base = self.ends[st.group_of(p)], st.topic[p] * st.nb

        def key(b: int) -> tuple[bool, int, int, float, int]:
            own = count[b] - foreign[b]
            return (own >= end, tc.get(base + b, 0) if own < end else 0, own, disk[b], b)
        return key

    def best(self, p: int, src: int, limit: int) -> int | None:
        """The broker of p's pool first in the goal's order, or None if the pool has none: the
        least (key, disk, broker) outside the racks that hold ``limit`` of p's other replicas,
        or over all racks if every one does."""
        st = self.run.state
        g = st.group_of_topic[st.topic[p]]
        if not len(self.own[g]):
            return None
        if st.topic[p] != self.topic:
            self._topic_heaps(st.topic[p], g)
        rack = st.rack
        racks = [rack[b] for b in st.replicas[p] if b != src]
        full = {r for r in racks if racks.count(r) >= limit} if len(racks) >= limit else ()
        first = None
        for r, heap in self.heaps.items():
            if r not in full and (top := self._top(heap)) is not None and (first is None or top < first):
                first = top
        if first is None:
            first = min(x for x in map(self._top, self.heaps.values()) if x is not None)
        self.at = (g, first[2])
        return self.member_lists[g][first[2]]

    def moved(self, p: int, src: int, dst: int) -> None:
        """Keep the arrays in step with the relocation to best()'s broker: src's own count
        does not change (its count and its foreign replicas both drop by one). Of p's pool
        only dst changes: src is outside it (the goal relocates only such replicas), so the
        heaps take dst's new key and disk alone."""
        size = self.run.state.size[p]
        at, i = self.at
        self.foreign[src] -= 1
        for g, j in self.slots[src]:
            self.disk[g][j] -= size
        for g, j in self.slots[dst]:  # in p's group, and in the unpooled one if that is all
            self.own[g][j] += 1
            self.disk[g][j] += size
        self.row[i] += 1
        own = int(self.own[at][i])
        self.keys[i] = (_ABOVE if own >= self.ends[at] else self.row[i] * _TOPIC) + own
        self.disks[i] += size
        heapq.heappush(self.heaps[self.rack_lists[at][i]], (self.keys[i], self.disks[i], i))

    def fell_back(self, src: int) -> None:
        """After a relocation by the Python order: src lost a foreign replica; reread the rest."""
        self.foreign[src] -= 1
        self._sync()
