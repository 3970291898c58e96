"""The ClusterBackend contract, one suite for every backend (``emulated`` is parametrised).

Each test drives the backend against the emulator and observes the result through the same
backend; the emulator is touched only to inject faults and to move its clock. Expected values
are written out from ``contract_cluster()`` rather than read back from the emulator, so a
regression on either side fails here. Where Kafka's two modes really differ (ZooKeeper mode
refuses a second reassignment), the test says which behaviour each backend promises.
"""

from __future__ import annotations

import pytest

from kafka_ops.backends.base import ClusterBackend, ConfigResource
from kafka_ops.errors import (
    NoReassignmentInProgressError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.model import TopicPartition as TP

MB = 1_000_000
THROTTLE = 2 * MB  # bytes/s: moving a 10 MB partition to 3 new brokers takes 15 s, not 0.3 s


def partitions_of(backend: ClusterBackend, topic: str, count: int):
    """The topic's partitions once all ``count`` exist with a leader, else None."""
    cluster = backend.describe_cluster()
    parts = cluster.topics.get(topic, [])
    return parts if len(parts) == count and all(p.leader >= 0 for p in parts) else None


def throttle(backend: ClusterBackend, topic: str, leaders: str, followers: str, brokers) -> None:
    for b in brokers:
        backend.alter_configs(
            ConfigResource.broker(b),
            {
                "leader.replication.throttled.rate": str(THROTTLE),
                "follower.replication.throttled.rate": str(THROTTLE),
            },
        )
    backend.alter_configs(
        ConfigResource.topic(topic),
        {
            "leader.replication.throttled.replicas": leaders,
            "follower.replication.throttled.replicas": followers,
        },
    )


def test_is_a_cluster_backend(emulated):
    assert isinstance(emulated.backend, ClusterBackend)


def test_describe_cluster(emulated):
    cluster = emulated.backend.describe_cluster()
    assert {b.id: (b.rack, b.alive) for b in cluster.brokers.values()} == {
        1: ("rack-a", True),
        2: ("rack-b", True),
        3: ("rack-c", True),
        4: ("rack-a", True),
        5: ("rack-b", True),
        6: ("rack-c", True),
    }
    assert {str(tp): (p.replicas, p.leader, p.isr) for tp, p in cluster.partitions.items()} == {
        "events-0": ((4, 5), 4, (4, 5)),
        "events-1": ((5, 6), 5, (5, 6)),
        "orders-0": ((1, 2, 3), 1, (1, 2, 3)),
        "orders-1": ((2, 3, 1), 2, (2, 3, 1)),
        "orders-2": ((3, 1, 2), 3, (3, 1, 2)),
    }


def test_create_topic_with_assignment_and_config(emulated, wait_until):
    b = emulated.backend
    b.create_topic("payments", {0: [4, 5], 1: [5, 6]}, {"retention.ms": "60000"})
    parts = wait_until(lambda: partitions_of(b, "payments", 2), what="payments created")
    assert [(p.replicas, p.leader, p.isr) for p in parts] == [
        ((4, 5), 4, (4, 5)),
        ((5, 6), 5, (5, 6)),
    ]
    assert b.describe_configs(ConfigResource.topic("payments")) == {"retention.ms": "60000"}
    with pytest.raises(ValidationError, match="already exists"):
        b.create_topic("payments", {0: [1, 2]})


def test_create_topic_on_unknown_broker_is_refused(emulated):
    with pytest.raises(ValidationError, match="9"):
        emulated.backend.create_topic("payments", {0: [1, 9]})
    assert "payments" not in emulated.backend.describe_cluster().topics


def test_create_partitions(emulated, wait_until):
    b = emulated.backend
    b.create_partitions("events", {2: [6, 4], 3: [4, 5]})
    parts = wait_until(lambda: partitions_of(b, "events", 4), what="events-2 and events-3")
    assert [(p.replicas, p.leader) for p in parts[2:]] == [((6, 4), 6), ((4, 5), 4)]


def test_throttled_reassignment_lists_progress_and_completes(emulated, wait_until):
    b = emulated.backend
    tp = TP("orders", 0)
    throttle(b, "orders", "0:1,0:2,0:3", "0:4,0:5,0:6", range(1, 7))
    b.alter_reassignments({tp: [4, 5, 6]})
    emulated.wait_emulator(
        lambda c: tp in c.list_reassignments() and c.topic_config("orders"), "move and throttles"
    )
    ongoing = wait_until(lambda: b.list_reassignments([tp]).get(tp), what="orders-0 reassigning")
    assert (ongoing.replicas, ongoing.adding, ongoing.removing) == (
        (4, 5, 6, 1, 2, 3),
        (4, 5, 6),
        (1, 2, 3),
    )
    assert b.list_reassignments([TP("orders", 1)]) == {}
    described = b.describe_cluster().partitions  # AR/RR in the model too (KIP-455)
    moving = described[tp]
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas,
            moving.target_replicas) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (4, 5, 6))
    assert not described[TP("orders", 1)].reassignment_in_progress

    emulated.advance(5)  # a third of the throttled time: unthrottled it would be done
    assert tp in b.list_reassignments()

    emulated.advance(20)
    wait_until(lambda: not b.list_reassignments(), what="reassignment completed")
    moved = b.describe_cluster().partitions[tp]
    assert moved.replicas == (4, 5, 6)
    assert set(moved.isr) == {4, 5, 6} and moved.leader in (4, 5, 6)


