"""The ZooKeeper face across ConnectionLoss and session expiry, on a real ZooKeeper (issue 17, 10).

Real brokers re-register their ephemeral znodes after a new session and a new controller is
elected; writes that failed on a lost connection are retried, so no partition state is left
stale; watches are re-armed (kazoo forgets them on every disconnect), so admin znodes created
meanwhile are acted on. Faults come from kafka_ops.testing.zookeeper: a session expired from a
second connection, the server frozen past the session timeout, and the server restarted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.zk_check import mirror_differences, wait_for_mirror
from kafka_ops.emulator.zk_face import ZooKeeperFace
from kafka_ops.model import (
    Broker,
    BrokerCapacity,
    ClusterModel,
    Partition,
    TopicPartition,
)
from kafka_ops.testing.zookeeper import ZooKeeperServer

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
        time.sleep(0.05)


def client(connect: str) -> KazooClient:
    zk = KazooClient(hosts=connect, timeout=30.0)
    zk.start(timeout=30)
    return zk


def elect(zk: KazooClient, partitions: list[TopicPartition]) -> None:
    zk.create("/admin/preferred_replica_election", json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition} for tp in partitions]}).encode())


def misled(cluster: EmulatedCluster) -> list[TopicPartition]:
    model = cluster.to_model()
    return [tp for tp, p in model.partitions.items() if p.leader != p.replicas[0]]


@pytest.fixture
def private_zookeeper() -> Iterator[ZooKeeperServer]:
    """A server of this test's own: freezing or restarting it must not touch other tests."""
    with ZooKeeperServer() as server:
        yield server


def test_brokers_and_controller_re_register_after_session_expiry(zookeeper_server, zk_connect):
    cluster = EmulatedCluster(unbalanced_leaders(60), clock=ManualClock(), cluster_id="s")
    face = ZooKeeperFace(cluster, zk_connect).start()
    zk = client(zk_connect)
    try:
        epoch = int(zk.get("/controller_epoch")[0])
        old_czxid = zk.exists("/brokers/ids/1").czxid
        zookeeper_server.expire_session(face.client)
        wait_until(lambda: not mirror_differences(cluster, zk)
                   and zk.exists("/brokers/ids/1") is not None
                   and zk.exists("/brokers/ids/1").czxid != old_czxid)
        assert sorted(zk.get_children("/brokers/ids")) == [str(b) for b in range(1, 7)]
        assert int(zk.get("/controller_epoch")[0]) == epoch + 1  # a new controller, as Kafka
        assert cluster.brokers[1].epoch == zk.exists("/brokers/ids/1").czxid  # broker epoch
        assert zk.exists("/brokers/ids/1").ephemeralOwner == face.client.client_id[0]
        # Watches are armed again: an election written now is acted on.
        elect(zk, [TopicPartition("t0", 0), TopicPartition("t1", 0)])
        wait_until(lambda: zk.exists("/admin/preferred_replica_election") is None)
        assert TopicPartition("t0", 0) not in misled(cluster)
    finally:
        zk.stop()
        zk.close()
        face.stop()


@pytest.mark.slow
def test_frozen_zookeeper_past_the_session_timeout_leaves_nothing_stale(private_zookeeper):
    server = private_zookeeper
    cluster = EmulatedCluster(unbalanced_leaders(200), clock=ManualClock(), cluster_id="f")
    face = ZooKeeperFace(cluster, server.connect_string, timeout=4.0).start()
    zk = client(server.connect_string)
    try:
        server.freeze()
        # The model moves on while ZooKeeper hangs: leaders change, a broker goes.
        cluster.elect_leaders(0, None)
        cluster.stop_broker(6)
        time.sleep(7.0)  # the fault itself: frozen past the 4 s session timeout
        server.thaw()
        wait_for_mirror(cluster, zk, timeout=60)
        assert sorted(zk.get_children("/brokers/ids")) == [str(b) for b in range(1, 6)]
        # A new session: the face's watches work again.
        tp = next(iter(misled(cluster)), None)
        cluster.start_broker(6)
        wait_for_mirror(cluster, zk, timeout=30)
        if tp is not None:
            elect(zk, [tp])
            wait_until(lambda: zk.exists("/admin/preferred_replica_election") is None)
    finally:
        zk.stop()
        zk.close()
        face.stop()


@pytest.mark.slow
def test_writes_lost_to_a_zookeeper_restart_are_retried(private_zookeeper):
    """ConnectionLoss mid-write must not leave a stale ISR (the issue's [1,0,3,4] for [3,4])."""
    server = private_zookeeper
    cluster = EmulatedCluster(unbalanced_leaders(3000), clock=ManualClock(), cluster_id="r")
    face = ZooKeeperFace(cluster, server.connect_string, timeout=20.0).start()
    zk = client(server.connect_string)
    try:
        cluster.elect_leaders(0, None)  # 3,000 state writes
        wait_until(lambda: zk.exists("/brokers/topics/t0/partitions/0/state").version > 0,
                   timeout=60)
        server.restart()  # the writes in flight fail with ConnectionLoss
        wait_for_mirror(cluster, zk, timeout=60)
        assert misled(cluster) == []
        face.flush()
    finally:
        zk.stop()
        zk.close()
        face.stop()
