"""Capacity solved exactly, on the small starts where bin packing binds.

The capacity goal relieves a broker one replica at a time, largest first, onto the roomiest
broker: the greedy rule of bin packing. When a few large partitions fill brokers of a few
GiB, that can paint it into a corner another order avoids (a 2 GiB replica sent to one of the
three brokers with room for a 3 GiB one, and then a partition of two 3 GiB replicas has only
one broker left in another rack), and the planner refused about one in 200 of the tiny tight
clusters that have a plan. Then every assignment is tried, depth first, largest partition
first, each partition's broker sets in the order that keeps most replicas in place: the
first that completes is taken. A budget keeps this to small starts; past it the greedy error
stands. When the search ends without one, no plan exists, and the error names the partition
that no way of placing the larger ones left room for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from math import comb

from kafka_ops.errors import ValidationError
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import CapacityGoal, rack_limit

_MOST_PARTITIONS = 1000  # beyond, even listing the candidate sets costs more than it can save
Loads = list[list[float]]  # per broker: disk, network in, network out, replica count


class _Budget(Exception):
    """The search tried more broker sets than its budget allows."""


def pack_exactly(run: Run, capacity: CapacityGoal, budget: int = 200_000) -> bool:
    """Reset the state and place every movable partition within all limits, or raise.

    True when a placement was found (the state holds it); False when the budget ran out
    first, or none was found but a network-out limit leaves it unproven (another leader could
    relieve one): the state is reset and the caller's greedy error stands. Raises
    ValidationError when every assignment was tried and none fits.
    """
    st = run.state
    st.reset()
    limits = [capacity.limits(run, b) for b in range(st.nb)]
    loads: Loads = [[0.0, 0.0, 0.0, 0.0] for _ in range(st.nb)]
    parts = []
    for p in range(st.np):
        if run.partition_movable[p]:
            parts.append(p)
            continue
        for i, b in enumerate(st.replicas[p]):
            _add(loads[b], _need(run, p, i == 0), 1)
    if len(parts) > _MOST_PARTITIONS:
        return False
    parts.sort(key=lambda p: (-st.size[p], -st.bytes_in[p], p))
    usable = [_usable(run, p, limits) for p in parts]
    sets = sum(comb(len(ok), len(st.replicas[p])) for p, ok in zip(parts, usable, strict=True))
    if sets > budget:
        return False
    choices = [_candidates(run, p, ok) for p, ok in zip(parts, usable, strict=True)]
    chosen: list[tuple[int, ...]] = []
    deepest = [0]
    left = [budget]

    def place(i: int) -> bool:
        deepest[0] = max(deepest[0], i)
        if i == len(parts):
            return True
        p = parts[i]
        for brokers in choices[i]:
            left[0] -= 1
            if left[0] < 0:
                raise _Budget
            needs = list(zip(brokers, (_need(run, p, k == 0) for k in range(len(brokers))), strict=True))
            if any(not _fits(loads[b], need, limits[b]) for b, need in needs):
                continue
            for b, need in needs:
                _add(loads[b], need, 1)
            chosen.append(brokers)
            if place(i + 1):
                return True
            chosen.pop()
            for b, need in needs:
                _add(loads[b], need, -1)
        return False

    try:
        found = place(0)
    except _Budget:
        return False
    if not found:
        if any(lim[2] != float("inf") for lim in limits):
            return False  # another leader could relieve network out: not proven impossible
        raise ValidationError(_why(run, parts[deepest[0]], deepest[0], len(parts)))
    for p, brokers in zip(parts, chosen, strict=True):
        old = st.replicas[p]
        gone = [b for b in old if b not in brokers]
        came = [b for b in brokers if b not in old]
        for src, dst in zip(gone, came, strict=True):
            st.move(p, src, dst)
    return True


def _usable(run: Run, p: int, limits: Sequence[tuple[float, ...]]) -> list[int]:
    """The brokers of p's pool that may hold one of its replicas, each on its own: where it
    is, then the roomiest."""
    st = run.state
    old = st.replicas[p]
    need = _need(run, p, False)
    ok = [b for b in st.groups[st.group_of(p)].brokers
          if st.eligible[b] and (run.dst_ok[b] or b in old)
          and all(n <= lim for n, lim in zip(need, limits[b], strict=True))]
    return sorted(ok, key=lambda b: (b not in old, -limits[b][0], b))


def _candidates(run: Run, p: int, ok: Sequence[int]) -> list[tuple[int, ...]]:
    """The sets of ``ok`` brokers within the rack limit that may hold p's replicas, as the
    replica list they make (kept replicas in their places, arrivals in the vacated ones: the
    leader is whoever ends up first), most replicas kept first."""
    st = run.state
    old = st.replicas[p]
    cap = rack_limit(run, p)
    sets = []
    for brokers in combinations(ok, len(old)):
        if max(Counter(st.rack[b] for b in brokers).values()) > cap:
            continue
        came = iter(b for b in brokers if b not in old)
        sets.append(tuple(b if b in brokers else next(came) for b in old))
    sets.sort(key=lambda s: sum(b not in old for b in s))  # stable: roomiest first within
    return sets


def _need(run: Run, p: int, leads: bool) -> tuple[float, float, float, float]:
    st = run.state
    return (st.size[p], st.bytes_in[p], st.leader_out(p) if leads else 0.0, 1.0)


def _fits(load: list[float], need: Sequence[float], limit: Sequence[float]) -> bool:
    return all(v + n <= lim for v, n, lim in zip(load, need, limit, strict=True))


def _add(load: list[float], need: Sequence[float], sign: int) -> None:
    for i, n in enumerate(need):
        load[i] += sign * n


def _why(run: Run, p: int, larger: int, parts: int) -> str:
    st = run.state
    gib = 1024**3
    before = ("" if larger == 0 else "whichever way the larger partition is placed, " if larger == 1
              else f"whichever way the {larger} larger partitions are placed, ")
    return (f"capacity: no assignment of the {parts} movable partitions fits the live brokers' "
            f"limits (disk, network in, replicas per broker) within rack_awareness and the pools "
            f"(every one tried): {before}{st.tps[p]} ({st.size[p] / gib:.1f} GiB, "
            f"{st.bytes_in[p]:.0f} B/s in) finds no {len(st.replicas[p])} brokers with room "
            f"(limits are capacity x capacity_threshold); add brokers or raise the limits")
