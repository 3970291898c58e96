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
from collections.abc import Mapping, Sequence

from ortools.sat.python import cp_model

from kafka_ops.model import ClusterModel, Partition, TopicPartition
from kafka_ops.testing.feasibility import rack_key, rack_limit

TARGETS = {"disk": 1.03, "network_in": 1.05, "network_out": 1.05, "leader_bytes_in": 1.10}
_UNIT = {"disk": 2**20}  # disk in MiB, rates in bytes/s


def attainable(cluster: ClusterModel, target: str, earlier: Mapping[str, float] | None = None,
               seconds: float = 10.0, limit: float | None = None) -> bool | None:
    """True / False when decided, None when the time ran out first. ``earlier``: max / mean
    limits on other loads that must hold too (the goals before ``target`` no worse than a
    plan left them). ``limit``: the max / mean asked for, if not the target's."""
    model = _Model(cluster)
    asked = TARGETS[target] if limit is None else limit
    for b in model.live:
        for r, most in {**(earlier or {}), target: asked}.items():
            model.m.add(model.load(r, b) <= math.floor(model.totals[r] / len(model.live) * most))
    status = _solver(seconds).solve(model.m)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return True
    return False if status == cp_model.INFEASIBLE else None


def fewest_moves(cluster: ClusterModel, plan: Mapping[TopicPartition, Sequence[int]],
                 seconds: float = 10.0) -> tuple[int, int]:
    """The fewest replica moves that reach the loads ``plan`` reaches (each load's highest
    broker no higher, replica and leader counts within one, or as close as the plan's), as (the
    fewest found, a lower bound CP-SAT proved): the plan itself is one such assignment and the
    search's start.

    plan_metrics' count bound ignores the moves the load goals need; on a small cluster those
    are most of a plan. A plan above 1.10 x the count bound may still be near this one."""
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive)
    even = _Model(cluster)  # the counts' band, and the plan's loads in the model's units
    counts = {}
    for r in ("count", "leaders"):
        got = [even.value(r, b, plan) for b in live]
        share = even.totals[r] / len(live)
        counts[r] = (min(math.floor(share), *got), max(math.ceil(share), *got))
    model = _Model(cluster, counts)
    for r in ("disk", "network_in", "network_out", "leader_bytes_in"):
        worst = max(model.value(r, b, plan) for b in live)
        for b in live:
            model.m.add(model.load(r, b) <= worst)
    new = []
    for tp, on in model.on.items():
        start = model.parts[tp].replicas
        target = plan.get(tp, start)
        for b, x in on.items():
            model.m.add_hint(x, b in target)
            model.m.add_hint(model.leads[tp][b], b == target[0])
            if b not in start:
                new.append(x)
    model.m.minimize(sum(new))
    solver = _solver(seconds)
    status = solver.solve(model.m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"the plan's own loads not reached ({solver.status_name(status)})")
    return round(solver.objective_value), math.ceil(solver.best_objective_bound - 1e-6)


class _Model:
    """Every partition's replicas and leader as booleans per live broker: distinct brokers, the
    rack rule, capacity (80%) and replica and leader counts within one of each other (or within
    ``counts``, per "count" and "leaders": a plan's range where it is wider)."""

    def __init__(self, cluster: ClusterModel, counts: Mapping[str, tuple[int, int]] | None = None) -> None:
        self.live = live = sorted(b for b, broker in cluster.brokers.items() if broker.alive)
        n = len(live)
        racks: dict[str, list[int]] = defaultdict(list)
        for b in live:
            racks[rack_key(cluster, b)].append(b)
        self.m = m = cp_model.CpModel()
        self.terms: dict[str, dict[int, list[tuple[int, cp_model.IntVar]]]] = {
            r: defaultdict(list) for r in ("disk", "network_in", "network_out", "leader_bytes_in", "count", "leaders")}
        self.totals: dict[str, int] = defaultdict(int)
        self.parts: dict[TopicPartition, Partition] = {}
        self.on: dict[TopicPartition, dict[int, cp_model.IntVar]] = {}
        self.leads: dict[TopicPartition, dict[int, cp_model.IntVar]] = {}
        self.weights: dict[TopicPartition, dict[str, int]] = {}
        for p in cluster:
            rf = len(p.replicas)
            limit = rack_limit(cluster, live, rf)
            self.parts[p.tp] = p
            on = self.on[p.tp] = {b: m.new_bool_var("") for b in live}
            leads = self.leads[p.tp] = {b: m.new_bool_var("") for b in live}
            m.add(sum(on.values()) == rf)
            m.add_exactly_one(leads.values())
            for b in live:
                m.add_implication(leads[b], on[b])
            for members in racks.values():
                if len(members) > limit:
                    m.add(sum(on[b] for b in members) <= limit)
            w = self.weights[p.tp] = {
                "disk": p.size_bytes // _UNIT["disk"], "network_in": round(p.bytes_in_per_sec),
                "network_out": round(p.bytes_out_per_sec + p.bytes_in_per_sec * (rf - 1)),
                "leader_bytes_in": round(p.bytes_in_per_sec), "count": 1, "leaders": 1}
            for b in live:
                for r in ("disk", "network_in", "count"):
                    self.terms[r][b].append((w[r], on[b]))
                for r in ("network_out", "leader_bytes_in", "leaders"):
                    self.terms[r][b].append((w[r], leads[b]))
            for r in ("disk", "network_in", "count"):
                self.totals[r] += w[r] * rf
            for r in ("network_out", "leader_bytes_in", "leaders"):
                self.totals[r] += w[r]
        for b in live:
            for r in ("count", "leaders"):
                lo, hi = (counts or {}).get(r, (self.totals[r] // n, -(-self.totals[r] // n)))
                m.add(self.load(r, b) >= lo)
                m.add(self.load(r, b) <= hi)
            cap = cluster.brokers[b].capacity
            for r, limit_bytes, unit in (("disk", cap.disk_bytes, _UNIT["disk"]),
                                         ("network_in", cap.network_in_bytes_per_sec, 1),
                                         ("network_out", cap.network_out_bytes_per_sec, 1)):
                if limit_bytes:
                    m.add(self.load(r, b) <= math.floor(limit_bytes * 0.8 / unit))

    def load(self, r: str, b: int) -> cp_model.LinearExprT:
        return sum(w * x for w, x in self.terms[r][b])

    def value(self, r: str, b: int, plan: Mapping[TopicPartition, Sequence[int]]) -> int:
        """Broker b's load r in the model's units under ``plan`` (partitions it leaves alone
        where they are)."""
        leader_only = r in ("network_out", "leader_bytes_in", "leaders")
        total = 0
        for tp, w in self.weights.items():
            reps = plan.get(tp, self.parts[tp].replicas)
            if (reps[0] == b) if leader_only else (b in reps):
                total += w[r]
        return total


def _solver(seconds: float) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    return solver
