"""Small clusters re-placed exactly after the goals (move_exact.py): lower loads where the goals
left them above their bounds, then fewer moves, then more even topics; nothing worse.

The clusters are bench_small.py's seeds 1, 2, 6, 8, 9, 28, 93 and 98 (the generator's small preset
with its overrides), drawn, not shaped for the passes. The expected answer is the greedy plan
itself. The move pass may only take a plan that moves and copies no more, and leaves every
goal's measure (max / mean, max - min, brokers and topics out of bounds) no worse. The load pass
may only take one that lowers a goal's max / mean or max - min and leaves the rest no worse,
except the brokers out of bounds of a goal that was already out of bounds on one; where the
whole group's search leaves a load above its bound, it searches again rack by rack (seed 9).
The spread pass may only take one that lowers the topics' replica spread within the topic
goal's moves.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest

from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.planner import PlannerOptions, PlanResult, move_exact, optimizer, plan_rebalance
from kafka_ops.testing.grown import grown_spec

SHAPES = {
    1: {"brokers": 6, "partitions": 40, "hot_topic_share": 0.1, "new_brokers": 0, "hand_moved_share": 0.05},
    2: {"brokers": 6, "partitions": 40, "hot_topic_share": 0.02, "new_brokers": 1, "hand_moved_share": 0.0},
    6: {"brokers": 6, "partitions": 300, "hot_topic_share": 0.1, "new_brokers": 0, "hand_moved_share": 0.0},
    8: {"brokers": 6, "partitions": 150, "hot_topic_share": 0.1, "new_brokers": 0, "hand_moved_share": 0.0},
    9: {"brokers": 12, "partitions": 150, "hot_topic_share": 0.1, "new_brokers": 0, "hand_moved_share": 0.0},
    28: {"brokers": 6, "partitions": 80, "hot_topic_share": 0.3, "new_brokers": 2, "hand_moved_share": 0.15},
    93: {"brokers": 12, "partitions": 150, "hot_topic_share": 0.02, "new_brokers": 0, "hand_moved_share": 0.05},
    98: {"brokers": 9, "partitions": 40, "hot_topic_share": 0.1, "new_brokers": 1, "hand_moved_share": 0.0},
}


def _cluster(seed: int) -> ClusterModel:
    return generate_cluster("small", seed, **SHAPES[seed])


def _measures(result: PlanResult) -> dict[str, dict[str, float]]:
    return {g.name: g.after for g in result.summary.goals}


def _greedy(cluster: ClusterModel, monkeypatch: pytest.MonkeyPatch) -> PlanResult:
    """The goals' plan, without either exact pass."""
    with monkeypatch.context() as m:
        m.setattr(move_exact, "_MAX_PARTITIONS", 0)
        return plan_rebalance(cluster)


