"""Replicas moved into their pool are placed topic by topic, not wherever room happens to be.

The clusters are fuzz_grown's pooled ones (benchmarks/fuzz_grown.py --pools): years of Kafka's
placement, hand moves and new brokers, then two or three pools imposed that most topics start
outside of. The expected answer is the scoring script's (benchmarks/plan_metrics.py, which
does not import the planner): the per-topic spread over each pool's brokers against its floor
with the rack rule, pool by pool. Issue 9 asks for twice the floor at most.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, Partition, TopicPartition
from kafka_ops.planner import plan_migrate_pool, plan_rebalance, plan_remove_brokers
from kafka_ops.planner.context import PlannerOptions, Run
from kafka_ops.planner.pool_fill import PoolFill
from kafka_ops.planner.state import WorkingState
from kafka_ops.planner.summary import GoalResult
from kafka_ops.planner.topic import _rack_floors
from kafka_ops.planner.topic_swaps import plan_bounds
from kafka_ops.pools import PoolSet
from kafka_ops.testing.grown import grown_pools, grown_removal, grown_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
plan_metrics = importlib.import_module("plan_metrics")


@pytest.mark.parametrize("seed", [6, 25])
def test_the_pool_membership_goal_alone_places_each_topic_within_twice_its_floor(seed: int) -> None:
    # Before the fill order counted each broker's replicas of its own pool only, against the
    # count the pool ends with, the goal put a topic's replicas on whichever broker was below
    # the mean at that moment: spread 1,407 (seed 6, floor 148) and 910 (seed 25, floor 177).
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    result = plan_rebalance(cluster, pools, options=PlannerOptions(goals=()))
    spread, floor = plan_metrics.pool_topic_spread(cluster, pools, result.plan.replicas)
    assert spread <= 2 * floor, (spread, floor)
    membership = next(g for g in result.summary.goals if g.name == "pool_membership")
    assert membership.before["violations"] > 0 and membership.after["violations"] == 0


@pytest.mark.parametrize("seed", [6, 25])
def test_a_rebalance_into_pools_keeps_each_topic_within_twice_its_floor(seed: int) -> None:
    # With every goal: 978 and 834 before (6.6 and 4.7 times the floor).
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    result = plan_rebalance(cluster, pools)
    spread, floor = plan_metrics.pool_topic_spread(cluster, pools, result.plan.replicas)
    assert spread <= 2 * floor, (spread, floor)
    replicas = next(g for g in result.summary.goals if g.name == "replica_count")
    assert replicas.status == "satisfied"


@pytest.mark.parametrize("seed", [6, 10])
def test_a_pool_migration_keeps_each_topic_within_twice_its_floor(seed: int) -> None:
    # migrate-pool places by pools.migrate_to_pool, and what a veto refuses it (capacity, here
    # hundreds of partitions) by the pool membership goal: 1,054 against a floor of 148 (seed
    # 6) and 740 against 91 (seed 10) while both counted replicas alone, other pools' with them.
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    result = plan_migrate_pool(cluster, pools)
    spread, floor = plan_metrics.pool_topic_spread(cluster, pools, result.plan.replicas)
    assert spread <= 2 * floor, (spread, floor)


@pytest.mark.parametrize("seed", [6, 12, 25])
def test_the_numpy_fill_order_picks_the_broker_the_python_order_picks(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # PoolFill packs the goal's order into one int per broker and skips the brokers no move
    # may go to; forced to answer "none", it leaves every relocation to relocate() with the
    # order in Python (the fallback for a refused broker). Both must plan the same. Seed 12
    # has dead brokers; remove_brokers adds excluded ones.
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    gone = sorted(grown_removal(cluster, seed))
    options = PlannerOptions(goals=())
    fast = [plan_rebalance(cluster, pools, options=options).plan.replicas,
            plan_remove_brokers(cluster, gone, pools, options=options).plan.replicas]
    monkeypatch.setattr(PoolFill, "best", lambda self, p, src, limit: None)
    slow = [plan_rebalance(cluster, pools, options=options).plan.replicas,
            plan_remove_brokers(cluster, gone, pools, options=options).plan.replicas]
    assert fast[0] and fast == slow


@pytest.mark.parametrize("seed", [5, 6])
def test_the_summary_scores_a_pool_migration_as_the_metric_script_does(seed: int) -> None:
    # The topic goal's measure counted a replica outside its pool on the broker it sat on, so
    # a migration's start looked evener than it was: seed 6 went 480 -> 261 over its pools and
    # the summary said "worse" (seed 5, 528 -> 624, "improved"). Counted over each pool's
    # brokers, the summary's before and after are plan_metrics.pool_topic_spread's. Seed 5's
    # start, so counted, is below its floor (topics outside their pool start at 0 there): "not
    # worse" holds each topic to its floor instead, and 624 is within that bar (685).
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    result = plan_rebalance(cluster, pools)
    goal = next(g for g in result.summary.goals if g.name == "topic_replica_distribution")
    before, _ = plan_metrics.pool_topic_spread(cluster, pools)
    after, _ = plan_metrics.pool_topic_spread(cluster, pools, result.plan.replicas)
    assert (goal.before["sum_max_minus_min"], goal.after["sum_max_minus_min"]) == (before, after)
    bar = sum(_spread_and_bar(cluster, pools, pool, result.plan.replicas)[1] for pool in [*pools.pools, None])
    assert goal.held_to.get("sum_max_minus_min", before) == bar and bar > before
    assert goal.status == ("worse" if after > bar else "improved")
    text = result.summary.format_text()
    assert f"sum_max_minus_min {before} -> {after} (start held to its floor: {bar})" in text
    assert result.summary.to_dict()["goals"][-2]["held_to"]["sum_max_minus_min"] == bar


def _topic_spreads_and_bars(cluster: ClusterModel, pools: PoolSet, pool: str | None,
                            new: Mapping[TopicPartition, Sequence[int]]) -> dict[str, tuple[int, int]]:
    """Per topic of a pool (None: the unpooled topics over the unpooled brokers), its spread
    after the plan and what "not worse than the start" holds it to: its spread at the start
    counted over the pool's live brokers, or its floor with the rack rule where the start is
    lower (a topic outside its pool starts at 0 there). Counted here and by the metric script,
    apart from the planner."""
    pooled = {b for x in pools.pools.values() for b in x.brokers}
    members = pools.pools[pool].brokers if pool is not None else set(cluster.brokers) - pooled
    live = sorted(b for b in members if cluster.brokers[b].alive)
    start: dict[str, Counter[int]] = {}
    end: dict[str, Counter[int]] = {}
    parts: dict[str, list[Partition]] = {}
    for p in cluster:
        owner = pools.pool_for_topic(p.topic)
        if (owner.name if owner is not None else None) != pool or not live:
            continue
        parts.setdefault(p.topic, []).append(p)
        for counts, reps in ((start, p.replicas), (end, new.get(p.tp, p.replicas))):
            c = counts.setdefault(p.topic, Counter(dict.fromkeys(live, 0)))
            for b in reps:
                if b in c:
                    c[b] += 1
    return {t: (max(end[t].values()) - min(end[t].values()),
                max(max(c.values()) - min(c.values()), plan_metrics._RackFloors(cluster, live, parts[t]).topic_floor()))
            for t, c in start.items()}


def _spread_and_bar(cluster: ClusterModel, pools: PoolSet, pool: str | None,
                    new: Mapping[TopicPartition, Sequence[int]]) -> tuple[int, int]:
    """A pool's per-topic spread after the plan and its bar, summed over its topics."""
    per_topic = _topic_spreads_and_bars(cluster, pools, pool, new).values()
    return sum(s for s, _ in per_topic), sum(b for _, b in per_topic)


