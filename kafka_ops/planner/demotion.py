"""Demotion: the demoted brokers' leaderships handed to other replicas, within network-out limits.

A leader sends its bytes out plus one copy of its bytes in to each follower, so handing a
partition to a follower puts all of that on the follower's network out. Handed one at a time
to the follower leading least, a few heavy partitions could fill the one follower a later
partition needed (on 3,000 tiny clusters with network-out limits, 9 refusals of demotions
whose leaderships fit another way). The hand-off is therefore the greedy rule as the first
path of a depth-first search (backtrack.py): plans are unchanged where the greedy succeeds,
and a refusal means no choice of leaders fits, or names the partition that has no follower
with room at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_ops.errors import ValidationError
from kafka_ops.formatting import format_bytes
from kafka_ops.planner.backtrack import Exhausted, OutOfBudget, first_fit
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import CapacityGoal

_BUDGET = 200_000  # leaders tried before the search gives up


def hand_off_leadership(run: Run) -> None:
    """Every movable partition led by a demoted broker is led by another live, not demoted
    replica, each within its network-out limit; partitions with none are left (the mode
    warns about them). Raises ValidationError when no choice of leaders fits."""
    st = run.state
    capacity = CapacityGoal()
    limits = [capacity.limits(run, b)[2] for b in range(st.nb)]
    net_out, leaders = list(st.net_out), list(st.leaders)
    parts = [p for p in range(st.np) if run.partition_movable[p] and st.demoted[st.replicas[p][0]]
             and any(may_lead(run, b) for b in st.replicas[p])]

    def options(p: int) -> Iterator[int]:
        out = st.leader_out(p)
        room = [b for b in st.replicas[p][1:] if may_lead(run, b) and net_out[b] + out <= limits[b]]
        return iter(sorted(room, key=lambda b: (leaders[b], b)))

    def apply(p: int, b: int, sign: int) -> None:
        old, out = st.replicas[p][0], st.leader_out(p)
        net_out[old] -= sign * out
        net_out[b] += sign * out
        leaders[old] -= sign
        leaders[b] += sign

    try:
        chosen = first_fit(parts, options, apply, _BUDGET)
    except (Exhausted, OutOfBudget) as e:
        net_out = list(st.net_out)  # as they were: a partition no follower can take alone?
        for p in parts:
            if next(options(p), None) is None:
                raise ValidationError(f"demote: no replica of {st.tps[p]} that may lead has "
                                      f"network-out room for it: {_room(run, p, limits)}") from None
        verdict = (f"every one tried); most often {st.tps[e.partition]} found no replica with room"
                   if isinstance(e, Exhausted) else
                   f"none found within {_BUDGET:,} tries, so one may still exist); the search "
                   f"stalled at {st.tps[e.partition]}")
        raise ValidationError(
            f"demote: no choice of new leaders for the {len(parts)} partitions the demoted brokers "
            f"lead fits the network-out limits ({verdict}") from None
    if not run.room_for_leader_change(len(parts)):
        raise ValidationError(f"demote: the cap on leader changes leaves no room for the {len(parts)} "
                              f"leaderships the demoted brokers must hand off")
    for p, b in zip(parts, chosen, strict=True):
        st.make_leader(p, b)


def may_lead(run: Run, b: int) -> bool:
    st = run.state
    return st.eligible[b] and not st.demoted[b] and run.dst_ok[b]


def _room(run: Run, p: int, limits: list[float]) -> str:
    """Each replica that may lead p: what it sends now, and its limit."""
    st = run.state
    out = st.leader_out(p)
    each = ", ".join(f"broker {st.broker_ids[b]} sends {format_bytes(st.net_out[b])}/s of "
                     f"{format_bytes(limits[b])}/s" for b in st.replicas[p][1:] if may_lead(run, b))
    return f"it sends {format_bytes(out)}/s; {each}"
