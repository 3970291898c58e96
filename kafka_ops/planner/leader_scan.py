"""The leader count goal's indexes: who leads and follows what, and its taking-side scan in numpy.

The leader count goal moves leadership between a partition's replicas one change at a time;
on the largest clusters a broker follows tens of thousands of partitions, and scanning them in
Python for each change took most of the goal's time. These keep the per-broker lists current
and compute the scan's keys for all candidates at once, with the same choice as the loop.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from operator import itemgetter

import numpy as np

from kafka_ops.planner.context import Run
from kafka_ops.planner.state import WorkingState

CHUNK = 512  # partitions weighed by the first step of that scan (each next step: twice as many)


class LeaderIndex:
    """Per broker, the partitions it leads and those it follows, each in partition order.

    Built from Run.replicas_on() (movable partitions only); ``moved`` keeps it current after a
    leadership change, so a leader goal scans only the side of a broker it needs.
    """

    def __init__(self, st: WorkingState, on: Sequence[Sequence[int]]) -> None:
        lead = np.fromiter((r[0] if r else -1 for r in st.replicas), dtype=np.int64, count=st.np)
        self.led: list[list[int]] = []
        self.followed: list[list[int]] = []
        for b, ps in enumerate(on):
            arr = np.asarray(ps, dtype=np.int64)
            mine = lead[arr] == b
            self.led.append(arr[mine].tolist())
            self.followed.append(arr[~mine].tolist())

    def moved(self, p: int, old: int, new: int) -> None:
        """Leadership of p passed from old to new."""
        if old == new:
            return
        for gone, came in ((self.led[old], self.followed[old]), (self.followed[new], self.led[new])):
            i = bisect_left(gone, p)
            if i < len(gone) and gone[i] == p:
                del gone[i]
            insort(came, p)

    def relocated(self, p: int, old: int, new: int) -> None:
        """The only replica of p moved from old to new, and its leadership with it."""
        del self.led[old][bisect_left(self.led[old], p)]
        insort(self.led[new], p)


class TakerScan:
    """The leader count goal's taking-side scan with numpy: the same choice as the loop.

    The loop visits the partitions w follows in partition order, keeps the best key (topic
    crowding, minus the leader's load, partition) among those whose leadership w may take, and
    stops at the first best that no transfer can beat. Here the keys of all candidates are
    computed at once; the running minimum's records (the bests the loop would have met, in
    order) are checked with can_lead one by one, so the result is the loop's.
    """

    def __init__(self, st: WorkingState, lead_range: Mapping[int, tuple[int, int]],
                 on: Sequence[Sequence[int]]) -> None:
        self.nb = nb = st.nb
        # Per broker, the partitions on it (partition order, as LeaderIndex): those it follows
        # are the ones it does not lead, so no list is converted per scan.
        self.on = [np.asarray(ps, dtype=np.int64) for ps in on]
        nt = max(st.topic, default=0) + 1
        self.topic = np.asarray(st.topic, dtype=np.int64)
        self.lead = np.fromiter((r[0] if r else -1 for r in st.replicas), dtype=np.int64,
                                count=st.np)
        self.tl = np.zeros(nt * nb, dtype=np.int64)
        if st.topic_leaders:
            keys = np.fromiter(st.topic_leaders.keys(), dtype=np.int64, count=len(st.topic_leaders))
            vals = np.fromiter(st.topic_leaders.values(), dtype=np.int64,
                               count=len(st.topic_leaders))
            self.tl[keys] = vals
        self.t_lo = np.zeros(nt, dtype=np.int64)
        self.t_hi = np.full(nt, np.iinfo(np.int32).max, dtype=np.int64)
        for t, (t_lo, t_hi) in lead_range.items():
            self.t_lo[t], self.t_hi[t] = t_lo, t_hi
        self.tl_dict = st.topic_leaders
        # Per broker, static (no replica moves in a leader goal): each partition's topic key and
        # the topic's leader range.
        self.kt = [self.topic[ps] * nb for ps in self.on]
        self.lo_hi = [(self.t_lo[self.topic[ps]], self.t_hi[self.topic[ps]]) for ps in self.on]
        self.scale = st.np + 1  # keys: (crowding, -load, partition) as one integer
        # For the giving side: each partition's replicas in list order (the leader first),
        # -1 past the replication factor.
        self.replicas = st.replicas
        lens = np.fromiter(map(len, st.replicas), dtype=np.int64, count=st.np)
        flat = np.fromiter(chain.from_iterable(st.replicas), dtype=np.int64, count=int(lens.sum()))
        self.reps = np.full((st.np, max(2, int(lens.max(initial=1)))), -1, dtype=np.int64)
        rows = np.repeat(np.arange(st.np), lens)
        self.reps[rows, np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)] = flat

    def moved(self, p: int, old: int, new: int) -> None:
        """Leadership of p passed from old to new (topic_leaders already changed)."""
        r = self.replicas[p]
        self.reps[p, :len(r)] = r
        self.lead[p] = new
        kt = int(self.topic[p]) * self.nb
        self.tl[kt + old] = self.tl_dict.get(kt + old, 0)
        self.tl[kt + new] = self.tl_dict.get(kt + new, 0)

    def best(self, run: Run, w: int, load: Sequence[float], hi: float, floor: int,
             edge: float) -> tuple[int, int] | None:
        """(partition, w) of the transfer the taking-side loop of the leader count goal picks.

        In chunks of w's partitions, growing: the loop usually stops early (its first
        unbeatable best), so most calls never weigh the rest of the list.
        """
        ps_all = self.on[w]
        n = len(ps_all)
        loads = np.asarray(load, dtype=np.int64)
        lw = loads[w]
        kt_all = self.kt[w]
        lo_all, hi_all = self.lo_hi[w]
        m = s = self.scale
        big = np.iinfo(np.int64).max
        best: int | None = None
        best_key = big
        can_lead = run.can_lead
        pos, size = 0, CHUNK
        while pos < n:
            end = min(n, pos + size)
            ps = ps_all[pos:end]
            leads = self.lead[ps]
            ll = loads[leads]
            keep = np.flatnonzero(ll - lw > 1)  # led by a fuller broker (so w follows it)
            chunk = slice(pos, end)
            pos, size = end, 2 * size
            if not len(keep):
                continue
            ps, leads, ll = ps[keep], leads[keep], ll[keep]
            kt = kt_all[chunk][keep]
            t_lo, t_hi = lo_all[chunk][keep], hi_all[chunk][keep]
            on_new, on_old = self.tl[kt + w], self.tl[kt + leads]
            # The loop's max(0, on_new + 1 - t_hi) + (on_old - 1 < t_lo) - ..., on arrays.
            c = (np.maximum(0, on_new + 1 - t_hi) + (on_old <= t_lo) - (on_new < t_lo)
                 - (on_old > t_hi))
            keys = ((c + 8) * m + (m - 1 - ll)) * s + ps
            start = 0
            while start < len(keys):
                restart = None
                for i in _records(keys, start, best_key):
                    p = int(ps[i])
                    if not can_lead(p, w):
                        keys[i] = big
                        restart = i + 1
                        break
                    best, best_key = p, int(keys[i])
                    bc, l_lead = int(c[i]), int(ll[i])
                    if bc <= 0 and (l_lead > hi or (bc == floor and l_lead >= edge)):
                        return p, w
                if restart is None:
                    break
                start = restart
        return None if best is None else (best, w)


    def give(self, run: Run, w: int, led: Sequence[int], load: Sequence[float], lo: float,
             floor: int, edge: float) -> tuple[int, int] | None:
        """(partition, follower) of the transfer the giving-side loop of the leader count goal
        picks for w (above its bounds), weighing every (partition w leads, follower) at once.

        The loop visits them in partition order, then replica list order, keeps the best key
        (topic crowding, the follower's load, partition) among the transfers can_lead allows,
        and after each partition stops if the best is one no transfer can beat. Here the
        running minimum's records are the bests the loop meets, checked in the same order.
        """
        nb = self.nb
        loads = np.asarray(load, dtype=np.int64)
        limit = int(loads[w]) - 2  # the transfer must narrow the gap between the two brokers
        m = self.scale
        big = np.iinfo(np.int64).max
        best: tuple[int, int, int, int] | None = None  # partition, follower, crowding, its load
        best_key = big
        can_lead = run.can_lead

        def unbeatable(best: tuple[int, int, int, int]) -> bool:
            _, _, bc, bl = best
            return bc <= 0 and (bl < lo or (bc == floor and bl <= edge))

        # In chunks of w's partitions, growing (the loop usually stops early). A chunk ends
        # with a partition, so the loop's check after each partition is also made between
        # chunks: if the best cannot be beaten, no later partition is weighed.
        pos, size = 0, CHUNK
        while pos < len(led):
            if best is not None and unbeatable(best):
                return best[0], best[1]
            ps = np.asarray(led[pos:pos + size], dtype=np.int64)
            pos, size = pos + size, 2 * size
            fol = self.reps[ps, 1:]  # (partition, follower slot), in the loop's order when raveled
            lf = loads[fol]  # -1 slots read the last broker: masked below
            ok = (fol >= 0) & (lf <= limit)
            rows, cols = np.nonzero(ok)
            if not len(rows):
                continue
            f = fol[rows, cols]
            lf = lf[rows, cols]
            p_arr = ps[rows]
            t = self.topic[p_arr]
            kt = t * nb
            t_lo, t_hi = self.t_lo[t], self.t_hi[t]
            on_old, on_new = self.tl[kt + w], self.tl[kt + f]
            # The loop's max(0, on_new + 1 - t_hi) - (on_new < t_lo) + (on_old - 1 < t_lo) - ...
            c = (np.maximum(0, on_new + 1 - t_hi) - (on_new < t_lo) + (on_old <= t_lo)
                 - (on_old > t_hi))
            keys = ((c + 8) * m + lf) * m + p_arr
            best_row = -1  # the best's row in this chunk (-1: an earlier chunk's, a done partition)
            start = 0
            while start < len(keys):
                restart = None
                for i in _records(keys, start, best_key):
                    if best is not None and rows[i] != best_row and unbeatable(best):
                        # The loop checks after each partition: the best's partition is done.
                        return best[0], best[1]
                    p, new = int(p_arr[i]), int(f[i])
                    if not can_lead(p, new):
                        keys[i] = big
                        restart = i + 1
                        break
                    best, best_key, best_row = (p, new, int(c[i]), int(lf[i])), int(keys[i]), int(rows[i])
                if restart is None:
                    break
                start = restart
        return None if best is None else (best[0], best[1])


def _records(keys: np.ndarray, start: int, best_key: int) -> list[int]:
    """Where the running minimum of keys[start:], capped at the best so far (after a veto the
    scan resumes against it), drops below everything before it: the bests the loop meets."""
    run_min = np.minimum(np.minimum.accumulate(keys[start:]), best_key)
    prev = np.concatenate(([best_key], run_min[:-1]))
    return (np.flatnonzero(run_min < prev) + start).tolist()


def worst_count(load: Sequence[float], brokers: Sequence[int], lo: float, hi: float,
                 stuck: set[int]) -> tuple[int, bool] | None:
    """BalanceGoal._worst for a count: the first broker furthest out of bounds, and if above."""
    if stuck:
        brokers = [b for b in brokers if b not in stuck]
        if not brokers:
            return None
    values = picker(brokers)(load)
    top, bottom = max(values), min(values)
    up = top - hi if top > hi else lo - top
    down = bottom - hi if bottom > hi else lo - bottom
    dist = max(up, down)
    if dist <= 0:
        return None
    # Only the top value can be furthest above and only the bottom one furthest below (or
    # short of lo): the first broker holding either, where it is the furthest.
    n = len(values)
    i = min(values.index(top) if up == dist else n, values.index(bottom) if down == dist else n)
    b = brokers[i]
    return b, load[b] > hi


def picker(brokers: Sequence[int]) -> Callable[[Sequence[float]], Sequence[float]]:
    """itemgetter of the brokers' entries, always as a tuple."""
    if len(brokers) == 1:
        only = brokers[0]
        return lambda seq: (seq[only],)
    return itemgetter(*brokers)
