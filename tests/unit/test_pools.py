"""Resource pools: the file, its validation, and the two pool operations (assign, migrate)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ops.assignment import BrokerMetadata, assign_replicas_to_brokers
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.pools import (
    Pool,
    PoolSet,
    assign_in_pool,
    check_plan_in_pools,
    load_pools,
    migrate_to_pool,
    pools_from_dict,
)
from kafka_ops.snapshot import load_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "kafka_ops" / "examples"


def cluster_of(
    broker_racks: Mapping[int, str | None],
    topics: Mapping[str, list[list[int]]],
    dead: Collection[int] = (),
) -> ClusterModel:
    brokers = [Broker(b, rack, alive=b not in dead) for b, rack in broker_racks.items()]
    parts = [
        Partition(t, i, tuple(reps), reps[0], tuple(reps), size_bytes=100 * (i + 1))
        for t, layout in topics.items()
        for i, reps in enumerate(layout)
    ]
    return ClusterModel(brokers, parts)


def pool_name(pools: PoolSet, topic: str) -> str | None:
    pool = pools.pool_for_topic(topic)
    return pool.name if pool else None


SEED_POOLS = {
    "pools": {
        "pool1": {"brokers": [1, 2, 3], "topics": ["t1"], "topic_patterns": ["orders\\..*"]},
        "pool2": {"brokers": [4, 5, 6], "topic_patterns": ["t[45]"]},
        "pool3": {"brokers": [7, 8, 9]},
    },
    "default_pool": "pool3",
}


def nine_brokers(racks: bool = False) -> dict[int, str | None]:
    return {b: (f"r{(b - 1) % 3}" if racks else None) for b in range(1, 10)}


# -- the file --------------------------------------------------------------------------------
def test_example_pools_file_loads_and_fits_the_example_cluster() -> None:
    pools = load_pools(EXAMPLES / "pools.yaml")
    cluster = load_snapshot(EXAMPLES / "cluster.json")
    pools.validate(cluster)
    assert set(pools.pools) == {"payments", "analytics", "shared"}
    assert pools.pools["payments"] == Pool(
        "payments", frozenset({1, 2, 3}), ("ledger",), ("payments\\..*",)
    )
    assert pools.default_pool is pools.pools["shared"]
    assert pools.misplaced(cluster), "the example has topics to migrate"


def test_json_pools_file_is_accepted(tmp_path: Path) -> None:
    f = tmp_path / "pools.json"
    f.write_text('{"pools": {"a": {"brokers": [1, 2]}}}')
    assert load_pools(f).pools["a"].brokers == {1, 2}


def test_topic_lookup_order_exact_then_pattern_then_default() -> None:
    pools = pools_from_dict(SEED_POOLS)
    assert pool_name(pools, "t1") == "pool1"  # exact
    assert pool_name(pools, "orders.eu") == "pool1"  # pattern
    assert pool_name(pools, "t4") == "pool2"
    assert pool_name(pools, "t44") == "pool3"  # patterns match the whole name only
    assert pool_name(pools, "xorders.eu") == "pool3"
    assert pools.pool_of_broker(5) is pools.pools["pool2"]
    assert pools.pool_of_broker(10) is None


def test_exact_name_wins_over_another_pools_pattern() -> None:
    pools = pools_from_dict(
        {
            "pools": {
                "a": {"brokers": [1], "topics": ["t5"]},
                "b": {"brokers": [2], "topic_patterns": ["t.*"]},
            }
        }
    )
    assert pool_name(pools, "t5") == "a"


def test_without_default_pool_unmatched_topics_are_unpooled() -> None:
    pools = pools_from_dict({"pools": {"a": {"brokers": [1]}}})
    assert pools.pool_for_topic("anything") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pools: {a: {brokers: []}}", "pool 'a' has no brokers"),
        ("pools: {a: {}}", "pool 'a' has no brokers"),
        (
            "pools: {a: {brokers: [1, 2]}, b: {brokers: [3, 2]}}",
            "broker 2 is in two pools: 'a' and 'b'",
        ),
        ("pools: {a: {brokers: [1, 1]}}", "pool 'a': broker 1 is listed twice"),
        ("pools: {a: {brokers: [1]}, a: {brokers: [2]}}", "key 'a' appears twice"),
        ("pools: {a: {brokers: [1], topic_patterns: ['(']}}", "pool 'a': bad topic pattern '('"),
        (
            "pools: {a: {brokers: [1], topics: [t]}, b: {brokers: [2], topics: [t]}}",
            "topic 't' is listed by two pools: 'a' and 'b'",
        ),
        ("pools: {a: {brokers: [x]}}", "pool 'a': brokers must be a list of broker ids"),
        ("pools: {a: {brokers: [true]}}", "pool 'a': brokers must be a list of broker ids"),
        ("pools: {a: {brokers: [1], topics: t}}", "pool 'a': topics must be a list"),
        ("pools: {a: {brokers: [1], topix: [t]}}", "pool 'a': unknown key 'topix'"),
        ("pools: {a: {brokers: [1]}}\ndefault_pool: b", "default_pool 'b' is not a defined pool"),
        ("pools: {a: {brokers: [1]}}\nextra: 1", "unknown key 'extra'"),
        ("pools: {}", "'pools' must map pool names"),
        ("- a\n- b", "must be a mapping with a 'pools' key"),
        ("pools: {a: [1", "is not valid YAML (line 1)"),
        ("", "must be a mapping with a 'pools' key"),
    ],
)
def test_malformed_pools_files_are_rejected_in_one_line(
    tmp_path: Path, text: str, message: str
) -> None:
    f = tmp_path / "pools.yaml"
    f.write_text(text)
    with pytest.raises(ValidationError) as e:
        load_pools(f)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_unreadable_pools_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"cannot read pools file .*missing\.yaml"):
        load_pools(tmp_path / "missing.yaml")


# -- validation against a cluster ------------------------------------------------------------
def test_validate_unknown_broker() -> None:
    cluster = cluster_of({b: None for b in range(1, 9)}, {})
    with pytest.raises(ValidationError, match="pool 'pool3': broker 9 is not in the cluster"):
        pools_from_dict(SEED_POOLS).validate(cluster)


def test_validate_topic_matching_two_pools() -> None:
    pools = pools_from_dict(
        {
            "pools": {
                "a": {"brokers": [1], "topic_patterns": ["t.*"]},
                "b": {"brokers": [2], "topic_patterns": [".*1"]},
            }
        }
    )
    pools.validate(cluster_of({1: None, 2: None}, {"x1": [[1]]}))  # matches only b
    with pytest.raises(
        ValidationError, match="topic 't1' matches the patterns of pools 'a' and 'b'"
    ):
        pools.validate(cluster_of({1: None, 2: None}, {"t1": [[1]]}))


def test_validate_rf_larger_than_pool() -> None:
    pools = pools_from_dict(
        {"pools": {"small": {"brokers": [1, 2], "topics": ["t"]}, "big": {"brokers": [3, 4, 5]}}}
    )
    cluster = cluster_of({b: None for b in range(1, 6)}, {"t": [[3, 4, 5]]})
    with pytest.raises(
        ValidationError,
        match="topic 't' has replication factor 3 but its pool 'small' has only 2 brokers",
    ):
        pools.validate(cluster)


def test_seed_000_layout_validates_and_nothing_is_misplaced() -> None:
    # Seed 000: 9 brokers in 3 pools of 3, topics t1..t9 with 9 partitions of RF 1 each.
    pools = pools_from_dict(
        {
            "pools": {
                f"pool{i}": {
                    "brokers": [3 * i - 2, 3 * i - 1, 3 * i],
                    "topics": [f"t{3 * i - 2}", f"t{3 * i - 1}", f"t{3 * i}"],
                }
                for i in (1, 2, 3)
            }
        }
    )
    topics = {f"t{t}": [[3 * ((t - 1) // 3) + 1 + p % 3] for p in range(9)] for t in range(1, 10)}
    cluster = cluster_of(nine_brokers(), topics)
    pools.validate(cluster)
    assert pools.misplaced(cluster) == []
    assert pools.topics_of("pool2", cluster) == ["t4", "t5", "t6"]


# -- assign a new topic / new partitions in the pool -----------------------------------------
def test_assign_new_topic_is_kafkas_assignment_over_the_pool() -> None:
    pools = pools_from_dict(SEED_POOLS)
    cluster = cluster_of(nine_brokers(racks=True), {})
    got = assign_in_pool(cluster, pools, "t4", 6, 3, fixed_start_index=1)
    pool_brokers = [BrokerMetadata(b, cluster.rack_of(b)) for b in (4, 5, 6)]
    assert got == assign_replicas_to_brokers(pool_brokers, 6, 3, fixed_start_index=1)
    assert all(set(reps) == {4, 5, 6} for reps in got.values())


def test_assign_random_start_stays_in_pool_and_is_reproducible_with_rng() -> None:
    pools = pools_from_dict(SEED_POOLS)
    cluster = cluster_of(nine_brokers(), {})
    a = assign_in_pool(cluster, pools, "orders.eu", 30, 2, rng=random.Random(7))
    assert a == assign_in_pool(cluster, pools, "orders.eu", 30, 2, rng=random.Random(7))
    assert {b for reps in a.values() for b in reps} == {1, 2, 3}
    assert all(len(set(r)) == 2 for r in a.values())


def test_assign_skips_dead_pool_brokers() -> None:
    pools = pools_from_dict(SEED_POOLS)
    cluster = cluster_of(nine_brokers(), {}, dead={2})
    got = assign_in_pool(cluster, pools, "t1", 4, 2, fixed_start_index=0)
    assert {b for reps in got.values() for b in reps} == {1, 3}
    with pytest.raises(
        ValidationError,
        match="pool 'pool1': Replication factor: 3 larger than available brokers: 2",
    ):
        assign_in_pool(cluster, pools, "t1", 4, 3)


def test_assign_new_partitions_continue_inside_the_pool() -> None:
    pools = pools_from_dict(SEED_POOLS)
    # t4 was created before the pools, over brokers 1..9: its new partitions still go to pool2.
    cluster = cluster_of(nine_brokers(), {"t4": [[1, 2], [2, 3], [3, 4]]})
    got = assign_in_pool(cluster, pools, "t4", 6)
    assert sorted(got) == [3, 4, 5]
    assert all(set(r) <= {4, 5, 6} and len(set(r)) == 2 for r in got.values())
    with pytest.raises(ValidationError, match="can only be increased"):
        assign_in_pool(cluster, pools, "t4", 3)
    with pytest.raises(ValidationError, match="exists with replication factor 2, not 3"):
        assign_in_pool(cluster, pools, "t4", 6, 3)


def test_assign_errors_name_the_problem() -> None:
    cluster = cluster_of(nine_brokers(), {})
    pools = pools_from_dict({"pools": {"a": {"brokers": [1, 2], "topics": ["t"]}}})
    with pytest.raises(ValidationError, match="topic 'u' belongs to no pool"):
        assign_in_pool(cluster, pools, "u", 3, 1)
    with pytest.raises(ValidationError, match="new topic 't' needs a replication factor"):
        assign_in_pool(cluster, pools, "t", 3)
    with pytest.raises(ValidationError, match="Number of partitions must be larger than 0"):
        assign_in_pool(cluster, pools, "t", 0, 1)
    overlapping = pools_from_dict(
        {
            "pools": {
                "a": {"brokers": [1], "topic_patterns": ["x.*"]},
                "b": {"brokers": [2], "topic_patterns": [".*y"]},
            }
        }
    )
    with pytest.raises(
        ValidationError, match="topic 'xy' matches the patterns of pools 'a' and 'b'"
    ):
        assign_in_pool(cluster, overlapping, "xy", 1, 1)
    ghost = pools_from_dict({"pools": {"a": {"brokers": [1, 42], "topics": ["t"]}}})
    with pytest.raises(ValidationError, match="pool 'a': broker 42 is not in the cluster"):
        assign_in_pool(cluster, ghost, "t", 3, 1)


# -- migrate existing topics into a pool -----------------------------------------------------
def _check_migration(
    cluster: ClusterModel, pools: PoolSet, pool: str, plan: ReassignmentPlan
) -> None:
    """The named properties every migration plan must have."""
    members = pools.pools[pool].brokers
    alive = {b for b in members if cluster.brokers[b].alive}
    for tp, new in plan.replicas.items():
        old = cluster.partitions[tp]
        assert len(new) == len(set(new)) == old.replication_factor, tp
        assert set(new) <= members, f"{tp} left outside the pool"
        assert set(new) - set(old.replicas) <= alive, f"{tp} gets a replica on a dead broker"
        if old.leader in members:
            assert new[0] == old.leader, f"{tp} lost its leader {old.leader}"
        racks = {cluster.rack_of(b) for b in alive}
        if None not in racks and len(racks) >= len(new):
            assert len({cluster.rack_of(b) for b in new}) == len(new), f"{tp} not rack-aware"
    for p in cluster:
        if pools.pool_for_topic(p.topic) is pools.pools[pool] and p.tp not in plan.replicas:
            assert set(p.replicas) <= members


def test_migrate_seed_scheme_moves_only_what_is_outside_and_keeps_leaders() -> None:
    pools = pools_from_dict(SEED_POOLS)
    layout = [[1, 4], [2, 3], [5, 6], [3, 9], [7, 1]]
    cluster = cluster_of(nine_brokers(), {"t1": layout, "t4": [[4, 5]]})
    plan = migrate_to_pool(cluster, pools, "pool1")
    _check_migration(cluster, pools, "pool1", plan)
    assert set(plan.replicas) == {("t1", 0), ("t1", 2), ("t1", 3), ("t1", 4)}  # t1-1 is in place
    assert (
        plan.replicas[TopicPartition("t1", 0)][0] == 1
        and plan.replicas[TopicPartition("t1", 3)][0] == 3
    )
    assert 1 in plan.replicas[TopicPartition("t1", 4)]  # a replica already in the pool stays
    assert plan.topics == ["t1"]


def test_migrate_counts_what_the_pool_already_holds() -> None:
    pools = pools_from_dict(
        {"pools": {"a": {"brokers": [1, 2, 3], "topics": ["busy", "t"]}, "b": {"brokers": [9]}}}
    )
    cluster = cluster_of({1: None, 2: None, 3: None, 9: None}, {"busy": [[1]] * 10, "t": [[9]] * 6})
    plan = migrate_to_pool(cluster, pools, "a", ["t"])
    placed = Counter(reps[0] for reps in plan.replicas.values())
    assert placed == {2: 3, 3: 3}


def test_migrate_evens_each_topic_out_over_the_pool() -> None:
    # Broker 1 holds pool b's topic (it leaves in b's migration) and two replicas of x; broker
    # 2 two of y. By replica counts alone x ended 2/1/3 and y 0/4/2 over brokers 1, 2, 3.
    pools = pools_from_dict({"pools": {"a": {"brokers": [1, 2, 3], "topics": ["x", "y"]},
                                       "b": {"brokers": [9], "topics": ["other"]}}})
    cluster = cluster_of({1: None, 2: None, 3: None, 9: None},
                         {"other": [[1]] * 4, "x": [[1]] * 2 + [[9]] * 4, "y": [[2]] * 2 + [[9]] * 4})
    after = cluster.with_assignment(migrate_to_pool(cluster, pools, "a").replicas)
    for topic in ("x", "y"):
        assert Counter(p.replicas[0] for p in after.topics[topic]) == {1: 2, 2: 2, 3: 2}


def test_migrate_drops_same_rack_kept_replica_when_racks_allow() -> None:
    racks: dict[int, str | None] = {1: "r0", 2: "r0", 3: "r1", 4: "r2", 9: "r0"}
    pools = pools_from_dict({"pools": {"a": {"brokers": [1, 2, 3, 4], "topics": ["t"]}}})
    cluster = cluster_of(racks, {"t": [[1, 2, 9]]})
    new = migrate_to_pool(cluster, pools, "a").replicas[TopicPartition("t", 0)]
    assert new[0] == 1 and {cluster.rack_of(b) for b in new} == {"r0", "r1", "r2"}


def test_migrate_nothing_to_do_is_an_empty_plan() -> None:
    pools = pools_from_dict(SEED_POOLS)
    cluster = cluster_of(nine_brokers(), {"t1": [[1, 2], [2, 3]]})
    assert len(migrate_to_pool(cluster, pools, "pool1")) == 0


def test_migrate_errors_name_the_problem() -> None:
    pools = pools_from_dict(SEED_POOLS)
    cluster = cluster_of(nine_brokers(), {"t1": [[7, 8]], "t4": [[1, 2]], "big": [[1, 2, 3, 4]]})
    with pytest.raises(ValidationError, match="unknown pool 'nope'"):
        migrate_to_pool(cluster, pools, "nope")
    with pytest.raises(ValidationError, match="unknown topic 'ghost'"):
        migrate_to_pool(cluster, pools, "pool1", ["ghost"])
    with pytest.raises(ValidationError, match="topic 't4' belongs to pool 'pool2', not 'pool1'"):
        migrate_to_pool(cluster, pools, "pool1", ["t4"])
    with pytest.raises(
        ValidationError,
        match="big-0 has replication factor 4 but pool 'pool3' has only 3 alive brokers",
    ):
        migrate_to_pool(cluster, pools, "pool3", ["big"])
    dead = cluster_of(nine_brokers(), {"t1": [[7, 8, 9]]}, dead={1})
    with pytest.raises(
        ValidationError, match="t1-0 has replication factor 3 but pool 'pool1' has only 2 alive"
    ):
        migrate_to_pool(dead, pools, "pool1")


def test_migrate_unpooled_topic_into_a_pool_then_check_plan() -> None:
    pools = pools_from_dict(
        {"pools": {"a": {"brokers": [1, 2]}, "b": {"brokers": [3], "topics": ["u"]}}}
    )
    cluster = cluster_of({1: None, 2: None, 3: None}, {"free": [[3]], "u": [[3]]})
    plan = migrate_to_pool(cluster, pools, "a", ["free"])
    assert plan.replicas == {TopicPartition("free", 0): (1,)}
    check_plan_in_pools(plan, pools)  # "free" has no pool: anywhere is fine
    with pytest.raises(
        ValidationError, match="u-0 would have a replica on broker 1, outside its pool 'b'"
    ):
        check_plan_in_pools(ReassignmentPlan.from_assignment({TopicPartition("u", 0): [1]}), pools)


def test_migrate_example_cluster_payments() -> None:
    pools = load_pools(EXAMPLES / "pools.yaml")
    cluster = load_snapshot(EXAMPLES / "cluster.json")
    plan = migrate_to_pool(cluster, pools, "payments")
    _check_migration(cluster, pools, "payments", plan)
    check_plan_in_pools(plan, pools)
    after = cluster.with_assignment(plan.replicas)
    assert not [p for p in pools.misplaced(after) if pool_name(pools, p.topic) == "payments"]


@st.composite
def migrations(draw: st.DrawFn) -> tuple[ClusterModel, PoolSet, bool]:
    """An empty pool of 2..8 brokers (racked or not) and a topic living outside it."""
    racked = draw(st.booleans())
    n_pool = draw(st.integers(2, 8))
    n_racks = draw(st.integers(1, 3))
    rf = draw(st.integers(1, min(3, n_pool)))
    n_parts = draw(st.integers(1, 40))
    pool_ids = list(range(n_pool))
    others = list(range(100, 104))
    broker_racks = {b: (f"r{b % n_racks}" if racked else None) for b in pool_ids + others}
    layout = [[others[(p + i) % 4] for i in range(rf)] for p in range(n_parts)]
    cluster = cluster_of(broker_racks, {"t": layout})
    pools = pools_from_dict(
        {"pools": {"p": {"brokers": pool_ids, "topics": ["t"]}, "o": {"brokers": others}}}
    )
    return cluster, pools, racked


@settings(max_examples=60, deadline=None)
@given(migrations())
def test_migrate_into_empty_pool_is_even(case: tuple[ClusterModel, PoolSet, bool]) -> None:
    cluster, pools, racked = case
    plan = migrate_to_pool(cluster, pools, "p")
    _check_migration(cluster, pools, "p", plan)
    assert len(plan) == len(cluster.topics["t"])
    racks = Counter(cluster.rack_of(b) for b in pools.pools["p"].brokers)
    if not racked or len(set(racks.values())) == 1:  # uneven racks force uneven brokers
        replicas = Counter(b for reps in plan.replicas.values() for b in reps)
        leaders = Counter(reps[0] for reps in plan.replicas.values())
        members = sorted(pools.pools["p"].brokers)
        assert max(replicas[b] for b in members) - min(replicas[b] for b in members) <= 1
        assert max(leaders[b] for b in members) - min(leaders[b] for b in members) <= 1


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_migrate_keeps_in_pool_replicas_and_moves_the_minimum(data: st.DataObject) -> None:
    n = 8
    rf = data.draw(st.integers(1, 3))
    layout = [
        data.draw(st.permutations(range(n)))[:rf] for _ in range(data.draw(st.integers(1, 25)))
    ]
    cluster = cluster_of({b: None for b in range(n)}, {"t": layout})
    members = data.draw(st.sets(st.integers(0, n - 1), min_size=rf, max_size=n - 1))
    rest = sorted(set(range(n)) - members)
    pools = pools_from_dict(
        {"pools": {"p": {"brokers": sorted(members), "topics": ["t"]}, "q": {"brokers": rest}}}
    )
    plan = migrate_to_pool(cluster, pools, "p")
    _check_migration(cluster, pools, "p", plan)
    moves = 0
    for tp, new in plan.replicas.items():
        old = cluster.partitions[tp].replicas
        assert {b for b in old if b in members} <= set(new)
        moves += len(set(new) - set(old))
    assert moves == sum(len([b for b in p.replicas if b not in members]) for p in cluster)