def test_a_rebalance_into_pools_leaves_no_pool_worse_than_its_start_held_to_its_floor() -> None:
    # Seed 12's rebalance moves 3,625 replicas into their pools. The swap budget was capped at
    # 1.099 x a move bound that left those out (616 moves), below what the hard goals had
    # already spent: no paid swap ran, and the paid pass stopped at twice the floor even
    # where that is above the start. pool-1 ended at 393 against 315 (held to the start, each
    # topic at least its floor; now 297), pool-2 at 384 against 397. pool-0 is left out: its four
    # brokers outside rack-a (which may hold one replica of each RF-2 partition) end at their
    # disk limit, so only a swap of equal sizes could move a topic between them.
    seed = 12
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    result = plan_rebalance(cluster, pools)
    for pool in ("pool-1", "pool-2"):
        spread, bar = _spread_and_bar(cluster, pools, pool, result.plan.replicas)
        assert spread <= bar, (pool, spread, bar)


def test_the_swap_budget_counts_the_replicas_that_must_enter_their_pool() -> None:
    seed = 12
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    outside = sum(1 for p in cluster for b in p.replicas
                  if (pool := pools.pool_for_topic(p.topic)) is not None and b not in pool.brokers)
    moves, _ = plan_bounds(Run(WorkingState(cluster, pools), PlannerOptions()))
    assert outside == 3625 and moves >= outside


