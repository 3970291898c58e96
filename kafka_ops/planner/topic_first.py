"""Topic-led count moves: the replica count goal's first phase.

Most of a plan's moves are the ones the replica counts require, from brokers above the upper
bound to brokers below the lower one. Which replica each carries decides the per-topic spread
the plan ends with, and a topic's max - min drops only when EVERY broker at its max loses one
(or every broker at its min gains one). Picked one move at a time by a per-replica gain, those
moves even out a little of every topic and finish few: on medium seed 11 the count moves left
Σ(max - min) at 2,080 where an integer program over the same counts (benchmarks/spread_bound.py)
reaches 1,663 with as many moves. This phase spends them on whole steps instead: for the
topic whose next step costs the fewest moves, one replica off each broker at its max (or onto
each broker at its min), cheapest step first, as long as such steps are count moves (1,598,
with 4% more moves than the count minimum).

A broker already within the count bounds may take part at a price: each such move is one
beyond the counts' minimum (the count goal later moves one replica back out), so a small share
of extra moves buys the steps of the old topics that brokers added mid-life hold none of.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kafka_ops.planner.context import Run

_TRIES = 4  # partners weighed per broker of a step
_EXTRA = 0.04  # moves beyond the counts' minimum the phase may make, as a share of that minimum
_EXTRA_PRICE = 2  # what a step's move beyond the minimum costs, in moves, when steps are ranked

Step = tuple[int, int, int]  # (partition, source, destination)


def topic_first(run: Run, brokers: Sequence[int], lo: float, hi: float,
                pick: Callable[[int, int, int, set[int]], int | None],
                moved: Callable[[int, int, int], None]) -> None:
    """Count moves (mostly a broker above ``hi`` to one below ``lo``) that lower a topic's max or
    raise its min by one, cheapest step first, while there are such steps.

    ``pick(t, s, d, taken)``: the replica of topic t on s to move to d (none of ``taken``), or
    None; ``moved(p, s, d)``: the caller's bookkeeping after the state moved it.
    """
    st = run.state
    n = len(brokers)
    if n < 2:
        return
    count = st.count
    col = {b: i for i, b in enumerate(brokers)}
    m, row, topics = _matrix(run, brokers, st.topic_count)
    lead, _, _ = _matrix(run, brokers, st.topic_leaders, topics)
    total = m.sum(axis=1)
    t_lo, t_hi = total // n, -(-total // n)
    # Per broker of the group (numpy: a step weighs every broker as a partner, and on 270
    # brokers and 140,000 moves sorting them in Python cost 30 CPU s): replicas and rack.
    cnt = np.array([count[b] for b in brokers], dtype=np.int64)
    rack = np.array([st.rack[b] for b in brokers], dtype=np.int64)
    cols = np.arange(n)
    budget = _EXTRA * float(np.maximum(cnt - hi, 0).sum())
    extra = 0

    def free(s: int, d: int) -> bool:
        return count[s] > hi and count[d] < lo

    def step(t: int) -> tuple[int, int, list[int]]:
        """(price, side, brokers) of t's next step: side 1 lowers its max, -1 raises its min;
        price 0: t is even, or its step would cost more extra moves than are left."""
        i = row[t]
        r = m[i]
        top, bottom = int(r.max()), int(r.min())
        if top - bottom <= 1:
            return 0, 0, []
        best: tuple[int, int, list[int]] = (0, 0, [])
        for side, value, out in ((1, top, top > t_hi[i]), (-1, bottom, bottom < t_lo[i])):
            if not out:
                continue
            at = np.flatnonzero(r == value)
            x = int(((cnt[at] <= hi) if side > 0 else (cnt[at] >= lo)).sum())
            price = len(at) + _EXTRA_PRICE * x
            if extra + x <= budget and (not best[0] or price < best[0]):
                best = (price, side, at.tolist())
        return best

    def plan(t: int, side: int, at: list[int]) -> list[Step] | None:
        """One move per broker of the step (columns ``at``), each with its own partner: first
        one whose move is a count move, in the same rack, holding fewest of t (most when
        giving), leading fewest of t (most), then the emptiest (fullest) broker."""
        r, led = m[row[t]], lead[row[t]]
        if side > 0:  # a gives one to a broker that stays below t's max
            ok = (cnt < hi) & (r <= r.max() - 2)
            keys = [cnt, led, r, cnt >= lo]
        else:  # a takes one from a broker that stays above t's min
            ok = (cnt > lo) & (r >= r.min() + 2)
            keys = [-cnt, -led, -r, cnt <= hi]
        ok[at] = False
        # Partners in order of (a count move first, same rack first, keys[2], keys[1], keys[0],
        # column): the last three sorted once per step, the first two per broker of it.
        base = np.lexsort((cols, keys[0], keys[1], keys[2]))
        extra_move = 2 * keys[3][base].astype(np.int64)
        taken: set[int] = set()
        out = []
        for a in at:
            live = ok[base]
            cand = base[live]
            if not len(cand):
                return None
            order = cand[np.argsort(extra_move[live] + (rack[cand] != rack[a]), kind="stable")]
            found = None
            for j in order[:_TRIES].tolist():
                s, d = (brokers[a], brokers[j]) if side > 0 else (brokers[j], brokers[a])
                p = pick(t, s, d, taken)
                if p is not None:
                    found = (p, s, d)
                    ok[j] = False
                    taken.add(p)
                    break
            if found is None:
                return None
            out.append(found)
        return out

    heap = []
    for t in topics:
        price, _, _ = step(t)
        if price:
            heap.append((price, t))
    heapq.heapify(heap)
    while heap:
        price, t = heapq.heappop(heap)
        now, side, at = step(t)  # the steps of other topics change counts and budgets
        if not now:
            continue
        if now != price:
            heapq.heappush(heap, (now, t))
            continue
        moves = plan(t, side, at)
        if moves is None:
            continue
        x = sum(not free(s, d) for _, s, d in moves)
        if extra + x > budget:
            continue
        if not run.room_for_move(sum(st.size[p] for p, _, _ in moves), len(moves)):
            return
        extra += x
        i = row[t]
        for p, s, d in moves:
            st.move(p, s, d)
            moved(p, s, d)
            cs, cd = col[s], col[d]
            m[i, cs] -= 1
            m[i, cd] += 1
            cnt[cs] -= 1
            cnt[cd] += 1
            if st.replicas[p][0] == d:  # the leadership went along
                lead[i, cs] -= 1
                lead[i, cd] += 1
        price, _, _ = step(t)
        if price:
            heapq.heappush(heap, (price, t))


def _matrix(run: Run, brokers: Sequence[int], counts: Mapping[int, int],
            topics: list[int] | None = None) -> tuple[np.ndarray, dict[int, int], list[int]]:
    """A dict keyed by topic * nb + broker as a topics x brokers matrix of the group (one numpy
    pass), each topic's row in it, and the topics: the group's, or ``topics``."""
    st = run.state
    nb = st.nb
    keys = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    vals = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    column = np.full(nb, -1, dtype=np.int64)
    column[list(brokers)] = np.arange(len(brokers))
    t = keys // nb
    c = column[keys - t * nb]
    if topics is None:
        g = st.broker_group[brokers[0]]
        keep = (c >= 0) & (vals > 0) & (np.asarray(st.group_of_topic, dtype=np.int64)[t] == g)
        listed = np.unique(t[keep])
    else:
        listed = np.asarray(topics, dtype=np.int64)
        keep = (c >= 0) & (vals > 0) & np.isin(t, listed)
    m = np.zeros((len(listed), len(brokers)), dtype=np.int32)  # xxl: tens of thousands x 270
    m[np.searchsorted(listed, t[keep]), c[keep]] = vals[keep]
    out = listed.tolist()
    return m, {tt: i for i, tt in enumerate(out)}, out
