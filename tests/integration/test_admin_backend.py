"""Admin-API-only behaviour of AdminApiBackend, over TCP to the emulator's wire face.

The shared contract suite (test_backend_contract.py) runs the same operations on both
backends; here: what only this backend has (log-dir sizes, security pass-through and
secrecy, mixed submit+cancel in one call, controller failover in kafka-python's cache,
elect_leaders without the crashing timeout kwargs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.backends.base import ClusterBackend, ConfigResource
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.wire_face import WireFace
from kafka_ops.errors import (
    BackendError,
    BrokerNotAvailableError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.model import TopicPartition
from kafka_ops.testing.clusters import four_broker_cluster

USERS = {"admin": "admin-secret"}
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": "admin", "sasl.password": "admin-secret"}


@pytest.fixture(params=["kraft", "zk"])
def setup(request: pytest.FixtureRequest) -> Iterator[tuple[EmulatedCluster, AdminApiBackend]]:
    cluster = EmulatedCluster(four_broker_cluster(), mode=request.param, clock=ManualClock())
    face = WireFace(cluster).start()
    backend = AdminApiBackend(face.bootstrap_servers, request_timeout_s=10)
    yield cluster, backend
    backend.close()
    face.stop()


def test_is_a_cluster_backend(setup):
    _, backend = setup
    assert isinstance(backend, ClusterBackend)
    assert backend.supports_incremental_reassignment is True


def test_describe_cluster_reads_racks_leaders_isr_and_log_dir_sizes(setup):
    cluster, backend = setup
    backend.alter_configs(ConfigResource.topic("orders"), {"retention.ms": "1000"})
    model = backend.describe_cluster()
    assert {b.id: (b.rack, b.alive) for b in model.brokers.values()} == {
        1: ("b", True), 2: ("a", True), 3: ("b", True), 4: ("a", True)}
    events0 = model.partition("events", 0)
    assert (events0.replicas, events0.leader, events0.isr, events0.size_bytes) == (
        (1, 2, 3), 2, (1, 2, 3), 500)
    assert model.partition("orders", 2).size_bytes == 3000
    assert model.topic_configs == {"orders": {"retention.ms": "1000"}}


def test_dead_broker_is_reported_not_alive(setup):
    cluster, backend = setup
    cluster.stop_broker(4)
    model = backend.describe_cluster()
    assert model.brokers[4].alive is False
    assert 4 not in model.partition("orders", 2).isr


@pytest.mark.parametrize("read", ["describe_cluster", "describe_partitions"])
def test_a_broker_dying_during_a_read_is_never_alive_beside_its_shrunk_isr(setup, monkeypatch, read):
    """Broker 3 dies right after the read's first request: the model may show either side of
    the death, never a live broker 3 beside ISRs without it (the executor's pre-check would
    report under-replicated partitions instead of an offline broker)."""
    cluster, backend = setup
    call = backend._call

    def first_then_die(what, fn):
        result = call(what, fn)
        if cluster.brokers[3].alive:
            cluster.stop_broker(3)
        return result

    monkeypatch.setattr(backend, "_call", first_then_die)
    model = (backend.describe_cluster() if read == "describe_cluster"
             else backend.describe_partitions([TopicPartition("events", 0)]))
    assert not cluster.brokers[3].alive  # the death did happen within the read
    isr = model.partition("events", 0).isr
    assert (model.brokers[3].alive, 3 in isr) in {(True, True), (False, True), (False, False)}


def test_submit_and_cancel_in_one_call(setup):
    """The Admin API takes moves and cancels together (ZooKeeper mode cannot)."""
    cluster, backend = setup
    a, b = TopicPartition("orders", 0), TopicPartition("orders", 1)
    backend.alter_reassignments({a: [3, 4]})
    backend.alter_reassignments({a: None, b: [4, 1]})
    assert set(backend.list_reassignments()) == {b}
    assert cluster.to_model().partition("orders", 0).replicas == (1, 2)


def test_bad_requests_change_nothing(setup):
    cluster, backend = setup
    good = TopicPartition("orders", 0)
    cases = [
        ({good: [3, 4], TopicPartition("orders", 1): [2, 2]}, InvalidReplicaAssignmentError),
        ({good: [3, 4], TopicPartition("orders", 1): [9, 2]}, InvalidReplicaAssignmentError),
        ({good: [3, 4], TopicPartition("orders", 9): [1, 2]}, ValidationError),
        ({good: [3, 4], TopicPartition("orders", 1): None}, NoReassignmentInProgressError),
    ]
    for targets, error in cases:
        with pytest.raises(error):
            backend.alter_reassignments(targets)
    assert backend.list_reassignments() == {}


def test_create_partitions_must_continue_the_partition_ids(setup):
    _, backend = setup
    with pytest.raises(ValidationError, match="new partition ids must be 3..3"):
        backend.create_partitions("orders", {4: [1, 2]})
    backend.create_partitions("orders", {3: [4, 1]})
    assert backend.describe_cluster().partition("orders", 3).replicas == (4, 1)


def test_elect_preferred_leaders_maps_not_needed_to_success(setup):
    cluster, backend = setup
    events = [TopicPartition("events", 0), TopicPartition("events", 1)]
    assert backend.elect_preferred_leaders(events) == {events[0]: None, events[1]: None}
    assert cluster.to_model().partition("events", 0).leader == 1


def test_controller_failover_is_followed():
    """kafka-python caches the controller id: after the controller dies the backend must
    look it up again rather than fail (ZooKeeper mode: only the controller answers)."""
    cluster = EmulatedCluster(four_broker_cluster(), mode="zk", clock=ManualClock())
    with WireFace(cluster) as face:
        backend = AdminApiBackend(face.bootstrap_servers, request_timeout_s=10)
        try:
            assert backend.list_reassignments() == {}
            old = cluster.controller_id
            cluster.stop_broker(old)
            assert cluster.controller_id != old
            backend.alter_reassignments({TopicPartition("orders", 2): [3, 2]})
            assert set(backend.list_reassignments()) <= {TopicPartition("orders", 2)}
        finally:
            backend.close()


def test_controller_death_keeps_describe_reassign_and_elect_working(setup):
    """The controller dies: describe_cluster still answers (it once waited without end for the
    dead controller; every call is now bounded by the request timeout and raises BackendError
    past it), then the new controller takes a reassignment and a preferred election (mode "zk":
    only the controller answers those)."""
    cluster, backend = setup
    backend.describe_cluster()  # librdkafka now caches broker 1 as the controller
    cluster.stop_broker(1)
    assert cluster.controller_id == 2
    model = backend.describe_cluster()
    assert model.brokers[1].alive is False
    assert sorted(model.alive_broker_ids) == [2, 3, 4]
    orders2 = TopicPartition("orders", 2)
    backend.alter_reassignments({orders2: [4, 3]})
    assert set(backend.list_reassignments()) <= {orders2}
    events1 = TopicPartition("events", 1)
    assert backend.elect_preferred_leaders([events1]) == {events1: None}


def test_sasl_settings_reach_both_clients_and_stay_secret(caplog):
    cluster = EmulatedCluster(four_broker_cluster(), mode="kraft", clock=ManualClock())
    caplog.set_level(logging.DEBUG)
    with WireFace(cluster, sasl_plain_users=USERS) as face:
        backend = AdminApiBackend(face.bootstrap_servers, SASL, request_timeout_s=10)
        try:
            assert "admin-secret" not in repr(backend)
            backend.alter_reassignments({TopicPartition("orders", 0): [3, 4]})  # kafka-python
            assert backend.describe_cluster().partition("orders", 0).size_bytes == 1000
        finally:
            backend.close()
    assert "admin-secret" not in caplog.text
    assert "Starting KafkaAdminClient" in caplog.text  # the redacted record is still there


def test_wrong_password_fails_without_revealing_it():
    cluster = EmulatedCluster(four_broker_cluster(), mode="kraft", clock=ManualClock())
    with WireFace(cluster, sasl_plain_users=USERS) as face:
        backend = AdminApiBackend(face.bootstrap_servers, dict(SASL, **{"sasl.password": "guess"}),
                                  request_timeout_s=2)
        try:
            with pytest.raises(BackendError) as failure:
                backend.list_reassignments()
            assert "guess" not in str(failure.value)
        finally:
            backend.close()


@pytest.mark.parametrize("security, message", [
    ({"sasl.pasword": "hunter2"}, "No such configuration property: \"sasl.pasword\""),
    ({"security.protocol": "SASL_TLS", "sasl.password": "hunter2"}, "unknown security.protocol"),
])
def test_bad_security_settings_are_refused(security, message):
    with pytest.raises(ValidationError, match=message) as failure:
        AdminApiBackend("127.0.0.1:1", security)
    assert "hunter2" not in str(failure.value)


def test_dead_brokers_configs_fail_fast(setup):
    """Kafka serves a broker's configs only through that broker: refuse at once for a dead one
    rather than wait out the request timeout."""
    cluster, backend = setup
    cluster.stop_broker(3)
    with pytest.raises(BrokerNotAvailableError, match="broker 3 is not alive"):
        backend.alter_configs(ConfigResource.broker(3),
                              delete_configs=["leader.replication.throttled.rate"])
    backend.alter_configs(ConfigResource.broker(2), {"leader.replication.throttled.rate": "10"})
    assert backend.describe_configs(ConfigResource.broker(2)) == {
        "leader.replication.throttled.rate": "10"}


def test_both_faces_share_one_cluster(zk_connect):
    """A ZooKeeper-mode emulator with its wire face too: a reassignment submitted through
    ZooKeeper is seen through the Admin API, and ZooKeeper advertises the wire ports."""
    import json

    from kazoo.client import KazooClient

    from kafka_ops.backends.zookeeper import ZooKeeperBackend
    from kafka_ops.emulator.runtime import Emulator

    with Emulator(four_broker_cluster(), zookeeper=zk_connect, mode="zk", clock=ManualClock(),
                  wire=True) as emulator:
        zk_backend = ZooKeeperBackend(zk_connect)
        admin = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=10)
        try:
            zk_backend.alter_reassignments({TopicPartition("orders", 2): [1, 4]})
            deadline = time.monotonic() + 15
            while TopicPartition("orders", 2) not in admin.list_reassignments():
                assert time.monotonic() < deadline, "reassignment not seen over the wire"
                time.sleep(0.02)
            ongoing = admin.list_reassignments()[TopicPartition("orders", 2)]
            assert set(ongoing.adding) == {1} and set(ongoing.removing) == {3}
        finally:
            admin.close()
            zk_backend.close()
        zk = KazooClient(hosts=zk_connect)
        zk.start(timeout=15)
        try:
            registered = json.loads(zk.get("/brokers/ids/2")[0])
        finally:
            zk.stop()
            zk.close()
        assert registered["port"] == emulator.wire_face.port_of(2)