@pytest.mark.parametrize("seed", [1, 2, 8, 9])
def test_the_move_pass_moves_no_more_and_leaves_no_goal_worse(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _cluster(seed)
    greedy = _greedy(cluster, monkeypatch)
    monkeypatch.setattr(optimizer, "lower_loads", lambda run, goals: False)
    monkeypatch.setattr(optimizer, "spread_topics", lambda run, goals: False)  # it may spend moves
    exact = plan_rebalance(cluster)
    e, g = exact.summary, greedy.summary
    assert e.replica_moves <= g.replica_moves and e.bytes_moved <= g.bytes_moved
    for name, after in _measures(exact).items():
        for key, value in after.items():
            assert value <= _measures(greedy)[name][key] + 1e-9, (name, key)
    assert not any(goal.worse for goal in e.goals)


@pytest.mark.parametrize("seed", sorted(SHAPES))
def test_both_passes_leave_no_goal_worse(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _cluster(seed)
    greedy = _measures(_greedy(cluster, monkeypatch))
    exact = plan_rebalance(cluster)
    for name, after in _measures(exact).items():
        for key, value in after.items():
            was = greedy[name][key]
            assert value <= was + 1e-9 or (key == "brokers_out_of_bounds" and was > 0), (name, key)
    assert not any(goal.worse for goal in exact.summary.goals)


@pytest.mark.parametrize(("seed", "greedy_max", "exact_max"), [(28, 1.19, 1.05), (98, 1.13, 1.05)])
def test_network_in_the_goals_leave_above_its_bound_comes_down_to_it(
        seed: int, greedy_max: float, exact_max: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """The goals stop above 1.05 x the mean on both (1.191 and 1.135), where
    benchmarks/exact_targets.py's CP-SAT model says 1.05 is reachable with disk no worse. The
    load pass reaches it."""
    cluster = _cluster(seed)
    greedy = _measures(_greedy(cluster, monkeypatch))
    result = plan_rebalance(cluster)
    exact = _measures(result)
    assert greedy["network_in"]["max_over_mean"] > greedy_max
    assert exact["network_in"]["max_over_mean"] <= exact_max
    assert exact["disk"]["max_over_mean"] <= greedy["disk"]["max_over_mean"]
    assert "load lowering" in result.summary.goal_seconds


def test_a_load_the_whole_group_search_leaves_above_its_bound_comes_down_rack_by_rack(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 9 (12 brokers in 3 racks, 150 partitions): neighbourhood search over the whole group
    leaves network in at 1.13 x the mean, where benchmarks/exact_targets.py's CP-SAT model says
    1.05 is reachable with disk, network out and leader bytes-in no worse. Solved again one
    rack at a time, the replicas of the other racks fixed, it comes down to 1.05. A rack's
    model carries no broker outside the racks searched but a partition's own replicas (a
    variable per broker there made each search cost more CPU for the same plan)."""
    cluster = _cluster(9)
    with monkeypatch.context() as m:
        m.setattr(move_exact, "_hot_racks", lambda run, goals, brokers: [])
        whole = plan_rebalance(cluster)
    searched: list[tuple[set[int], dict[int, int], dict[int, tuple[set[int], list[int]]]]] = []
    real = move_exact._Model

    def model(*args, **kwargs):  # type: ignore[no-untyped-def]
        built = real(*args, **kwargs)
        if kwargs.get("within") is not None:
            st = args[0].state
            searched.append((kwargs["within"], dict(enumerate(st.rack)),
                             {p: (set(on), list(st.replicas[p])) for p, on in built.on.items()}))
        return built

    monkeypatch.setattr(move_exact, "_Model", model)
    racks = plan_rebalance(cluster)
    before, after = _measures(whole), _measures(racks)
    assert before["network_in"]["max_over_mean"] > 1.12
    assert after["network_in"]["max_over_mean"] <= 1.05
    assert after["disk"]["max_over_mean"] <= before["disk"]["max_over_mean"] + 1e-9
    assert not any(goal.worse for goal in racks.summary.goals)
    assert searched
    for within, rack, carried in searched:
        for brokers, replicas in carried.values():
            assert set(replicas) <= brokers
            assert all(rack[b] in within for b in brokers - set(replicas))


def test_the_load_pass_stops_once_no_load_is_above_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 1: the load pass brings every load within its bounds, where its moves only break
    ties (the move pass trims them next). Its first, proving search stops there. Before, it
    went on to prove the fewest moves, failed, and ran its 2 s of neighbourhood search."""
    solves: list[tuple[bool, int, int, float]] = []
    real = move_exact._solver

    def solver(lns: bool, budget: float, gap: int):  # type: ignore[no-untyped-def]
        s = real(lns, budget, gap)
        solve = s.solve

        def record(model):  # type: ignore[no-untyped-def]
            status = solve(model)
            solves.append((lns, gap, status, s.objective_value))
            return status
        s.solve = record  # type: ignore[method-assign]
        return s

    monkeypatch.setattr(move_exact, "_solver", solver)
    result = plan_rebalance(_cluster(1))
    lns, gap, status, objective = solves[0]  # the load pass's: it alone has a gap
    assert gap > 0 and not lns and status == move_exact.cp_model.OPTIMAL
    assert objective <= gap  # what is left is the moves, at most gap of them
    for goal in result.summary.goals:
        if goal.name in ("disk", "network_in", "network_out", "leader_bytes_in"):
            assert goal.after["brokers_out_of_bounds"] == 0, goal.name


def _topic_spread(cluster: ClusterModel, replicas: Mapping[TopicPartition, Sequence[int]]) -> int:
    """Per topic, its most replicas on a live broker minus its fewest, summed: counted here
    from the plan's replica lists, not by the planner."""
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    held = Counter((p.topic, b) for p in cluster.with_assignment(replicas) for b in p.replicas)
    topics = {p.topic for p in cluster}
    return sum(max(held[t, b] for b in live) - min(held[t, b] for b in live) for t in topics)


def _count_bound(cluster: ClusterModel) -> int:
    """The fewest moves that even out the replica counts (no dead broker here): the replicas
    above the ceiling of the mean, or those missing below its floor, whichever is more."""
    held = Counter(b for p in cluster for b in p.replicas)
    counts = [held[b] for b in cluster.brokers]
    mean = sum(counts) / len(counts)
    return max(sum(max(0, k - math.ceil(mean)) for k in counts), sum(max(0, math.floor(mean) - k) for k in counts))


def test_the_spread_pass_evens_the_topics_out_within_the_topic_goals_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 6 (6 brokers, 300 partitions): the topic replica goal, its swaps vetoed by loads at
    their bounds, leaves the topics' spread at 137 (benchmarks/plan_metrics' floor with the rack
    rule: 47). Re-placed by CP-SAT with every load kept, within the moves the goal may spend
    (1.099 x the count bound, or the plan's where more), it comes down to 126 or less, here with
    no more bytes copied; no goal's measure is worse."""
    cluster = _cluster(6)
    with monkeypatch.context() as m:
        m.setattr(optimizer, "spread_topics", lambda run, goals: False)
        before = plan_rebalance(cluster)
    after = plan_rebalance(cluster)
    assert _topic_spread(cluster, before.plan.replicas) >= 137
    assert _topic_spread(cluster, after.plan.replicas) <= 126
    assert after.summary.replica_moves <= max(before.summary.replica_moves, int(1.099 * _count_bound(cluster)))
    assert after.summary.bytes_moved <= before.summary.bytes_moved
    for name, measures in _measures(after).items():
        for key, value in measures.items():
            assert value <= _measures(before)[name][key] + 1e-9, (name, key)
    assert "topic spread" in after.summary.goal_seconds


def test_a_plan_of_45_moves_makes_do_with_41(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 2: the goals moved 45 replicas where 39 reach the same loads (CP-SAT proved it:
    bench_small.py --moves); with every topic as even and the bounds kept clear of rounding,
    the pass finds 41 (40 since it searches neighbourhoods of the plan). The spread pass after
    it may spend up to 1.099 x the bound again: not part of this count."""
    monkeypatch.setattr(optimizer, "spread_topics", lambda run, goals: False)
    # The load pass's racks lower network in further for one more move: not this pass either.
    monkeypatch.setattr(move_exact, "_hot_racks", lambda run, goals, brokers: [])
    summary = plan_rebalance(_cluster(2)).summary
    assert summary.replica_moves <= 41
    assert "move savings" in summary.goal_seconds


def test_a_plan_of_201_moves_on_12_brokers_makes_do_with_130() -> None:
    """Seed 9: the goals moved 201 replicas where 111 reach the same loads (bench_small.py
    --moves). One worker's default search did not improve on the plan in 10 s; neighbourhood
    search from it finds 172 within the pass's budget (151 after the load pass), the broker
    pairs 128."""
    assert plan_rebalance(_cluster(9)).summary.replica_moves <= 130


def test_broker_pairs_undo_moves_the_neighbourhood_search_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 93: neighbourhood search leaves 141 moves (count bound 74; CP-SAT found 110 reaching
    the same loads with the topics free: bench_small.py --moves). Searched completely two
    brokers at a time, the partitions on them may undo moves together: 115."""
    cluster = _cluster(93)
    paired = plan_rebalance(cluster)
    monkeypatch.setattr(move_exact, "_PAIRS_BUDGET", 0.0)
    alone = plan_rebalance(cluster)
    assert alone.summary.replica_moves >= 135
    assert paired.summary.replica_moves <= 118
    assert paired.summary.bytes_moved < alone.summary.bytes_moved
    assert not any(goal.worse for goal in paired.summary.goals)  # and seed 93 in the test above


def test_the_same_cluster_gets_the_same_plan() -> None:
    """One thread and a deterministic time budget: the plan does not depend on the machine."""
    cluster = _cluster(8)
    assert plan_rebalance(cluster).plan.replicas == plan_rebalance(cluster).plan.replicas


def test_a_search_cut_short_by_the_wall_clock_leaves_the_goals_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wall-clock guard against a stalled solver: a search it stops before any solution
    better than the hint (the goals' plan) changes nothing."""
    cluster = _cluster(2)
    greedy = _greedy(cluster, monkeypatch)
    monkeypatch.setattr(move_exact, "_WALL", 1e-6)
    result = plan_rebalance(cluster)
    assert result.plan.replicas == greedy.plan.replicas
    assert "move savings" not in result.summary.goal_seconds


def test_a_move_cap_leaves_the_goals_plan_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caps are not modelled: under one the pass does not run."""
    cluster = _cluster(2)
    capped = plan_rebalance(cluster, options=PlannerOptions(max_moves=10_000))
    monkeypatch.setattr(move_exact, "_MAX_PARTITIONS", 0)
    assert capped.plan.replicas == plan_rebalance(cluster).plan.replicas


def test_every_exact_search_finds_a_placement_its_hint_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """fuzz_grown.py rebalance seed 39 (39 brokers): the move pass's model, with the plan as its
    complete and feasible hint, came back from CP-SAT 9.15's presolve with no solution at all
    (UNKNOWN; on seeds 24 and 30 "INFEASIBLE", after the solver's log called the hint feasible),
    and the pass silently kept the goals' 316 moves. Without presolve's inclusion detection the
    same model finds 297. Every search the passes make starts from such a hint, so each must
    come back with a placement."""
    found: list[bool] = []
    solve = move_exact._solve

    def spy(model: move_exact._Model, budget: float = move_exact._BUDGET) -> object:
        chosen = solve(model, budget)
        found.append(chosen is not None)
        return chosen

    monkeypatch.setattr(move_exact, "_solve", spy)
    summary = plan_rebalance(generate_cluster("medium", seed=39, **grown_spec(39))).summary
    assert found and all(found)
    assert "move savings" in summary.goal_seconds
    assert summary.replica_moves <= 305
