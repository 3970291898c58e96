"""The leader-load goals' loop (network out, leader bytes-in) and its last resort, leader replica swaps.

Leadership changes alone cannot always even out a leader load. On crowded-xl seed 6, 20
partitions of one write-heavy RF-2 topic each carry 0.43-0.78x a broker's mean leader bytes-in,
and the brokers leading them sit at the network-out goal's lower bound: each must give leader
bytes-in and keep its network out, and few of its followers can take such a partition. The
trades of trades.py ended the highest at 1.134x the mean (an LP over leadership alone found no
integer point at 1.10 in 240 s). A swap of two leader replicas carries a hot leadership to any
broker with room, not only to one of the partition's followers: w's leader replica of p goes to
broker d, d's leader replica of q comes to w. Both brokers keep their replica and leader counts,
and the network-out, network-in and disk goals' room is checked on both before the vetoes are
asked. It runs only where the leadership trades are stuck, so it moves few replicas: seven on
that cluster, which it takes to 1.10. The topic leader goal, last in priority, pays for it there:
topics with leaders over one apart 194 -> 255 (the earlier goals' plans differ from then on),
206 once it may widen a pinned broker's limits for a fix it repairs after (topic_relax.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kafka_ops.planner.context import Run
from kafka_ops.planner.trades import (
    _TRY,
    BalanceGoal,
    LeaderLoads,
    can_trade,
    leader_relay,
    leader_swap,
    load_room,
    trade_cost,
    vetoing,
)

_HOT = 16  # the heaviest leaderships on the giving side weighed ...
_SLICE = 2048  # ... each against this many of the other side's


def balance_leader_load(goal: BalanceGoal, run: Run, g: int) -> None:
    """Even out a leader load (network out, leader bytes-in), by moving leadership first.

    Single transfers where the leader count goal allows them (from a broker at its upper count
    bound to one at its lower), else leadership trades between two brokers (leader_swap), else
    two transfers through w (leader_relay), else a swap of two leader replicas
    (leader_replica_swap). The leader bytes-in goal gives no broker a leadership of a topic it
    leads its share of already (LeaderLoads.piles); brokers stuck so try again allowed one more.
    """
    st = run.state
    load = st.load(goal.resource)
    brokers = run.group_brokers(g)
    members = set(brokers)
    mean = sum(load[b] for b in brokers) / len(brokers)
    loads = LeaderLoads(goal, run, g, len(brokers))
    on = loads.on
    lc = vetoing(run, "leaders")
    stuck: set[int] = set()
    while True:
        if (worst := goal._worst(run, g, stuck)) is None:
            if loads.crowd != 0 or not stuck:
                return
            loads.crowd, stuck = 1, set()
            continue
        w, above = worst
        if _leader_transfer(run, loads, lc, w, above, members, on, load, mean):
            continue
        bounds = goal.bounds(run, g)
        if not (leader_swap(run, loads, w, above, members, load, mean, bounds)
                or leader_relay(run, loads, lc, w, above, load, mean, bounds)
                or leader_replica_swap(run, loads, w, above, load, mean, bounds)):
            stuck.add(w)
        if run.capped:
            return


def _leader_transfer(run: Run, loads: LeaderLoads, lc: BalanceGoal | None, w: int, above: bool,
                     members: set[int], on: list[list[int]], load: Sequence[float],
                     mean: float) -> bool:
    """One leadership transfer off (or onto) w that the leader counts allow; True if made."""
    st = run.state
    leaders = st.leaders
    llo, lhi = (lc.bounds(run, st.broker_group[w])
                if lc is not None else (-math.inf, math.inf))
    if (leaders[w] - 1 < llo) if above else (leaders[w] + 1 > lhi):
        return False
    found: list[tuple[float, int, int]] = []
    for p in on[w]:
        reps = st.replicas[p]
        if above != (reps[0] == w) or not run.partition_movable[p]:
            continue
        x = loads.load[p]
        for b in (reps[1:] if above else reps[:1]):
            if b not in members or ((leaders[b] + 1 > lhi) if above else (leaders[b] - 1 < llo)):
                continue
            heavy, light = (w, b) if above else (b, w)
            if not 0 < x < load[heavy] - load[light] or loads.piles(st, p, light):
                continue
            delta = min(abs(load[w] - mean), abs(load[b] - mean)) or x
            found.append((abs(x - delta), p, light))
    found.sort()
    for _, p, light in found[:_TRY]:
        if run.try_lead(p, light):
            loads.changed(st, p)
            return True
    return False


def leader_replica_swap(run: Run, loads: LeaderLoads, w: int, above: bool, load: Sequence[float],
                        mean: float, bounds: tuple[float, float]) -> bool:
    """Swap two leader replicas between a heavier and a lighter broker, one of them w; True if
    made. p (led by the heavier) goes to the lighter, which leads it there; q comes back.

    Weighs the _HOT heaviest leaderships of the giving side (w above its bound, else every
    heavier partner) against the other side's leaderships lighter by less than twice w's
    distance from the mean: the load moved, L(p) - L(q), must narrow the pair's gap without
    overshooting that distance by more than it closes, keep the partner within bounds, and
    leave both brokers' network out, network in and disk where the goals already run allow
    (as leader_relay's filter does). The swap moving the most is made first the vetoes accept.
    """
    st = run.state
    if run.leadership_only:
        return False
    g = st.broker_group[w]
    lo, hi = bounds
    loadv = np.asarray(load, float)
    other = loads.member & np.asarray(run.dst_ok, bool) & np.asarray(st.eligible, bool)
    other &= (loadv < min(hi, load[w])) if above else (loadv > max(lo, load[w]))
    other[w] = False
    lead, movable = loads.leader, loads.movable & loads.in_group
    mine = (lead == w) & movable
    theirs = other[np.maximum(lead, 0)] & (lead >= 0) & movable
    ps, qs = (mine, theirs) if above else (theirs, mine)
    up, down = loads.by_load()
    ps, qs = down[ps[down]][:_HOT], up[qs[up]]  # the heaviest givers; the takers by load
    if not len(ps) or not len(qs):
        return False
    x_of = loads.arr
    excess = (load[w] - mean) if above else (mean - load[w])
    # Per p, the q whose trade moves between 0 and twice the excess (past that it overshoots
    # more than it closes): a slice of the other side.
    xq = x_of[qs]
    first = np.searchsorted(xq, x_of[ps] - 2 * excess, "left")
    last = np.searchsorted(xq, x_of[ps], "right")
    if not (last > first).any():
        return False
    # ... at most _SLICE of each slice, evenly spaced over it (a light p's slice is nearly the
    # whole side: 1.8 million pairs a search on crowded-xl seed 6, 240 ms; the trades the other
    # goals allow are spread over it, not nearest the ideal load).
    size = np.maximum(last - first, 0)
    take = np.minimum(size, _SLICE)
    gives = np.repeat(ps, take)
    step = np.concatenate([np.arange(k) * m // max(k, 1) for k, m in zip(take.tolist(), size.tolist(), strict=True)])
    takes = qs[np.repeat(first, take) + step]
    heavy, light = lead[gives], lead[takes]
    x = x_of[gives] - x_of[takes]  # what the heavier gives
    ok = (x > 0) & (x < np.abs(loadv[heavy] - loadv[light]))
    value = np.where(x <= excess, x, 2 * excess - x)
    ok &= value > 0
    ok &= (loadv[light] + x <= hi) if above else (loadv[heavy] - x >= lo)
    for resource, per_partition in loads.sides(st):
        if (slack := load_room(run, resource, g, loads.resource)) is None:
            continue
        fall, rise = slack
        dh = per_partition[takes] - per_partition[gives]  # the heavier's change
        ok &= (dh >= fall[heavy]) & (dh <= rise[heavy]) & (-dh >= fall[light]) & (-dh <= rise[light])
    found = np.flatnonzero(ok)
    if not len(found):
        return False
    best = found[np.argsort(-value[found], kind="stable")[:4 * _TRY]]
    for p, q in zip(gives[best].tolist(), takes[best].tolist(), strict=True):
        h, lt = int(lead[p]), int(lead[q])
        a, b = (p, h, lt), (q, lt, h)
        if loads.piles(st, p, lt) or loads.piles(st, q, h) or not can_trade(run, a, b):
            continue
        n, size = trade_cost(st, (a, b))
        if (n > 0 or size > 0) and not run.room_for_move(size, max(0, n)):
            return False
        st.move(*a)
        st.move(*b)
        loads.moved(st, (a, b))
        return True
    return False

