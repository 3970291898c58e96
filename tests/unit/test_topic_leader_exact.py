"""Each topic's leaders placed exactly (CP-SAT) on small groups, after the topic leader goal's greedy.

The clusters are bench_small.py's seeds 9 and 38 (the generator's small preset with its size and
shape overridden): drawn, not shaped for the planner. The expected answer comes from a separate
CP-SAT model written here, apart from the planner: over leaderships alone, with the replicas where
the plan put them, each broker's leader count within the plan's band and its network out and
leader bytes-in within the range their goals keep (the bounds; for a broker the plan left
outside them, up to the plan's extremes), the fewest topics whose leaders end more than one
apart. The plan itself is one of its solutions, so its minimum bounds the plan's count from
below; a plan that reaches it has the fewest such topics any choice of leaders within those
limits gives.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from ortools.sat.python import cp_model

from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, Partition
from kafka_ops.planner import PlannerOptions, PlanResult, plan_rebalance, topic_leader_exact
from kafka_ops.testing.grown import grown_pools, grown_spec

GREEDY_PILES = {  # seed: generator overrides (bench_small's shape); topics over one apart: start / greedy
    9: {"brokers": 12, "partitions": 150, "hot_topic_share": 0.1, "new_brokers": 0, "hand_moved_share": 0.0},  # 3 / 10
    38: {"brokers": 12, "partitions": 300, "hot_topic_share": 0.3, "new_brokers": 0, "hand_moved_share": 0.0},  # 4 / 8
}
_THRESHOLD = {"network_out": 0.05, "leader_bytes_in": 0.10}  # the goals' default bounds


def _cluster(seed: int) -> ClusterModel:
    return generate_cluster("small", seed, **GREEDY_PILES[seed])  # type: ignore[arg-type]


def _uneven(cluster: ClusterModel) -> int:
    """Topics whose leaders, per live broker, end more than one apart (plan_metrics' count)."""
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    per: dict[str, Counter[int]] = {}
    for p in cluster:
        per.setdefault(p.topic, Counter())[p.replicas[0]] += 1
    return sum(1 for c in per.values() if max(c[b] for b in live) - min(c[b] for b in live) > 1)


def _fewest_uneven(after: ClusterModel) -> int:
    """The oracle of the module doc, on the plan's replicas."""
    live = sorted(b for b, broker in after.brokers.items() if broker.alive)
    parts = list(after)
    m = cp_model.CpModel()
    lead: dict[int, dict[int, cp_model.IntVar]] = {}
    for i, p in enumerate(parts):
        lead[i] = {b: m.new_bool_var("") for b in p.replicas if b in live}
        m.add_exactly_one(lead[i].values())
    loads: dict[str, Callable[[Partition], float]] = {
        "leaders": lambda p: 1.0,
        "network_out": lambda p: p.bytes_out_per_sec + p.bytes_in_per_sec * (len(p.replicas) - 1),
        "leader_bytes_in": lambda p: p.bytes_in_per_sec}
    for name, load in loads.items():  # in whole bytes/s, as the model adds them
        now = {b: sum(round(load(p)) for p in parts if p.replicas[0] == b) for b in live}
        mean = sum(now.values()) / len(live)
        if name == "leaders":  # the plan's band: no wider
            lo, hi = float(min(now.values())), float(max(now.values()))
        else:
            lo, hi = mean * (1 - _THRESHOLD[name]), mean * (1 + _THRESHOLD[name])
        far_lo, far_hi = min(lo, *now.values()), max(hi, *now.values())
        for b in live:
            low, high = (lo, hi) if lo <= now[b] <= hi else (far_lo, far_hi)
            total = sum(round(load(p)) * lead[i][b] for i, p in enumerate(parts) if b in lead[i])
            m.add(total <= math.floor(high))
            m.add(total >= math.ceil(low))
    uneven = []
    for t in {p.topic for p in parts}:
        counts = [sum(lead[i][b] for i, p in enumerate(parts) if p.topic == t and b in lead[i]) for b in live]
        most, least = m.new_int_var(0, len(parts), ""), m.new_int_var(0, len(parts), "")
        m.add_max_equality(most, counts)
        m.add_min_equality(least, counts)
        y = m.new_bool_var("")
        m.add(most - least <= 1).only_enforce_if(y.Not())
        uneven.append(y)
    m.minimize(sum(uneven))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    assert solver.solve(m) == cp_model.OPTIMAL
    return round(solver.objective_value)


def _goal(result: PlanResult, name: str) -> Any:
    return next(g for g in result.summary.goals if g.name == name)


@pytest.mark.parametrize("seed", sorted(GREEDY_PILES))
def test_topic_leaders_reach_the_fewest_uneven_topics_leadership_allows(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _cluster(seed)
    exact = plan_rebalance(cluster)
    after = cluster.with_assignment(exact.plan.replicas)
    assert _uneven(after) == _fewest_uneven(after)
    monkeypatch.setattr(topic_leader_exact, "_MAX_PARTITIONS", -1)  # the greedy alone
    greedy = plan_rebalance(cluster)
    assert _uneven(after) < _uneven(cluster.with_assignment(greedy.plan.replicas))
    # The goal's own measures: fewer topics out of bounds, none further apart.
    ours, theirs = _goal(exact, "topic_leader_dispersion").after, _goal(greedy, "topic_leader_dispersion").after
    assert ours["topics_out_of_bounds"] < theirs["topics_out_of_bounds"]
    assert ours["max_minus_min"] <= theirs["max_minus_min"]
    for name in ("leader_count", "network_out", "leader_bytes_in"):
        assert _goal(exact, name).status != "worse"
    assert _goal(exact, "leader_count").after["max_minus_min"] <= 1


def test_the_topic_pass_spends_only_the_leader_changes_a_cap_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap counts changes made (WorkingState.leader_changes); the model gets what is left.
    Uncapped, the pass changes leaderships from E to A changes made; capped at halfway, it
    still applies a placement, within the cap."""
    cluster = _cluster(38)
    applied = topic_leader_exact.apply_leaders
    made: list[tuple[int, int]] = []

    def counted(*args: Any) -> bool:
        before = args[0].state.leader_changes
        done = applied(*args)
        if done:
            made.append((before, args[0].state.leader_changes))
        return done

    monkeypatch.setattr(topic_leader_exact, "apply_leaders", counted)
    plan_rebalance(cluster)
    (start, end), = made
    cap = start + (end - start) // 2
    made.clear()
    capped = plan_rebalance(cluster, options=PlannerOptions(max_leader_changes=cap))
    assert made and all(after <= cap for _, after in made)
    assert capped.summary.leader_changes <= cap


def test_a_run_of_several_pools_spends_at_most_its_budget_on_the_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group's searches come out of one budget per run: a cluster of many small pools does
    not pay the whole search for each. Grown seed 12 has three pools; with the run's budget cut
    to one group's first search, the pass searches once more at most (the second search of the
    group that found fewer topics out of bounds), and leaves more topics out than with all three."""
    cluster = generate_cluster("medium", seed=12, **grown_spec(12))
    pools = grown_pools(cluster, 12)
    real = topic_leader_exact.new_solver
    spent: list[float] = []

    class Recording:
        def __init__(self, budget: float) -> None:
            self.solver = real(budget)

        def solve(self, model: cp_model.CpModel) -> Any:
            status = self.solver.solve(model)
            spent.append(self.solver.deterministic_time)
            return status

        def __getattr__(self, name: str) -> Any:
            return getattr(self.solver, name)

    monkeypatch.setattr(topic_leader_exact, "new_solver", lambda budget=0.5: Recording(budget))
    whole = _goal(plan_rebalance(cluster, pools), "topic_leader_dispersion").after["topics_out_of_bounds"]
    assert len(spent) >= 4 and sum(spent) <= topic_leader_exact._RUN_BUDGET + 0.5 + 0.01
    spent.clear()
    monkeypatch.setattr(topic_leader_exact, "_RUN_BUDGET", topic_leader_exact._BUDGET)
    cut = _goal(plan_rebalance(cluster, pools), "topic_leader_dispersion").after["topics_out_of_bounds"]
    assert len(spent) <= 2 and sum(spent) <= topic_leader_exact._BUDGET + 0.5 + 0.01
    assert whole < cut
