"""Replicas that must leave their brokers, packed largest first against the loads they leave.

The pool-membership and broker-exclusion goals move one replica at a time, in partition
order, to the least loaded broker that takes it now. A pool's brokers still hold other pools'
replicas that leave later in that order, so they look full; and the small partitions placed
first fill the room a large one needs. Pooled fuzz seed 12 (benchmarks/fuzz_grown.py --pools):
a pool of eight brokers at 77% of its disk limits, every topic outside it at the start; the
greedy found no broker for a partition of 0.45 x a broker's limit, and CP-SAT's repair that
took over ran 39 s of the plan's 46.

Here, where that greedy repair failed, every replica that must leave (from a dead, excluded
or removed broker, or outside its pool) gets its broker in one pass before anything moves:
the largest partition first, onto the broker of its pool with the most room left once the
replicas leaving it are gone and those already given to it have come (worst fit, within the
rack limit first). Room is the least spare share of the broker's limits: disk, network in,
and network out for a leader. The moves then run in turns, each as soon as its broker has the
room; a move still refused after that goes to the least loaded broker that takes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import HardGoal, rack_limit, relocate


def pack_leaving(run: Run, capacity: HardGoal, limits: Sequence[tuple[float, float, float, float]],
                 leave: Callable[[int, int], bool] | None = None) -> bool:
    """Reset the state and move every replica that must leave to a broker chosen as in the
    module doc; True when none is left where it may not stay. ``leave(p, b)``: the replicas
    that must leave (a repair mode's); by default those on a broker that may not hold them."""
    st = run.state
    st.reset()
    must = leave or (lambda p, b: not st.eligible[b] or b not in st.in_group[st.group_of(p)])
    leaving = [(p, b) for p in range(st.np) if run.partition_movable[p] for b in st.replicas[p] if must(p, b)]
    if not leaving:
        return False
    loads = [list(st.disk), list(st.net_in), list(st.net_out)]
    for p, b in leaving:
        for k, need in enumerate(_needs(run, p, b)):
            loads[k][b] -= need
    moves: list[tuple[int, int, int]] = []
    taken: dict[int, list[int]] = {}  # partition -> the brokers it keeps or was given
    for p, src in sorted(leaving, key=lambda m: (-st.size[m[0]], m)):
        keep = taken.setdefault(p, [b for b in st.replicas[p] if not must(p, b)])
        racks = Counter(st.rack[b] for b in keep)
        needs = _needs(run, p, src)
        limit = rack_limit(run, p)
        best = None
        for b in st.groups[st.group_of(p)].brokers:
            if b in keep or not st.eligible[b] or not run.dst_ok[b] or must(p, b):
                continue
            room = min(1.0 - (load[b] + need) / limits[b][k]
                       for k, (load, need) in enumerate(zip(loads, needs, strict=True)))
            key = (racks[st.rack[b]] >= limit, -room, st.count[b], b)
            if best is None or key < best:
                best = key
        if best is None:
            return False
        dst = best[-1]
        keep.append(dst)
        for k, need in enumerate(needs):
            loads[k][dst] += need
        moves.append((p, src, dst))
    while moves:
        left = [m for m in moves if not run.try_move(*m, retarget=True)]
        if len(left) == len(moves):
            break
        moves = left
    # relocate may make room by moving another replica, one that was to leave too
    # (migrate-pool on grown seed 47).
    return all(src not in st.replicas[p] or relocate(run, capacity, p, src, required=False)
               for p, src, _ in moves)


def _needs(run: Run, p: int, b: int) -> tuple[float, float, float]:
    """Disk, network in and network out of p's replica on b (a leader's out goes with it)."""
    st = run.state
    return st.size[p], st.bytes_in[p], st.leader_out(p) if st.replicas[p][0] == b else 0.0
