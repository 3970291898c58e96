"""The cluster model: queries by broker, topic and rack, and derived models."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.model import NO_LEADER, Broker, ClusterModel, Partition, TopicPartition


@pytest.fixture
def model() -> ClusterModel:
    brokers = [Broker(3, "b"), Broker(1, "a"), Broker(2, "a"), Broker(4, None, alive=False)]
    parts = [
        Partition("t", 1, (2, 3), leader=3, isr=(3,)),
        Partition("t", 0, (1, 2), leader=1),
        Partition("u", 0, (3, 9), leader=NO_LEADER),  # 9 is not a registered broker
    ]
    return ClusterModel(brokers, parts)


def test_order_and_counts(model: ClusterModel) -> None:
    assert model.broker_ids == [1, 2, 3, 4]
    assert model.alive_broker_ids == [1, 2, 3]
    assert list(model.partitions) == [("t", 0), ("t", 1), ("u", 0)]
    assert model.replica_count == 6
    assert repr(model) == "ClusterModel(brokers=4, partitions=3, replicas=6)"
    assert [p.tp for p in model] == list(model.partitions)


def test_by_broker(model: ClusterModel) -> None:
    assert [p.tp for p in model.partitions_on(2)] == [("t", 0), ("t", 1)]
    assert [p.tp for p in model.leaders_on(3)] == [("t", 1)]
    assert model.leaders_on(2) == []
    assert [p.tp for p in model.partitions_on(9)] == [("u", 0)]  # unregistered but holding data
    assert model.partitions_on(4) == [] and model.partitions_on(77) == []


def test_by_topic(model: ClusterModel) -> None:
    assert [p.partition for p in model.topic("t")] == [0, 1]
    assert list(model.topics) == ["t", "u"]
    assert model.partition("t", 1).replicas == (2, 3)
    with pytest.raises(ValidationError, match="unknown topic 'v'"):
        model.topic("v")
    with pytest.raises(ValidationError, match="unknown partition t-5"):
        model.partition("t", 5)
    with pytest.raises(ValidationError, match="unknown broker 8"):
        model.broker(8)


def test_by_rack(model: ClusterModel) -> None:
    assert model.racks == {"a": [1, 2], "b": [3], None: [4]}
    assert model.brokers_in_rack("a") == [1, 2]
    assert model.brokers_in_rack("zz") == []
    assert (model.rack_of(3), model.rack_of(4), model.rack_of(9)) == ("b", None, None)


def test_partition_properties(model: ClusterModel) -> None:
    t1, u0 = model.partition("t", 1), model.partition("u", 0)
    assert (t1.preferred_leader, t1.replication_factor, t1.is_under_replicated) == (2, 2, True)
    assert u0.is_offline and not t1.is_offline
    assert str(TopicPartition("t", 1)) == "t-1"
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]) == [
        ("a", 2),
        ("a", 10),
        ("b", 0),
    ]


def test_with_assignment_is_a_new_model(model: ClusterModel) -> None:
    moved = model.with_assignment({TopicPartition("t", 1): [3, 1]})
    p = moved.partition("t", 1)
    assert (p.replicas, p.leader, p.isr) == ((3, 1), 3, (3, 1))
    assert model.partition("t", 1).replicas == (2, 3)  # the original is untouched
    assert [q.tp for q in moved.partitions_on(1)] == [("t", 0), ("t", 1)]
    kept = model.with_assignment({TopicPartition("t", 1): [1, 3]}, move_leaders=False)
    assert kept.partition("t", 1).leader == 3  # still a replica: leadership stays
    gone = model.with_assignment({TopicPartition("t", 0): [3, 2]}, move_leaders=False)
    assert gone.partition("t", 0).leader == 3  # old leader left: the new first replica leads
    with pytest.raises(ValidationError, match="unknown partition x-0"):
        model.with_assignment({TopicPartition("x", 0): [1]})


def test_with_brokers_and_immutability(model: ClusterModel) -> None:
    bigger = model.with_brokers([*model.brokers.values(), Broker(5, "b")])
    assert bigger.brokers_in_rack("b") == [3, 5] and model.brokers_in_rack("b") == [3]
    with pytest.raises(FrozenInstanceError):
        model.broker(1).rack = "z"  # type: ignore[misc]


def test_duplicate_partition_is_rejected() -> None:
    with pytest.raises(ValidationError, match="same partition twice"):
        ClusterModel([Broker(1)], [Partition("t", 0, (1,)), Partition("t", 0, (1,))])
