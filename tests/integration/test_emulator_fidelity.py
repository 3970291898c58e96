"""Fidelity: one emulated ZooKeeper-mode cluster read through both of its faces agrees with its
model within a bounded lag (issue 17).

The same scenario (throttles, a reassignment of hundreds of partitions, elections in many
batches, throttles removed through the Admin API, a broker stopped, ZooKeeper frozen past the
session timeout) runs on one emulator; at every step the cluster as our ZooKeeper backend reads
it (znodes) and as our Admin API backend reads it (Kafka wire protocol) must both equal the
emulator's own model within ``LAG`` seconds. Replication moves only when the test advances the
ManualClock, so between steps the model holds still and the comparison is exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.backends.base import ClusterBackend, ConfigResource
from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.emulator.zk_check import mirror_differences
from kafka_ops.executor.leaders import elect_preferred_leaders
from kafka_ops.model import (
    Broker,
    BrokerCapacity,
    ClusterModel,
    Partition,
)
from kafka_ops.testing.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]

MB = 10**6
LAG = 15.0  # seconds both faces may take to show a step (generous: a loaded 2-core machine)
THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def model(partitions: int = 600, topics: int = 3) -> ClusterModel:
    capacity = BrokerCapacity(10**12, 100 * MB, 100 * MB)
    brokers = [Broker(i, rack=f"r{i % 3}", host="localhost", port=9090 + i, capacity=capacity)
               for i in range(1, 9)]
    parts = []
    for n in range(partitions):
        replicas = tuple((n + k) % 6 + 1 for k in range(3))
        parts.append(Partition(f"topic-{n % topics}", n // topics, replicas, replicas[0],
                               replicas, size_bytes=MB))
    return ClusterModel(brokers, parts, {})


def view(m: ClusterModel) -> tuple:
    return (sorted(m.alive_broker_ids), {
        tp: (tuple(p.replicas), p.leader, tuple(sorted(p.isr))) for tp, p in m.partitions.items()})


def differences(expected: tuple, seen: tuple) -> list[str]:
    out = []
    if expected[0] != seen[0]:
        out.append(f"live brokers {seen[0]} != {expected[0]}")
    for tp, want in expected[1].items():
        got = seen[1].get(tp)
        if got != want:
            out.append(f"{tp}: {got} != {want}")
    return out


class Faces:
    def __init__(self, emulator: Emulator, zk: ZooKeeperBackend, admin: AdminApiBackend,
                 clock: ManualClock, zk_connect: str) -> None:
        self.emulator, self.zk, self.admin, self.clock = emulator, zk, admin, clock
        self.cluster = emulator.cluster
        self.zk_connect = zk_connect

    def agree(self, what: str, lag: float = LAG) -> float:
        """Both faces equal the model within ``lag`` seconds; returns the seconds it took."""
        start = time.monotonic()
        expected = view(self.cluster.to_model())
        left: dict[str, list[str]] = {}
        while True:
            left = {name: differences(expected, view(backend.describe_cluster()))
                    for name, backend in (("znodes", self.zk), ("wire", self.admin))}
            if not any(left.values()):
                return time.monotonic() - start
            if time.monotonic() - start > lag:
                pytest.fail(f"{what}: faces differ from the model after {lag:g}s: "
                            + "; ".join(f"{k}: {v[:3]} ({len(v)})" for k, v in left.items() if v))
            time.sleep(0.1)

    def throttles(self, backend: ClusterBackend, topic: str) -> dict[str, str]:
        config = backend.describe_configs(ConfigResource("topic", topic))
        return {k: v for k, v in config.items() if k in THROTTLES and v}

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.cluster.tick()


@pytest.fixture
def faces(zk_connect: str) -> Iterator[Faces]:
    clock = ManualClock()
    with Emulator(model(), zookeeper=zk_connect, mode="zk", clock=clock, wire=True) as emulator:
        zk = ZooKeeperBackend(zk_connect, election_timeout_s=30.0)
        admin = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=15.0)
        try:
            yield Faces(emulator, zk, admin, clock, zk_connect)
        finally:
            zk.close()
            admin.close()


def wait_until(condition: Callable[[], object], timeout: float = LAG) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within timeout")
        time.sleep(0.05)


def test_both_faces_follow_a_plan_elections_and_a_throttle_cleanup(faces: Faces):
    faces.agree("start")
    base = faces.cluster.to_model()
    # 300 partitions move one replica to broker 7 or 8, which becomes the preferred leader.
    targets = {}
    for n, (tp, p) in enumerate(sorted(base.partitions.items())[:300]):
        targets[tp] = (7 + n % 2, p.replicas[0], p.replicas[1])
    topics = sorted({tp.topic for tp in targets})
    for topic in topics:  # throttle lists as the executor sets them, through the znodes
        value = ",".join(f"{tp.partition}:{b}" for tp in targets if tp.topic == topic
                         for b in sorted(set(targets[tp]) | set(base.partitions[tp].replicas)))
        faces.zk.alter_configs(ConfigResource("topic", topic),
                               dict.fromkeys(THROTTLES, value))
    wait_until(lambda: all(faces.throttles(faces.admin, t) for t in topics))
    faces.zk.alter_reassignments(targets)
    wait_until(lambda: len(faces.cluster.list_reassignments()) == 300)
    steps = 0
    while faces.cluster.list_reassignments():
        faces.advance(0.25)
        faces.agree(f"reassignment step {steps}")
        steps += 1
        assert steps < 200
    assert steps > 2  # the views were compared mid-flight, not only at the end
    # The clean exit of an Admin API run on a ZooKeeper-mode cluster: throttles removed
    # through the wire face must leave no list behind in /config/topics/*.
    for topic in topics:
        faces.admin.alter_configs(ConfigResource("topic", topic), delete_configs=THROTTLES)
    wait_until(lambda: not any(faces.throttles(faces.zk, t) for t in topics))
    # Elections in 10 batches of 30 through /admin/preferred_replica_election.
    report = elect_preferred_leaders(faces.zk, targets, batch_size=30)
    assert len(report.elected) == 300 and report.ok and report.errors == {}
    faces.agree("after 10 election batches")
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=faces.zk_connect)
    zk.start(timeout=15)
    try:
        wait_until(lambda: not mirror_differences(faces.cluster, zk))
    finally:
        zk.stop()
        zk.close()
    faces.cluster.stop_broker(7)
    faces.agree("broker 7 stopped")


def test_faces_agree_again_after_zookeeper_is_frozen_past_the_session_timeout():
    clock = ManualClock()
    with ZooKeeperServer() as server:
        emulator = Emulator(model(200), zookeeper=server.connect_string, mode="zk",
                            clock=clock, wire=True)
        emulator.zk_face.timeout = 4.0  # the face's session timeout
        with emulator:
            zk = ZooKeeperBackend(server.connect_string, session_timeout_s=30.0)
            admin = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=15.0)
            f = Faces(emulator, zk, admin, clock, server.connect_string)
            try:
                f.agree("start")
                server.freeze()
                emulator.cluster.stop_broker(2)  # ISRs shrink while ZooKeeper hangs
                emulator.cluster.elect_leaders(0, None)
                time.sleep(7.0)  # the fault itself: frozen past the face's 4 s session
                server.thaw()
                f.agree("after the freeze", lag=60.0)
                emulator.cluster.start_broker(2)
                f.agree("broker 2 back")
            finally:
                zk.close()
                admin.close()
