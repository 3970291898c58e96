"""One pool migration: the planner's migrate-pool mode places replicas with pools.migrate_to_pool.

``kafka-ops pools migrate`` and ``kafka-ops plan migrate-pool`` (the workflow API, the Airflow
kafka_pool_migration DAG) give the same plan for the same pool; the planner adds what only it
knows: in-flight partitions, capacity vetoes, caps, unpooled topics on pooled brokers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_ops.cli import main
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner import PlannerOptions, plan_migrate_pool
from kafka_ops.pools import load_pools, migrate_to_pool, pools_from_dict
from kafka_ops.snapshot import load_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "kafka_ops" / "examples"


def example() -> tuple[ClusterModel, object]:
    return load_snapshot(EXAMPLES / "cluster.json"), load_pools(EXAMPLES / "pools.yaml")


def test_planner_mode_gives_the_pools_placement_for_each_pool() -> None:
    cluster, pools = example()
    moved = 0
    for name in sorted(pools.pools):
        expected = migrate_to_pool(cluster, pools, name).replicas
        result = plan_migrate_pool(cluster, pools, pools.topics_of(name, cluster))
        assert result.plan.replicas == expected, name
        assert result.summary.warnings == []
        moved += len(expected)
    assert moved == 83  # payments 25, analytics 0, shared 58: the check is not vacuous


def test_planner_mode_for_all_pools_places_them_one_after_the_other() -> None:
    cluster, pools = example()
    expected: dict[TopicPartition, tuple[int, ...]] = {}
    for name in sorted(pools.pools):
        view = cluster.with_assignment(expected)
        expected.update(migrate_to_pool(view, pools, name).replicas)
    result = plan_migrate_pool(cluster, pools)
    assert result.plan.replicas == expected and len(expected) == 83
    assert plan_migrate_pool(cluster, pools, []).plan.replicas == expected  # [] = every topic
    after = cluster.with_assignment(result.plan.replicas)
    assert pools.misplaced(after) == []
    goals = {g.name: (g.before, g.after) for g in result.summary.goals}
    assert goals["pool_membership"] == ({"violations": 83}, {"violations": 0})
    assert goals["rack_awareness"] == ({"violations": 0}, {"violations": 0})


def test_cli_plan_migrate_pool_and_pools_migrate_write_the_same_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--cluster", str(EXAMPLES / "cluster.json"), "--pools", str(EXAMPLES / "pools.yaml")]
    cluster, pools = example()
    topics = pools.topics_of("payments", cluster)
    assert len(topics) == 5

    def both(*pools_args: str, planner_topics: list[str]) -> tuple[ReassignmentPlan, ReassignmentPlan]:
        a, b = tmp_path / "pools.json", tmp_path / "planner.json"
        assert main(["pools", "migrate", *base, "--pool", "payments", *pools_args, "-o", str(a)]) == 0
        assert main(["plan", "migrate-pool", *base, "--topics", ",".join(planner_topics),
                     "-o", str(b)]) == 0
        capsys.readouterr()
        assert json.loads(a.read_text()) == json.loads(b.read_text())
        return ReassignmentPlan.read(a), ReassignmentPlan.read(b)

    whole, _ = both(planner_topics=topics)
    assert len(whole) == 25
    # The placement follows the order the topics are named in, the same way in both commands.
    listed = topics[::-1]
    reordered, _ = both(*[a for t in listed for a in ("--topic", t)], planner_topics=listed)
    assert len(reordered) == 25


def cluster_of(brokers: list[Broker], layout: dict[str, list[tuple[int, ...]]],
               sizes: dict[str, list[int]] | None = None) -> ClusterModel:
    parts = [Partition(t, i, reps, reps[0], reps, size_bytes=(sizes or {}).get(t, [100] * 99)[i])
             for t, reps_list in layout.items() for i, reps in enumerate(reps_list)]
    return ClusterModel(brokers, parts)


POOLS = {"pools": {"p": {"brokers": [0, 1, 2], "topics": ["t"]}, "q": {"brokers": [8, 9]}}}


def test_a_capacity_veto_falls_back_to_the_membership_goal_with_a_warning() -> None:
    small = BrokerCapacity(disk_bytes=500)  # 400 bytes at the default 0.8 threshold
    brokers = [Broker(0, capacity=small), Broker(1), Broker(2), Broker(8), Broker(9)]
    cluster = cluster_of(brokers, {"t": [(9,), (9,), (9,)]}, {"t": [1000, 100, 100]})
    pools = pools_from_dict(POOLS)
    placement = migrate_to_pool(cluster, pools, "p").replicas
    assert placement[TopicPartition("t", 0)] == (0,)  # the placement counts replicas, not bytes
    result = plan_migrate_pool(cluster, pools)
    new = result.plan.replicas
    assert new[TopicPartition("t", 0)] in {(1,), (2,)}, "broker 0 cannot hold 1000 bytes"
    assert {tp: r for tp, r in new.items() if tp.partition} == \
        {tp: r for tp, r in placement.items() if tp.partition}
    assert result.summary.warnings == [
        "1 partition(s) placed by the pool_membership goal instead of the pool placement, "
        "which a hard goal or a move cap refused: t-0"]


def test_in_flight_partitions_are_left_alone() -> None:
    brokers = [Broker(b) for b in (0, 1, 2, 7, 8, 9)]
    moving = Partition("t", 0, (7, 8, 0), 7, (7, 8, 0), size_bytes=100,
                       adding_replicas=(0,), removing_replicas=(7,))
    rest = [Partition("t", i, (8, 9), 8, (8, 9), size_bytes=100) for i in (1, 2)]
    cluster = ClusterModel(brokers, [moving, *rest])
    pools = pools_from_dict({"pools": {"p": {"brokers": [0, 1, 2], "topics": ["t"]},
                                       "q": {"brokers": [7, 8, 9]}}})
    result = plan_migrate_pool(cluster, pools)
    assert set(result.plan.replicas) == {TopicPartition("t", 1), TopicPartition("t", 2)}
    assert all(set(r) <= {0, 1, 2} and len(r) == 2 for r in result.plan.replicas.values())
    assert "reassignment in flight" in result.summary.warnings[0]


def test_unpooled_topics_leave_pooled_brokers_and_pooled_ones_keep_the_placement() -> None:
    brokers = [Broker(b) for b in (0, 1, 2, 5, 8, 9)]
    cluster = cluster_of(brokers, {"t": [(9,), (8,)], "free": [(0,), (5,)]})
    pools = pools_from_dict(POOLS)
    result = plan_migrate_pool(cluster, pools)
    new = result.plan.replicas
    assert new[TopicPartition("free", 0)] == (5,)  # the only unpooled broker
    assert TopicPartition("free", 1) not in new
    assert {tp: r for tp, r in new.items() if tp.topic == "t"} == \
        migrate_to_pool(cluster, pools, "p").replicas


def test_impossible_migration_fails_in_the_planners_words() -> None:
    brokers = [Broker(0), Broker(1), Broker(2, alive=False), Broker(8), Broker(9)]
    cluster = cluster_of(brokers, {"t": [(8, 9, 0)]})
    with pytest.raises(ValidationError, match="pool_membership: t-0 has 3 replicas .* only 2 live"):
        plan_migrate_pool(cluster, pools_from_dict(POOLS))
    with pytest.raises(ValidationError, match="t-0 has replication factor 3 but pool 'p' has only 2"):
        migrate_to_pool(cluster, pools_from_dict(POOLS), "p")


def test_the_move_cap_stops_the_migration_clearly() -> None:
    cluster = cluster_of([Broker(b) for b in (0, 1, 2, 8, 9)], {"t": [(9,), (8,), (9,)]})
    with pytest.raises(ValidationError, match="pool_membership"):
        plan_migrate_pool(cluster, pools_from_dict(POOLS), options=PlannerOptions(max_moves=2))
    assert len(plan_migrate_pool(cluster, pools_from_dict(POOLS),
                                 options=PlannerOptions(max_moves=3)).plan) == 3
