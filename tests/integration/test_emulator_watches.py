"""The ZooKeeper face's watches behave like Kafka's controller (issue 17).

Kafka's controller registers a handler and checks the znode's existence in one step
(``registerZNodeChangeHandlerAndCheckExistence``), so an admin znode created while the watch
was not armed is still acted on. These tests drive the face through our own ZooKeeper backend
and through a plain kazoo client, over a real ZooKeeper, and check every znode is acted on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.zk_face import ZooKeeperFace
from kafka_ops.executor.leaders import elect_preferred_leaders
from kafka_ops.model import (
    Broker,
    BrokerCapacity,
    ClusterModel,
    Partition,
    TopicPartition,
)

pytestmark = pytest.mark.zookeeper


def unbalanced_leaders(partitions: int, brokers: int = 6) -> ClusterModel:
    """Every partition led by its second replica: each needs a preferred leader election."""
    capacity = BrokerCapacity(10**12, 10**9, 10**9)
    nodes = [Broker(i, host="localhost", port=9090 + i, capacity=capacity)
             for i in range(1, brokers + 1)]
    parts = []
    for n in range(partitions):
        replicas = tuple((n + k) % brokers + 1 for k in range(3))
        parts.append(Partition(f"t{n % 20}", n // 20, replicas, replicas[1], replicas,
                               size_bytes=1000))
    return ClusterModel(nodes, parts, {})


def wait_until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within timeout")
        time.sleep(0.02)


@pytest.fixture
def face_on(zk_connect: str) -> Iterator[Callable[[ClusterModel], ZooKeeperFace]]:
    faces: list[ZooKeeperFace] = []

    def start(model: ClusterModel) -> ZooKeeperFace:
        cluster = EmulatedCluster(model, clock=ManualClock(), cluster_id="watch-test")
        faces.append(ZooKeeperFace(cluster, zk_connect).start())
        return faces[-1]

    yield start
    for face in faces:
        face.stop()


@pytest.mark.slow
def test_1200_leader_changes_elected_in_batches_of_200(face_on, zk_connect):
    """The issue's reproduction: the second batch's znode was never acted on."""
    face = face_on(unbalanced_leaders(1200))
    targets = {tp: p.replicas for tp, p in face.cluster.to_model().partitions.items()}
    with ZooKeeperBackend(zk_connect, election_timeout_s=20.0) as backend:
        report = elect_preferred_leaders(backend, targets, batch_size=200)
        assert len(report.elected) == 1200
        assert report.errors == {} and report.misplaced == {}
        described = backend.describe_cluster()
    assert all(p.leader == p.replicas[0] for p in described.partitions.values())
    assert all(p.leader == p.replicas[0] for p in face.cluster.to_model().partitions.values())


def test_admin_znode_created_between_event_and_rearm_is_acted_on(face_on, zk_connect):
    """Delete-then-create faster than the face re-arms: the DELETED event must still lead to
    the new znode (Kafka checks existence when it registers)."""
    face = face_on(unbalanced_leaders(40))
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    try:
        for round_ in range(20):
            tp = TopicPartition(f"t{round_}", 0)
            data = json.dumps({"version": 1, "partitions": [
                {"topic": tp.topic, "partition": tp.partition}]}).encode()
            # Create the next election the moment the previous one is gone.
            wait_until(lambda: zk.exists("/admin/preferred_replica_election") is None)
            zk.create("/admin/preferred_replica_election", data, makepath=True)
        wait_until(lambda: zk.exists("/admin/preferred_replica_election") is None)
        face.flush()
        led = face.cluster.to_model().partitions
        assert [tp for tp in led if tp.partition == 0 and int(tp.topic[1:]) < 20
                and led[tp].leader != led[tp].replicas[0]] == []
    finally:
        zk.stop()
        zk.close()


def test_state_znodes_are_written_before_the_election_znode_is_deleted(face_on, zk_connect):
    """Kafka's controller writes the leaders, then deletes the admin znode: whoever waits for
    the deletion reads the new leaders."""
    face = face_on(unbalanced_leaders(400))
    with ZooKeeperBackend(zk_connect) as backend:
        partitions = list(backend.describe_cluster().partitions)
        results = backend.elect_preferred_leaders(partitions)
        assert set(results.values()) == {None}
        described = backend.describe_cluster()
    assert all(p.leader == p.replicas[0] for p in described.partitions.values())
    face.flush()


def test_reassignment_znode_recreated_before_rearm_is_acted_on(face_on, zk_connect):
    face = face_on(unbalanced_leaders(40))
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    try:
        for n in range(10):
            tp = TopicPartition(f"t{n}", 0)
            current = face.cluster.to_model().partitions[tp].replicas
            target = [current[1], current[2], current[0]]  # reorder: completes at once
            data = json.dumps({"version": 1, "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": target}]}).encode()
            wait_until(lambda: zk.exists("/admin/reassign_partitions") is None)
            zk.create("/admin/reassign_partitions", data, makepath=True)
        wait_until(lambda: zk.exists("/admin/reassign_partitions") is None)
        face.flush()
        snapshot = face.cluster.to_model().partitions
        for n in range(10):
            tp = TopicPartition(f"t{n}", 0)
            assert snapshot[tp].replicas[0] != unbalanced_leaders(40).partitions[tp].replicas[0]
    finally:
        zk.stop()
        zk.close()
