"""A second answer to "can these brokers be drained?", for clusters too large to backtrack.

An independent CP-SAT model, written from Kafka's rules and not from the planner's code: every
replica on a removed or dead broker moves to a live one, the partition keeps its replication
factor on distinct brokers, each rack holds at most the rack limit of it (or the start's
crowding, which a drain may keep), and each live broker stays within 80% of its disk and
network-in capacity, or, if it is over a limit at the start, receives nothing unless it ends
within them. It is looser than the planner on purpose: network out, replica counts and
leadership are not modelled, and needs are rounded down and room up. So "no" proves that no
drain plan exists; "yes" is for the plan's own check to confirm.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from ortools.sat.python import cp_model

from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.pools import PoolSet
from kafka_ops.testing.feasibility import allowed_brokers, pool_members, rack_key, rack_limit, replicas_of, stays

_MiB = 2**20


def drain_fits(cluster: ClusterModel, gone: set[int], others_move: bool, limit: float = 0.8,
               seconds: float = 60.0, pools: PoolSet | None = None, migrate: bool = True) -> bool | None:
    """Whether the replicas on ``gone`` and dead brokers fit on the live ones: only they
    moving, or (``others_move``) any replica moving to make room. None when undecided.
    Offline partitions stay, as partitions in flight do: no drain can copy them. With
    ``pools``, a migration instead: a partition with a replica outside its pool moves every
    such replica, and its dead ones, into the pool; the others keep their dead replicas
    (fix-offline's), and every replica that moves stays in its pool. With ``pools`` and not
    ``migrate``, a drain within the pools: the replicas on ``gone`` and dead brokers move, into
    their pool (a replica outside it may stay, none may be added), and any that moves to make
    room stays in its pool too."""
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive and b not in gone)
    m = cp_model.CpModel()
    start: Counter[tuple[int, int]] = Counter()  # (broker, 0 disk in MiB | 1 bytes in/s)
    kept: Counter[tuple[int, int]] = Counter()
    terms: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}
    arrivals: dict[int, list[cp_model.IntVar]] = {}
    for p in cluster:
        reps = replicas_of(p)
        needs = (p.size_bytes // _MiB, int(p.bytes_in_per_sec))
        for b in reps:
            for k in (0, 1):
                start[b, k] += needs[k]
        home = live if pools is None else [b for b in live if b in pool_members(cluster, pools, p.topic)]
        must = [b for b in reps if b not in (home if migrate else live)]
        if pools is not None and migrate and all(b in pool_members(cluster, pools, p.topic) for b in reps):
            must = []  # not migrating: its dead replicas are fix-offline's
        flexible = not stays(cluster, p) and (others_move or bool(must))
        # Moving others to make room: anything but a dead replica its partition may keep.
        stay = [b for b in reps if b not in must and (b not in live or not (flexible and others_move))]
        if not flexible:
            stay = list(reps)
        for b in stay:
            for k in (0, 1):
                kept[b, k] += needs[k]
        if len(stay) == len(reps):
            continue
        cap = max(rack_limit(cluster, home, len(reps)), max(Counter(rack_key(cluster, b) for b in reps).values()))
        # A drain within the pools may keep a live replica outside its pool where it is.
        places = home if migrate else [*home, *(b for b in reps if b in live and b not in home)]
        x = {b: m.new_bool_var(f"{p.tp}@{b}") for b in places if b not in stay}
        m.add(sum(x.values()) == len(reps) - len(stay))
        by_rack: dict[str, list[cp_model.IntVar]] = {}
        for b, v in x.items():
            by_rack.setdefault(rack_key(cluster, b), []).append(v)
            for k in (0, 1):
                terms.setdefault((b, k), []).append((needs[k], v))
            if b not in reps:
                arrivals.setdefault(b, []).append(v)
        stayed = Counter(rack_key(cluster, b) for b in stay)
        for rack, vs in by_rack.items():
            m.add(sum(vs) + stayed[rack] <= cap)
    within = {b: m.new_bool_var(f"within{b}") for b in live}  # b may receive only if it ends within
    for b, vs in arrivals.items():
        for v in vs:
            m.add_implication(v, within[b])
    for (b, k), on in terms.items():
        capacity = cluster.brokers[b].capacity
        total = (capacity.disk_bytes / _MiB, capacity.network_in_bytes_per_sec)[k]
        if total:
            load = sum(n * v for n, v in on)
            m.add(load <= int(max(limit * total, start[b, k]) - kept[b, k]) + 1)
            m.add(load <= int(limit * total - kept[b, k]) + 1).only_enforce_if(within[b])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        return False
    return True if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def drain_breaks(before: ClusterModel, gone: set[int], replicas: Mapping[TopicPartition, tuple[int, ...]],
                 pools: PoolSet | None = None) -> list[str]:
    """What a drain plan (``replicas``: the partitions it changes) broke. A changed partition
    keeps its replication factor on distinct live brokers, none removed, with no more
    replicas outside its pool and no more crowding of a rack than at the start (a drain may
    keep what the start broke: a rack crowded by hand, a replica left outside its pool)."""
    drained = ClusterModel([replace(b, alive=b.alive and b.id not in gone) for b in before.brokers.values()],
                           list(before))
    out = []
    for tp, new in replicas.items():
        old = before.partitions[tp].replicas
        pool = pools.pool_for_topic(tp.topic) if pools is not None else None
        members = pool.brokers if pool is not None else frozenset(before.brokers)
        allowed = allowed_brokers(drained, pools, tp.topic)
        crowding = [max(Counter(rack_key(drained, b) for b in reps).values()) for reps in (old, new)]
        if len(set(new)) != len(new) or len(new) != len(old):
            out.append(f"{tp}: {old} -> {new}")
        if any(not drained.brokers[b].alive for b in new):
            out.append(f"{tp}: a replica on a dead or removed broker")
        if stays(before, before.partitions[tp]):
            out.append(f"{tp}: changed while in flight or offline")
        if not {b for b in new if b not in members} <= {b for b in old if b not in members}:
            out.append(f"{tp}: more replicas outside its pool")
        if crowding[1] > max(rack_limit(drained, allowed, len(old)), crowding[0]):
            out.append(f"{tp}: {crowding[1]} replicas in one rack")
    return out
