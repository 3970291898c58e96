"""Reassignment plans: Kafka's JSON and its checks, and the diff, rollback and summary of a plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.model import NO_LEADER, Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.plan_report import (
    diff_plan,
    format_bytes,
    format_diff,
    format_summary,
    rollback_plan,
    summarize_plan,
)

GiB = 1024**3


def cluster() -> ClusterModel:
    """4 brokers on 2 racks; sizes chosen so byte totals are easy to check by hand."""
    brokers = [Broker(1, "a"), Broker(2, "a"), Broker(3, "b"), Broker(4, "b")]
    parts = [
        Partition("orders", 0, (1, 2), leader=1, size_bytes=10 * GiB),
        Partition("orders", 1, (2, 3), leader=3, size_bytes=20 * GiB),  # led by a follower
        Partition("orders", 2, (3, 4), leader=NO_LEADER, size_bytes=1 * GiB),  # offline
        Partition("logs", 0, (4, 1), leader=4, size_bytes=5 * GiB),
    ]
    return ClusterModel(brokers, parts)


def plan_of(entries: dict[tuple[str, int], tuple[int, ...]]) -> ReassignmentPlan:
    return ReassignmentPlan({TopicPartition(*k): v for k, v in entries.items()})


# -- Kafka's JSON ----------------------------------------------------------------------------
def test_json_round_trip_one_partition_per_line(tmp_path: Path) -> None:
    plan = ReassignmentPlan.from_assignment(
        {TopicPartition("b", 1): [3, 1], TopicPartition("a", 0): [1, 2]}
    )
    assert plan.partitions == [("a", 0), ("b", 1)]  # sorted like Kafka's tool writes them
    text = plan.to_json()
    assert text.splitlines()[1] == '{"topic":"a","partition":0,"replicas":[1,2]},'
    path = tmp_path / "plan.json"
    plan.write(path)
    assert ReassignmentPlan.read(path) == plan
    assert json.loads(text) == plan.to_dict()


def test_log_dirs_kept_only_when_not_any() -> None:
    data = {
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": "t", "partition": 1, "replicas": [1, 2], "log_dirs": ["/d1", "any"]},
        ]
    }
    plan = ReassignmentPlan.from_dict(data)
    assert plan.log_dirs == {TopicPartition("t", 1): ("/d1", "any")}
    assert "log_dirs" not in plan.to_dict()["partitions"][0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "reassignment JSON is malformed"),
        ("[]", "reassignment JSON must be an object"),
        ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
        ('{"partitions":{}}', "Expected `partitions` to be a list"),
        ('{"partitions":[1]}', "Expected a partition object, received 1"),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', "No such field exists: `topic`"),
        ('{"partitions":[{"topic":"t","replicas":[1]}]}', "No such field exists: `partition`"),
        ('{"partitions":[{"topic":1,"partition":0,"replicas":[1]}]}', "Expected `String` value"),
        (
            '{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}',
            "Expected `Integer` value",
        ),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[true]}]}', "Expected `Integer`"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":1}]}', "Expected `Array` value"),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
            "Size of replicas list [1, 2] is different from size of log dirs list [any] "
            "for partition t-0",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
            '{"topic":"t","partition":0,"replicas":[2]}]}',
            "Partition reassignment contains duplicate topic partitions: t-0",
        ),
    ],
)
def test_parse_errors_are_kafkas(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        ReassignmentPlan.from_json(text)
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({}, "Partition reassignment list cannot be empty"),
        ({("t", 0): ()}, "Partition replica list cannot be empty (t-0)"),
        (
            {("t", 0): (1, 2, 1)},
            "Partition replica lists may not contain duplicate entries: t-0 contains multiple "
            "entries for 1",
        ),
    ],
)
def test_validate_without_cluster(entries: dict, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        plan_of(entries).validate()
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({("nope", 0): (1, 2)}, "Topic nope not found."),
        (
            {("orders", 7): (1, 2)},
            "The proposed assignment contains non-existent partitions: orders-7",
        ),
        ({("orders", 0): (1, 9)}, "Unknown broker id 9"),
        ({("orders", 0): (8, 9)}, "Unknown broker ids 8,9"),
    ],
)
def test_validate_against_cluster(entries: dict, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        plan_of(entries).validate_against(cluster())
    assert str(e.value) == message


def test_diff_per_partition_per_broker_and_totals() -> None:
    plan = plan_of(
        {
            ("orders", 0): (1, 2),  # unchanged, leader already the preferred one
            ("orders", 1): (4, 3),  # 2 -> 4 added, leader 3 -> 4
            ("orders", 2): (4, 3),  # reorder only, offline leader -> 4
            ("logs", 0): (4, 2),  # 1 -> 2, leader stays 4
        }
    )
    diff = diff_plan(plan, cluster())
    by_tp = {c.tp: c for c in diff.partitions}
    assert set(by_tp) == {("orders", 1), ("orders", 2), ("logs", 0)}
    o1 = by_tp[TopicPartition("orders", 1)]
    assert (o1.added, o1.removed, o1.leader_before, o1.leader_after) == ((4,), (2,), 3, 4)
    assert o1.bytes_to_move == 20 * GiB
    assert (
        by_tp[TopicPartition("orders", 2)].added == ()
        and by_tp[TopicPartition("orders", 2)].leader_changes
    )
    assert not by_tp[TopicPartition("logs", 0)].leader_changes
    brokers = {b.broker: b for b in diff.brokers}
    assert (brokers[4].replicas_in, brokers[4].bytes_in, brokers[4].leaders_gained) == (
        1,
        20 * GiB,
        2,
    )
    assert (brokers[2].replicas_in, brokers[2].replicas_out) == (1, 1)
    assert (brokers[2].bytes_in, brokers[2].bytes_out) == (5 * GiB, 20 * GiB)
    assert (brokers[1].replicas_out, brokers[1].bytes_out) == (1, 5 * GiB)
    assert brokers[3].leaders_lost == 1
    assert diff.totals() == {
        "partitions_changed": 3,
        "partitions_unchanged": 1,
        "replica_moves": 2,
        "leader_changes": 2,
        "bytes_to_move": 25 * GiB,
    }
    assert json.loads(json.dumps(diff.to_dict()))["totals"]["bytes_to_move"] == 25 * GiB


def test_diff_rf_change_moves_one_full_copy_per_added_replica() -> None:
    diff = diff_plan(plan_of({("orders", 0): (1, 2, 3, 4)}), cluster())
    assert diff.replica_moves == 2 and diff.bytes_to_move == 20 * GiB


def test_diff_refuses_a_plan_that_does_not_fit_the_cluster() -> None:
    with pytest.raises(ValidationError, match="Unknown broker id 9"):
        diff_plan(plan_of({("orders", 0): (1, 9)}), cluster())


# -- rollback --------------------------------------------------------------------------------
def test_rollback_restores_the_current_assignment() -> None:
    before = cluster()
    plan = plan_of({("orders", 1): (4, 1), ("logs", 0): (2, 3)})
    rollback = rollback_plan(plan, before)
    assert rollback.replicas == {("orders", 1): (2, 3), ("logs", 0): (4, 1)}
    after = before.with_assignment(plan.replicas)
    assert after.with_assignment(rollback.replicas).assignment == before.assignment
    assert diff_plan(rollback, after).replica_moves == diff_plan(plan, before).replica_moves


def test_rollback_of_a_bad_plan_is_an_error() -> None:
    with pytest.raises(ValidationError, match=r"Topic ghost not found\."):
        rollback_plan(plan_of({("ghost", 0): (1,)}), cluster())


# -- summary ---------------------------------------------------------------------------------
def test_summary_before_after_counts() -> None:
    plan = plan_of({("orders", 1): (4, 3), ("logs", 0): (4, 2)})
    summary = summarize_plan(plan, cluster())
    rows = {
        b.broker: (b.replicas_before, b.replicas_after, b.leaders_before, b.leaders_after)
        for b in summary.brokers
    }
    # leaders before: 1 (orders-0), 3 (orders-1), 4 (logs-0); orders-2 is offline.
    assert rows == {1: (2, 1, 1, 1), 2: (2, 2, 0, 0), 3: (2, 2, 1, 0), 4: (2, 3, 1, 2)}
    assert summary.brokers[0].rack == "a"
    assert summary.totals["replica_moves"] == 2
    assert sum(r[0] for r in rows.values()) == sum(r[1] for r in rows.values())


def test_human_formats() -> None:
    plan = plan_of({("orders", 1): (4, 3)})
    text = format_diff(diff_plan(plan, cluster()))
    assert "orders-1" in text and "3->4" in text and "20.0 GiB" in text
    assert text.splitlines()[-1] == (
        "1 partitions change (0 unchanged), 1 replica moves, 1 leader changes, 20.0 GiB to move"
    )
    noop = format_diff(diff_plan(plan_of({("orders", 0): (1, 2)}), cluster()))
    assert noop.startswith("0 partitions change (1 unchanged), 0 replica moves")
    summary = format_summary(summarize_plan(plan, cluster())).splitlines()
    assert summary[0].split() == [
        "broker",
        "rack",
        "replicas",
        "before",
        "after",
        "leaders",
        "before",
        "after",
    ]
    assert summary[4].split() == ["4", "b", "2", "3", "1", "2"]
    assert all(line == line.rstrip() for line in summary)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (5 * GiB, "5.0 GiB"),
        (3 * 1024**5, "3072.0 TiB"),
    ],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text