def test_a_measure_is_worse_only_past_its_start_or_the_bar_held_to() -> None:
    def status(after: float, held: dict[str, float]) -> str:
        return GoalResult("topic_replica_distribution", False, {"sum_max_minus_min": 500, "topics_out_of_bounds": 9},
                          {"sum_max_minus_min": after, "topics_out_of_bounds": 4}, held_to=held).status
    assert status(520, {}) == "worse"
    assert status(520, {"sum_max_minus_min": 560}) == "improved"
    assert status(561, {"sum_max_minus_min": 560}) == "worse"
    assert status(480, {"sum_max_minus_min": 560}) == "improved"


@pytest.mark.parametrize("seed", [4, 12])
def test_the_topic_floor_with_the_rack_rule_is_the_metric_scripts_topic_by_topic(seed: int) -> None:
    # Seed 4's pool-1 has a rack of one broker: it must hold a replica of every partition, so
    # most topics cannot come within 1 of even there (the floor 1 alone put the bar at 1,774,
    # below what any plan reaches; with the rack rule, 2,187).
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    st = WorkingState(cluster, pools)
    floors = _rack_floors(Run(st, PlannerOptions())).tolist()
    by_topic: dict[str, list[Partition]] = {}
    for p in cluster:
        by_topic.setdefault(p.topic, []).append(p)
    pooled = {b for x in pools.pools.values() for b in x.brokers}
    forced = 0
    for topic, parts in by_topic.items():
        pool = pools.pool_for_topic(topic)
        members = pool.brokers if pool is not None else set(cluster.brokers) - pooled
        live = sorted(b for b in members if cluster.brokers[b].alive)
        expected = plan_metrics._RackFloors(cluster, live, parts).topic_floor() if live else 0
        assert floors[st.topics.index(topic)] == expected, topic
        forced += expected > 1
    assert forced > (100 if seed == 4 else 0)


def test_no_topic_ends_further_above_its_bar_than_the_worst_start() -> None:
    # The swaps stopped once each pool's sum met its target, whatever one topic looked like:
    # on pooled large (fuzz_grown's pools over the preset) topic-02873, 768 replicas on a pool
    # of 20 brokers, ended with 47 on some brokers and none on others (start 15, floor 1), and
    # the worst topic went 36 -> 47 ("worse"). Each topic above its own bar now gets paid
    # steps of its own.
    cluster = generate_cluster("large", seed=0)
    pools = grown_pools(cluster, 0)
    result = plan_rebalance(cluster, pools)
    per_topic = {t: v for pool in [*pools.pools, None]
                 for t, v in _topic_spreads_and_bars(cluster, pools, pool, result.plan.replicas).items()}
    worst_bar = max(bar for _, bar in per_topic.values())
    assert max(spread for spread, _ in per_topic.values()) <= worst_bar
    assert per_topic["topic-02873"][0] <= 2 * per_topic["topic-02873"][1]
    goal = next(g for g in result.summary.goals if g.name == "topic_replica_distribution")
    assert goal.status == "improved"
