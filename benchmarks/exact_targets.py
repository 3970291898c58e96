"""Whether a load target of issue 9 can be met at all on a small cluster: CP-SAT, independent of
the planner (it shares no code with kafka_ops.planner; the rack limit comes from the testing
oracle).

plan_metrics' floors are single-partition bounds ("one partition is larger than a broker's
fair share"): on a cluster of 6-12 brokers and 40-300 partitions most misses are not explained
by them, and most are not attainable either. This model decides it: every partition's replicas
and leader placed at once, on distinct live brokers within the rack rule and the brokers'
capacity (80%, the planner's default), replica and leader counts within one of each other, and
the one load target asked about (with, if asked, the loads of the goals before it no worse than
a plan left them). Moves are free here: it says what the loads allow, not what a plan of few
moves reaches.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

from ortools.sat.python import cp_model

from kafka_ops.model import ClusterModel
from kafka_ops.testing.feasibility import rack_key, rack_limit

TARGETS = {"disk": 1.03, "network_in": 1.05, "network_out": 1.05, "leader_bytes_in": 1.10}
_UNIT = {"disk": 2**20}  # disk in MiB, rates in bytes/s


def attainable(cluster: ClusterModel, target: str, earlier: Mapping[str, float] | None = None,
               seconds: float = 10.0) -> bool | None:
    """True / False when decided, None when the time ran out first. ``earlier``: max / mean
    limits on other loads that must hold too (the goals before ``target`` no worse than a
    plan left them)."""
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive)
    n = len(live)
    racks: dict[str, list[int]] = defaultdict(list)
    for b in live:
        racks[rack_key(cluster, b)].append(b)
    m = cp_model.CpModel()
    terms: dict[str, dict[int, list[tuple[int, cp_model.IntVar]]]] = {
        r: defaultdict(list) for r in ("disk", "network_in", "network_out", "leader_bytes_in", "count", "leaders")}
    totals: dict[str, int] = defaultdict(int)
    for p in cluster:
        rf = len(p.replicas)
        limit = rack_limit(cluster, live, rf)
        on = {b: m.new_bool_var("") for b in live}
        leads = {b: m.new_bool_var("") for b in live}
        m.add(sum(on.values()) == rf)
        m.add_exactly_one(leads.values())
        for b in live:
            m.add_implication(leads[b], on[b])
        for members in racks.values():
            if len(members) > limit:
                m.add(sum(on[b] for b in members) <= limit)
        size = p.size_bytes // _UNIT["disk"]
        bytes_in = round(p.bytes_in_per_sec)
        out = round(p.bytes_out_per_sec + p.bytes_in_per_sec * (rf - 1))
        for b in live:
            terms["disk"][b].append((size, on[b]))
            terms["network_in"][b].append((bytes_in, on[b]))
            terms["network_out"][b].append((out, leads[b]))
            terms["leader_bytes_in"][b].append((bytes_in, leads[b]))
            terms["count"][b].append((1, on[b]))
            terms["leaders"][b].append((1, leads[b]))
        totals["disk"] += size * rf
        totals["network_in"] += bytes_in * rf
        totals["network_out"] += out
        totals["leader_bytes_in"] += bytes_in
        totals["count"] += rf
        totals["leaders"] += 1

    def load(r: str, b: int) -> cp_model.LinearExprT:
        return sum(w * x for w, x in terms[r][b])

    for b in live:
        for r in ("count", "leaders"):
            m.add(load(r, b) >= totals[r] // n)
            m.add(load(r, b) <= -(-totals[r] // n))
        for r, limit in {**(earlier or {}), target: TARGETS[target]}.items():
            m.add(load(r, b) <= math.floor(totals[r] / n * limit))
        cap = cluster.brokers[b].capacity
        for r, limit_bytes, unit in (("disk", cap.disk_bytes, _UNIT["disk"]),
                                     ("network_in", cap.network_in_bytes_per_sec, 1),
                                     ("network_out", cap.network_out_bytes_per_sec, 1)):
            if limit_bytes:
                m.add(load(r, b) <= math.floor(limit_bytes * 0.8 / unit))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    status = solver.solve(m)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    return False if status == cp_model.INFEASIBLE else None
