"""End to end on a real ZooKeeper: the emulator plays ZooKeeper-mode Kafka, we use our backend.

Every step is observed through the ZooKeeperBackend only (the emulator is touched to kill a
broker and to move its clock), the way an operator's tool sees a real cluster: create a topic,
reassign it with a throttle, watch the progress, verify with Kafka's three outcomes, re-elect
the preferred leaders, remove the throttles.
"""

from __future__ import annotations

import threading

import pytest

from kafka_ops.backends.base import ConfigResource
from kafka_ops.errors import ReassignmentInProgressError
from kafka_ops.executor.verify import VerifyStatus, verify_plan
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import (
    ThrottleConfig,
    apply_throttle_changes,
    calculate_move,
    calculate_throttle_changes,
    calculate_throttles,
    clear_throttles,
)

MB = 1_000_000


def statuses(backend, plan):
    return {str(r.tp): r.status for r in verify_plan(backend, plan)}


def test_create_reassign_throttled_verify_elect_and_clear(zk_emulated, wait_until):
    b = zk_emulated.backend
    b.create_topic("payments", {0: [1, 2], 1: [2, 3]})
    wait_until(
        lambda: [p.leader for p in b.describe_cluster().topics.get("payments", [])] == [1, 2],
        what="payments created with leaders 1 and 2",
    )
    cluster = b.describe_cluster()
    plan = ReassignmentPlan.from_assignment(
        {TP("orders", 0): (4, 5, 6), TP("payments", 0): (5, 1), TP("payments", 1): (6, 4)}
    )
    moves = {
        tp: calculate_move(cluster.partitions[tp].replicas, t) for tp, t in plan.replicas.items()
    }
    throttles = calculate_throttles(moves, 2 * MB)
    apply_throttle_changes(b, calculate_throttle_changes(ThrottleConfig({}, {}), throttles))
    assert b.describe_configs(ConfigResource.topic("orders")) == {
        "leader.replication.throttled.replicas": "0:1,0:2,0:3",
        "follower.replication.throttled.replicas": "0:4,0:5,0:6",
    }
    b.alter_reassignments(plan.replicas)
    zk_emulated.wait_emulator(
        lambda c: (
            c.topic_config("orders")
            and c.topic_config("payments")
            and all(
                tp in c.list_reassignments() or tuple(c.partitions[tp].replicas) == target
                for tp, target in plan.replicas.items()
            )
        ),
        "moves and throttles reached the controller",
    )

    # Progress: the controller writes RS = TRS + ORS with AR/RR; the empty topic moves at once.
    zk_emulated.advance(1)
    ongoing = wait_until(
        lambda: (o := b.list_reassignments()) and set(o) == {TP("orders", 0)} and o,
        what="only orders-0 still moving",
    )
    assert ongoing[TP("orders", 0)].replicas == (4, 5, 6, 1, 2, 3)
    assert statuses(b, plan) == {
        "orders-0": VerifyStatus.IN_PROGRESS,
        "payments-0": VerifyStatus.COMPLETED,
        "payments-1": VerifyStatus.COMPLETED,
    }
    zk_emulated.advance(5)  # 10 MB to three followers through a 2 MB/s leader throttle: 15 s
    assert TP("orders", 0) in b.list_reassignments()
    zk_emulated.advance(30)
    wait_until(lambda: not b.list_reassignments(), what="orders-0 completed")
    assert set(statuses(b, plan).values()) == {VerifyStatus.COMPLETED}

    # orders-0 and payments-1 lost their leader with the old replicas, so the controller
    # elected one from the target; payments-0 kept leader 1 until the preferred election.
    assert b.describe_cluster().partitions[TP("payments", 0)].leader == 1
    assert b.elect_preferred_leaders(plan.partitions) == dict.fromkeys(plan.partitions)
    after = b.describe_cluster()
    assert {str(tp): after.partitions[tp].leader for tp in plan.partitions} == {
        "orders-0": 4,
        "payments-0": 5,
        "payments-1": 6,
    }

    clear_throttles(b, plan.topics, range(1, 7))
    for topic in plan.topics:
        assert b.describe_configs(ConfigResource.topic(topic)) == {}
    for broker in range(1, 7):
        assert b.describe_configs(ConfigResource.broker(broker)) == {}


