"""Swaps of a leader for a follower that hand one leadership back, keeping leader counts.

The leader count goal runs with threshold 0: where the mean is a whole number every broker
holds exactly that many leaderships, and a later goal's swap must keep both roles. On a small
cluster the replicas that may cross between two racks can all be leaders on one side and
followers on the other (the rack repair and the count goal decide which): the disk and network
in goals then find no swap at all. A 6-broker cluster whose network skew the Spark analysis
measured ended disk at 1.054 and network in at 1.206 x mean, where leader counts of 4-7 let them
reach 1.008 and 1.037.

Such a swap passes a leadership from one broker to the other; a partition led by the receiver
with a replica on the giver hands one back. Three changes judged together: the leader count
goal sees no change, the leader load goals (if they veto) the sum of both.
"""

from __future__ import annotations

from typing import cast

from kafka_ops.planner.context import Move, Run
from kafka_ops.planner.trades import (
    BalanceGoal,
    BrokerReplicas,
    may_trade,
    mixed_roles,
    ranked_swaps,
)

Lead = tuple[int, int, int]  # (partition, old leader, new leader)
_HANDERS = 8  # partitions that could hand the leadership back, tried per swap


def handed_swap(run: Run, reps: BrokerReplicas, src: int, dst: int, delta: float, gap: float,
                least: float) -> tuple[tuple[Move, Move], Lead] | None:
    """The best swap (by ranked_swaps) of a leader for a follower between src and dst that
    the leader count goal refuses alone, with the leadership that hands it back."""
    allowed = mixed_roles(run, src, dst)
    handers = {(old, new): _handers(run, reps, old, new) for old, new in ((dst, src), (src, dst))}
    want = (not allowed[0] and bool(handers[dst, src]), not allowed[1] and bool(handers[src, dst]))
    if not any(want):
        return None
    st = run.state
    for p, q in ranked_swaps(run, reps, src, dst, delta, gap, least, False, False, want):
        a, b = (p, src, dst), (q, dst, src)
        if not may_trade(run, a, b):
            continue
        old, new = (dst, src) if st.replicas[p][0] == src else (src, dst)
        tried = 0
        for r in handers[old, new]:
            if r in (p, q):
                continue
            lead = (r, old, new)
            if accepts_with_lead(run, (a, b), lead):
                return (a, b), lead
            tried += 1
            if tried >= _HANDERS:
                break
    return None


def _handers(run: Run, reps: BrokerReplicas, old: int, new: int) -> list[int]:
    """Partitions led by ``old`` with a replica on ``new`` that may change leader, those whose
    topic's leaders stay as even first, then the lightest."""
    st = run.state
    if not run.room_for_leader_change() or not run.dst_ok[new]:
        return []
    nb, tl = st.nb, st.topic_leaders
    found = []
    for r in reps.on[old]:
        rs = st.replicas[r]
        if rs[0] == old and new in rs:
            t = st.topic[r] * nb
            worse = max(0, tl.get(t + new, 0) + 1 - (tl.get(t + old, 0) - 1))
            found.append((worse, st.bytes_in[r], r))
    found.sort()
    return [r for *_, r in found]


def accepts_with_lead(run: Run, moves: tuple[Move, Move], lead: Lead) -> bool:
    """Every veto accepts the two moves and the leadership change together: the leader load
    goals on the sum of their effects, the others each part on its own (their effects do not
    add up on one broker)."""
    st = run.state
    r, old, new = lead
    for g in run.vetoes:
        if getattr(g, "leader_only", None) is True:
            goal = cast(BalanceGoal, g)
            deltas: dict[int, float] = {}
            for p, src, dst in moves:
                x = goal.item_load(st, p, st.replicas[p][0] == src)
                deltas[src] = deltas.get(src, 0.0) - x
                deltas[dst] = deltas.get(dst, 0.0) + x
            x = goal.item_load(st, r, True)
            deltas[old] = deltas.get(old, 0.0) - x
            deltas[new] = deltas.get(new, 0.0) + x
            if not goal.accepts_deltas(run, deltas):
                return False
        elif not (g.accepts(run, moves) and g.accepts_leadership(run, r, old, new)):
            return False
    return True
