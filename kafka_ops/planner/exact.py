"""The hard goals solved exactly, for the starts the greedy repair cannot untangle.

The greedy hard goals move one replica at a time; when racks, pools and a tight replica
limit per broker interlock, the only way out can be a chain of moves through several
brokers, which a one-step search never finds. Then the planner starts over from the original
assignment and solves placement as a minimum-cost flow:

    source -> partition (RF) -> (partition, rack) (rack limit) -> broker (1, cost 0 if the
    partition is already there, else 1) -> sink (the broker's room under the replica limit)

OR-Tools' min-cost flow finds the maximum flow at minimum cost, so the result keeps as many
replicas in place as any plan can (successive cheapest paths in Python took 145 s a solve on
15 brokers and 4,000 partitions, one path per replica to place). If the flow cannot place every
replica, no plan exists and the error says which rule ran out of room. Disk and network
capacity are left to the greedy capacity goal afterwards (bin packing has no flow model), and
on small starts where that fails, to an exhaustive search (packing.py).
"""

from __future__ import annotations

import numpy as np
from ortools.graph.python import min_cost_flow

from kafka_ops.errors import ValidationError
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import rack_limit


def solve_hard_goals(run: Run, avoid: frozenset[int] = frozenset()) -> None:
    """Reset the state and place every movable partition by min-cost flow (see module doc).

    Brokers in ``avoid`` (over a disk or network limit) get no movable replicas at all.
    """
    st = run.state
    st.reset()
    limit = run.options.max_replicas_per_broker
    room = [0] * st.nb
    for b in range(st.nb):
        room[b] = limit if limit is not None else st.np  # st.np: more than any broker can hold
        if b in avoid:
            room[b] = 0
    parts = [p for p in range(st.np) if run.partition_movable[p]]
    for p in range(st.np):
        if not run.partition_movable[p]:
            for b in st.replicas[p]:
                room[b] -= 1
    # Nodes: the sink, the source, one per broker, then per partition its node and one per
    # rack it may use. Arcs are added in that order; their capacities and costs in lists.
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []
    costs: list[int] = []

    def arc(u: int, v: int, cap: int, cost: int) -> int:
        tails.append(u)
        heads.append(v)
        caps.append(cap)
        costs.append(cost)
        return len(tails) - 1

    sink, source, nodes = 0, 1, 2 + st.nb
    for b in range(st.nb):
        if st.eligible[b] and room[b] > 0:
            arc(2 + b, sink, room[b], 0)
    need = 0
    slots: dict[tuple[int, int], int] = {}  # (partition, broker) -> arc
    for p in parts:
        rf = len(st.replicas[p])
        need += rf
        pn, nodes = nodes, nodes + 1
        arc(source, pn, rf, 0)
        lim = rack_limit(run, p)
        rack_node: dict[int, int] = {}
        for b in st.groups[st.group_of(p)].brokers:
            here = b in st.replicas[p]
            if not (st.eligible[b] and room[b] > 0) or not (here or run.dst_ok[b]):
                continue
            r = st.rack[b]
            if r not in rack_node:
                rack_node[r], nodes = nodes, nodes + 1
                arc(pn, rack_node[r], lim, 0)
            slots[p, b] = arc(rack_node[r], 2 + b, 1, 0 if here else 1)
    flow = min_cost_flow.SimpleMinCostFlow()
    if tails:
        flow.add_arcs_with_capacity_and_unit_cost(
            np.asarray(tails, dtype=np.int32), np.asarray(heads, dtype=np.int32),
            np.asarray(caps, dtype=np.int64), np.asarray(costs, dtype=np.int64))
    flow.set_node_supply(source, need)
    flow.set_node_supply(sink, -need)
    if need and (flow.solve_max_flow_with_min_cost() != flow.OPTIMAL or flow.maximum_flow() < need):
        raise ValidationError(_why(run, need, room))
    used = flow.flows(np.fromiter(slots.values(), dtype=np.int32, count=len(slots))) if slots else []
    placed: dict[int, set[int]] = {}
    for (p, b), f in zip(slots, used, strict=True):
        if f:
            placed.setdefault(p, set()).add(b)
    for p in parts:
        new = placed.get(p, set())
        old = st.replicas[p]
        gone = [b for b in old if b not in new]
        came = sorted(b for b in new if b not in old)
        for src, dst in zip(gone, came, strict=True):
            st.move(p, src, dst)


def _why(run: Run, need: int, room: list[int]) -> str:
    st = run.state
    limit = run.options.max_replicas_per_broker
    live = sum(max(0, room[b]) for b in range(st.nb) if st.eligible[b])
    if limit is not None and live < need:
        return (f"capacity: max_replicas_per_broker={limit} leaves room for {live} replicas on "
                f"the live brokers, {need} must be placed")
    alone = _alone(run, room)
    if alone:
        return alone
    return ("capacity and rack_awareness together leave no placement: the brokers of the racks "
            f"with room have too little room under max_replicas_per_broker={limit} for the "
            "replicas that must go there")


def _alone(run: Run, room: list[int]) -> str:
    """Why the first movable partition that has no placement even alone has none, or "".

    With a mode's destinations (add-brokers: the new brokers), a partition whose replica must
    leave a dead broker may find every destination in a rack it already fills: the flow then
    fails for it alone, whatever the replica limit.
    """
    st, ids = run.state, run.state.broker_ids
    scoped = not all(run.dst_ok)
    for p in range(st.np):
        if not run.partition_movable[p]:
            continue
        reps, lim = st.replicas[p], rack_limit(run, p)
        group = st.groups[st.group_of(p)]
        per_rack: dict[int, int] = {}
        for b in group.brokers:
            if st.eligible[b] and room[b] > 0 and (b in reps or run.dst_ok[b]):
                per_rack[st.rack[b]] = per_rack.get(st.rack[b], 0) + 1
        fit = sum(min(lim, n) for n in per_rack.values())
        if fit >= len(reps):
            continue
        must = [b for b in reps if not st.eligible[b]]
        goal = "broker_exclusions" if must else "rack_awareness"
        where = (f" of those it holds or this plan may add replicas to "
                 f"({', '.join(str(ids[b]) for b in range(st.nb) if run.dst_ok[b])})" if scoped else "")
        leave = "".join(f"; its replica on broker {ids[b]}, which is "
                        f"{'excluded' if st.excluded[b] else 'dead'}, must leave" for b in must)
        hint = ("" if not scoped else "; fix-offline places it on any live broker" if must
                else "; a rebalance may use every broker")
        return (f"{goal}: {st.tps[p]} has no placement: it has {len(reps)} replicas, and only {fit} "
                f"fit on distinct live brokers{where} in {group.name!r} within the rack limit of "
                f"{lim} a rack{leave}{hint}")
    return ""