def test_broker_killed_mid_reassignment_leaves_it_pending(zk_emulated, wait_until):
    b = zk_emulated.backend
    tp = TP("orders", 2)
    lost = threading.Event()
    stop_watch = b.watch_brokers(lambda live: lost.set() if 5 not in live else None)
    b.alter_reassignments({tp: [4, 5, 6]})
    wait_until(lambda: tp in b.list_reassignments(), what="orders-2 reassigning")
    zk_emulated.wait_emulator(lambda c: tp in c.list_reassignments(), "move reached the controller")

    zk_emulated.cluster.stop_broker(5)
    assert lost.wait(10), "the liveness watch did not report broker 5 gone"
    stop_watch()
    zk_emulated.advance(600)  # far longer than the copy needs: 4 and 6 catch up, 5 cannot
    wait_until(
        lambda: {4, 6} <= set(b.describe_cluster().partitions[tp].isr), what="4 and 6 in ISR"
    )
    cluster = b.describe_cluster()
    assert cluster.brokers[5].alive is False
    ongoing = b.list_reassignments()[tp]
    assert (ongoing.replicas, ongoing.adding) == ((4, 5, 6, 3, 1, 2), (4, 5, 6))
    assert 5 not in cluster.partitions[tp].isr
    plan = ReassignmentPlan({tp: (4, 5, 6)})
    assert statuses(b, plan) == {"orders-2": VerifyStatus.IN_PROGRESS}

    zk_emulated.cluster.start_broker(5)
    b.wait_for_brokers([5], alive=True, timeout=10)
    zk_emulated.advance(60)
    wait_until(
        lambda: not b.list_reassignments(), what="reassignment finished after broker 5 returned"
    )
    assert statuses(b, plan) == {"orders-2": VerifyStatus.COMPLETED}


def test_second_reassignment_is_refused_with_a_clear_message(zk_emulated, wait_until):
    b = zk_emulated.backend
    b.alter_reassignments({TP("orders", 0): [4, 5, 6]})
    wait_until(lambda: b.list_reassignments(), what="first reassignment running")
    zk_emulated.wait_emulator(lambda c: c.list_reassignments(), "first move reached the controller")
    with pytest.raises(
        ReassignmentInProgressError, match="^There is an existing assignment running.$"
    ):
        b.alter_reassignments({TP("events", 0): [5, 6]})
    assert set(b.list_reassignments()) == {TP("orders", 0)}
    zk_emulated.advance(60)
    wait_until(lambda: not b.list_reassignments(), what="first reassignment done")
    b.alter_reassignments({TP("events", 0): [5, 6]})  # accepted once the znode is gone
    zk_emulated.wait_emulator(
        lambda c: c.list_reassignments(), "second move reached the controller"
    )
    zk_emulated.advance(60)
    wait_until(
        lambda: b.describe_cluster().partitions[TP("events", 0)].replicas == (5, 6),
        what="events-0 moved",
    )


def test_cancel_fails_the_controller_over_and_keeps_the_original_order(zk_emulated, wait_until):
    b = zk_emulated.backend
    tp = TP("orders", 1)
    epoch = zk_emulated.cluster.controller_epoch
    b.alter_reassignments({tp: [4, 5, 6]})
    zk_emulated.wait_emulator(lambda c: tp in c.list_reassignments(), "move reached the controller")
    b.alter_reassignments({tp: None})
    wait_until(lambda: not b.list_reassignments(), what="cancelled")
    zk_emulated.wait_emulator(
        lambda c: c.controller_epoch > epoch and not c.list_reassignments(),
        "the new controller loaded the reverted topic znode",
    )
    zk_emulated.advance(600)
    wait_until(lambda: b.describe_cluster().partitions[tp].leader == 2, what="leader 2 kept")
    assert b.describe_cluster().partitions[tp].replicas == (2, 3, 1)  # ORS, in its order
    assert not b.list_reassignments()