def test_cancel_restores_the_original_replicas(emulated, wait_until):
    b = emulated.backend
    tp = TP("orders", 1)
    throttle(b, "orders", "1:2,1:3,1:1", "1:4,1:5,1:6", range(1, 7))
    b.alter_reassignments({tp: [4, 5, 6]})
    wait_until(lambda: tp in b.list_reassignments(), what="orders-1 reassigning")
    emulated.wait_emulator(
        lambda c: tp in c.list_reassignments() and c.topic_config("orders"), "move and throttles"
    )
    b.alter_reassignments({tp: None})
    wait_until(lambda: not b.list_reassignments(), what="reassignment cancelled")
    emulated.wait_emulator(lambda c: not c.list_reassignments(), "cancel reached the controller")
    # RS minus AR: ZooKeeper mode keeps the original order, KRaft sorts the removing replicas.
    assert sorted(b.describe_cluster().partitions[tp].replicas) == [1, 2, 3]
    emulated.advance(60)  # long enough for the cancelled move to have finished, had it resumed
    wait_until(
        lambda: b.describe_cluster().partitions[tp].leader >= 0, what="orders-1 has a leader"
    )
    cluster = b.describe_cluster()
    assert sorted(cluster.partitions[tp].replicas) == [1, 2, 3] and not b.list_reassignments()
    with pytest.raises(NoReassignmentInProgressError):
        b.alter_reassignments({tp: None})


def test_second_reassignment_while_one_runs(emulated, wait_until):
    b = emulated.backend
    throttle(b, "orders", "0:1,0:2,0:3,2:3,2:1,2:2", "0:4,2:4", range(1, 7))
    b.alter_reassignments({TP("orders", 0): [4, 2, 3]})
    wait_until(lambda: b.list_reassignments(), what="first reassignment running")
    if b.supports_incremental_reassignment:
        b.alter_reassignments({TP("orders", 2): [4, 1, 2]})
        assert set(b.list_reassignments()) == {TP("orders", 0), TP("orders", 2)}
    else:
        with pytest.raises(ReassignmentInProgressError, match="existing assignment"):
            b.alter_reassignments({TP("orders", 2): [4, 1, 2]})
        assert set(b.list_reassignments()) == {TP("orders", 0)}


@pytest.mark.parametrize(
    "targets, message",
    [
        ({TP("orders", 0): [1, 2, 9]}, "9"),
        ({TP("orders", 0): [1, 2, 2]}, "2"),
        ({TP("orders", 0): []}, "empty"),
        ({TP("orders", 7): [1, 2, 3]}, "orders-7|orders:7|partition"),
    ],
    ids=["unknown-broker", "duplicate-replica", "empty", "unknown-partition"],
)
def test_bad_reassignments_are_refused_and_change_nothing(emulated, targets, message):
    with pytest.raises(ValidationError, match=message):
        emulated.backend.alter_reassignments(targets)
    assert emulated.backend.list_reassignments() == {}
    assert emulated.backend.describe_cluster().partitions[TP("orders", 0)].replicas == (1, 2, 3)


def test_nothing_to_cancel(emulated):
    with pytest.raises(NoReassignmentInProgressError):
        emulated.backend.alter_reassignments({TP("orders", 0): None})


def test_configs_set_and_cleared(emulated):
    b = emulated.backend
    throttle(b, "orders", "0:1", "0:4", [1, 4])
    assert b.describe_configs(ConfigResource.topic("orders")) == {
        "leader.replication.throttled.replicas": "0:1",
        "follower.replication.throttled.replicas": "0:4",
    }
    assert b.describe_configs(ConfigResource.broker(4))[
        "follower.replication.throttled.rate"
    ] == str(THROTTLE)
    b.alter_configs(
        ConfigResource.topic("orders"),
        delete_configs=[
            "leader.replication.throttled.replicas",
            "follower.replication.throttled.replicas",
        ],
    )
    for broker in (1, 4):
        b.alter_configs(
            ConfigResource.broker(broker),
            delete_configs=[
                "leader.replication.throttled.rate",
                "follower.replication.throttled.rate",
            ],
        )
    assert b.describe_configs(ConfigResource.topic("orders")) == {}
    assert b.describe_configs(ConfigResource.broker(1)) == {}
    assert b.describe_configs(ConfigResource.broker(4)) == {}


def test_preferred_leader_election(emulated, wait_until):
    b = emulated.backend
    tp = TP("orders", 0)
    emulated.cluster.stop_broker(1)
    # Both are eventual: the emulator's ZooKeeper face may publish the new leader before it
    # drops broker 1's registration (real Kafka's controller does the reverse).
    cluster = wait_until(
        lambda: ((c := b.describe_cluster()).partitions[tp].leader not in (-1, 1)
                 and not c.brokers[1].alive and c),
        what="leader moved off 1 and broker 1 reported dead",
    )
    assert cluster.brokers[1].alive is False  # holds replicas, not registered: reported dead
    assert b.elect_preferred_leaders([tp]) == {tp: "PREFERRED_LEADER_NOT_AVAILABLE"}

    emulated.cluster.start_broker(1)
    emulated.advance(1)  # start_broker is synchronous in the emulator: no wait needed
    wait_until(
        lambda: 1 in b.describe_cluster().partitions[tp].isr, what="broker 1 back in the ISR"
    )
    assert b.elect_preferred_leaders([tp, TP("orders", 1)]) == {tp: None, TP("orders", 1): None}
    assert b.describe_cluster().partitions[tp].leader == 1
