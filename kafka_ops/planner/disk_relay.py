"""A replica-load trade for a broker pinned at the disk goal's lower bound, repaid by a disk swap.

The network-in goal runs after the disk goal and keeps every broker's disk within its bounds.
A broker the disk goal left at its lower bound whose hot replicas are also its large ones can
then shed network in only by taking a larger, colder replica in return, and there may be none:
on medium seed 132 (never swept while the goals were tuned) broker 13 ended network in at
1.0605 x the mean, disk 0.9752 (bound 0.975), and a brute-force search over every swap with every
lighter broker found none that keeps both disks within the bounds. On crowded-xl seed 10 the two
holders of a partition worth 0.40 x a broker's mean network in ended at 1.124, their disks at
the bound. Two swaps do it: the network-in trade with the broker's disk limit widened by
_WIDEN, then a swap with another broker that brings its disk back within the limit (a larger
replica for a smaller one) without taking back what the first swap shed. Without that second
swap the first is not made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kafka_ops.planner.context import Move, Run
from kafka_ops.planner.trades import BalanceGoal, BrokerReplicas, can_trade, vetoing

_WIDEN = 0.02  # x the mean disk: how far below its limit the first swap may take the broker's disk
_NEAR = 0.002  # x the mean disk: a broker this near its disk limit counts as pinned there
_PARTNERS = 8  # brokers weighed for the repaying swap
_TAKERS = 8  # lightest brokers of w's rack, and of all, weighed for the first trade
_CELLS = 2_000_000  # replica pairs weighed per partner at most
_BUDGET = 32  # relays tried per goal run and group: a relay is weighed only for a stuck broker
_TRY = 8  # repaying swaps put to the vetoes, those giving back the least load first

Trade = Callable[[Sequence[tuple[int, int, float]]], tuple[Move, ...] | None]
Apply = Callable[[Sequence[Move]], None]


def disk_relay(goal: BalanceGoal, run: Run, reps: BrokerReplicas, trade: Trade, apply: Apply, w: int,
               brokers: Sequence[int]) -> tuple[Move, ...] | None:
    """For w above ``goal``'s bound with its disk at the disk goal's lower limit: a trade of
    ``goal``'s load (``trade``, searched with w's disk limit widened), then a disk swap that
    brings w's disk back within its limit; None if either is missing. ``apply`` makes moves
    (and takes them back) as a trial."""
    disk = vetoing(run, "disk")
    key = (f"disk_relay:{goal.name}", reps.g)
    budget = run.memo.get(key, _BUDGET)
    if disk is None or goal.resource == "disk" or budget <= 0:
        return None
    st = run.state
    disk_mean = sum(st.disk[b] for b in brokers) / len(brokers)
    d_lo, _ = disk.limits(run, reps.g, w)
    if st.disk[w] - d_lo > _NEAR * disk_mean:
        return None
    run.memo[key] = budget - 1
    load = st.load(goal.resource)
    _, hi = goal.bounds(run, reps.g)
    mean = sum(load[b] for b in brokers) / len(brokers)
    rack = st.rack
    light = [d for d in sorted(brokers, key=lambda b: (load[b], b)) if load[d] < hi]
    takers = dict.fromkeys([*[d for d in light if rack[d] == rack[w]][:_TAKERS], *light[:_TAKERS]])
    pairs = [(w, d, min(load[w] - mean, hi - load[d])) for d in takers]
    run.relaxed, run.relax_slack = w, {"disk": _WIDEN * disk_mean}
    try:
        first = trade(pairs)
    finally:
        run.relaxed, run.relax_slack = -1, {}
    if first is None:
        return None
    before = load[w]
    apply(first)
    try:
        # What the relay must shed at least: w's excess over the bound, or a quarter of what
        # the trade shed (a relay costs four moves: no crawling by crumbs).
        second = _repay(goal, run, reps, w, brokers, before - min(before - hi, (before - load[w]) / 4), hi)
    finally:
        apply(tuple((p, b, a) for p, a, b in reversed(first)))
    return (*first, *second) if second is not None else None


def _repay(goal: BalanceGoal, run: Run, reps: BrokerReplicas, w: int, brokers: Sequence[int],
           below: float, hi: float) -> tuple[Move, Move] | None:
    """A swap of a replica on w for a larger one on another broker that brings w's disk back
    within the disk goal's limits, leaves w's ``goal`` load below ``below`` and the partner's
    within ``hi`` (or no higher), keeps both leader counts (a leader for a leader), and passes
    every veto; the one giving back the least load, then copying the fewest bytes."""
    st = run.state
    disk = vetoing(run, "disk")
    assert disk is not None
    g = reps.g
    load = st.load(goal.resource)
    w_lo, w_hi = disk.limits(run, g, w)
    need, room = w_lo - st.disk[w], w_hi - st.disk[w]
    spare = {e: st.disk[e] - disk.limits(run, g, e)[0] for e in brokers if e != w}
    rack = st.rack
    # w's rack first (any replica may move inside it), the most disk to spare first.
    for e in sorted(spare, key=lambda e: (rack[e] != rack[w], -spare[e], e))[:_PARTNERS]:
        top = min(room, spare[e])
        if top < need:
            continue
        pw, xw, sw, lw, cw, _ = reps.toward(w, e)
        pe, xe, se, le, ce, _ = reps.toward(e, w)
        if not len(pw) or not len(pe):
            continue
        if len(pw) * len(pe) > _CELLS:  # w's smallest replicas, for the partner's coldest
            k = max(1, _CELLS // max(len(pw), len(pe)))
            iw, ie = np.argsort(sw, kind="stable")[:k], np.argsort(xe, kind="stable")[:k]
            pw, xw, sw, lw, cw = (a[iw] for a in (pw, xw, sw, lw, cw))
            pe, xe, se, le, ce = (a[ie] for a in (pe, xe, se, le, ce))
        grow = se[None, :] - sw[:, None]  # w's disk change
        rise = xe[None, :] - xw[:, None]  # w's load change (the partner's: the opposite)
        partner_top = max(hi, load[e])
        ok = ((grow >= need) & (grow <= top) & (load[w] + rise < below)
              & (load[e] - rise <= partner_top) & (lw[:, None] == le[None, :]))
        if not ok.any():
            continue
        i, j = np.nonzero(ok)
        cost = cw[i] + ce[j]
        for k in np.lexsort((cost, rise[i, j]))[:_TRY].tolist():
            p, q = int(pw[i[k]]), int(pe[j[k]])
            give, take = (p, w, e), (q, e, w)
            if can_trade(run, give, take):
                return give, take
    return None
