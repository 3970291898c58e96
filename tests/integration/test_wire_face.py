"""The emulator's Kafka wire face, checked from outside.

Responses are decoded with ``kio``, a second codec built independently from Kafka's JSON
schemas, so a bug shared by kafka-python's encoder (which the face uses) and kafka-python's
decoder cannot hide. Requests are encoded by kafka-python here; librdkafka (confluent-kafka,
kcat) sends its own frames in the other tests. Debian's ``kcat -L`` must list brokers,
controller and topics, and SASL/PLAIN must accept good and refuse bad credentials.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from kio.index import load_response_schema
from kio.serial import entity_reader

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.wire_face import WireFace
from kafka_ops.testing.clusters import four_broker_cluster

NOT_CONTROLLER, INVALID_REQUEST, UNSUPPORTED_VERSION, SASL_AUTHENTICATION_FAILED = 41, 42, 35, 58
USERS = {"admin": "admin-secret"}


def start(mode: str, sasl: dict[str, str] | None = None) -> tuple[EmulatedCluster, WireFace]:
    cluster = EmulatedCluster(four_broker_cluster(), mode=mode, clock=ManualClock())
    return cluster, WireFace(cluster, sasl_plain_users=sasl).start()


@pytest.fixture(params=["kraft", "zk"])
def emulator(request: pytest.FixtureRequest) -> Iterator[tuple[EmulatedCluster, WireFace]]:
    cluster, face = start(request.param)
    yield cluster, face
    face.stop()


@pytest.fixture
def kraft() -> Iterator[tuple[EmulatedCluster, WireFace]]:
    cluster, face = start("kraft")
    yield cluster, face
    face.stop()


@pytest.fixture
def sasl() -> Iterator[tuple[EmulatedCluster, WireFace]]:
    cluster, face = start("kraft", USERS)
    yield cluster, face
    face.stop()


class Conn:
    """A raw client connection: requests encoded by kafka-python, responses decoded by kio."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.correlation_id = 100

    def close(self) -> None:
        self.sock.close()

    def send(self, request, version: int) -> None:
        self.correlation_id += 1
        request.API_VERSION = version
        request.with_header(self.correlation_id, client_id="wire-test")
        self.sock.sendall(request.encode(header=True, framed=True))

    def frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read(4))
        return self._read(size)

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the emulator")
            data += chunk
        return data

    def call(self, request, version: int):
        """Send, then decode the answer with kio at the same version; the whole frame must be
        consumed and the correlation id echoed."""
        self.send(request, version)
        return decode(self.frame(), request.API_KEY, version, self.correlation_id)

    def closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def decode(frame: bytes, api_key: int, version: int, correlation_id: int):
    schema = load_response_schema(api_key, version)
    header, offset = entity_reader(schema.__header_schema__)(frame, 0)
    assert header.correlation_id == correlation_id
    body, size = entity_reader(schema)(frame, offset)
    assert offset + size == len(frame), "trailing bytes after the response body"
    return body


@pytest.fixture
def conn_to():
    opened: list[Conn] = []

    def connect(face: WireFace, broker_id: int) -> Conn:
        opened.append(Conn(face.port_of(broker_id)))
        return opened[-1]

    yield connect
    for c in opened:
        c.close()


def topics_of(response) -> dict:
    return {t.name: t for t in response.topics}


# -- ApiVersions and discovery -------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_advertise_schema_ranges(kraft, conn_to, version):
    _, face = kraft
    response = conn_to(face, 1).call(
        ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
    assert response.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    # Kafka 4.0 minima (clients check features at specific versions inside the range)
    assert ranges[19] == (2, 7)  # CreateTopics
    assert ranges[32] == (1, 4)  # DescribeConfigs
    assert ranges[35] == (1, 5)  # DescribeLogDirs: v5 or kafka-python assumes an old broker
    assert ranges[3] == (0, 13) and ranges[60] == (0, 2) and ranges[43] == (0, 2)
    assert 17 not in ranges and 36 not in ranges  # no SASL on a PLAINTEXT listener
    assert 0 not in ranges  # never advertise what is not implemented (Produce)


def test_api_versions_too_new_gets_v0_body_with_unsupported_version(kraft, conn_to):
    """Kafka answers a too-new ApiVersions with a v0 body listing what it speaks, so the
    client can retry (librdkafka with v0, kafka-python with the advertised maximum)."""
    _, face = kraft
    conn = conn_to(face, 1)
    conn.sock.sendall(_with_version(ApiVersionsRequest(), 9, correlation_id=555))
    response = decode(conn.frame(), 18, 0, 555)
    assert response.error_code == UNSUPPORTED_VERSION
    assert {k.api_key for k in response.api_keys} >= {3, 18, 19, 45, 46}


def _with_version(request, version: int, correlation_id: int) -> bytes:
    """A v0 ApiVersions frame whose header claims another version (its body is empty)."""
    request.API_VERSION = 0
    request.with_header(correlation_id, client_id="t")
    frame = bytearray(request.encode(header=True, framed=True))
    struct.pack_into(">h", frame, 6, version)
    return bytes(frame)


def test_unknown_api_closes_the_connection(kraft, conn_to):
    _, face = kraft
    conn = conn_to(face, 1)
    # A Produce (key 0) header: the face does not implement it, so Kafka-like it hangs up.
    conn.sock.sendall(struct.pack(">ihhih", 10, 0, 9, 1, -1))
    assert conn.closed_by_peer()


@pytest.mark.parametrize("version", [1, 4, 9, 10, 12, 13])
def test_metadata_lists_brokers_controller_and_partitions(emulator, conn_to, version):
    cluster, face = emulator
    response = conn_to(face, 2).call(
        MetadataRequest(topics=None, allow_auto_topic_creation=False,
                        include_cluster_authorized_operations=version in (8, 9, 10),
                        include_topic_authorized_operations=False), version)
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (b, "127.0.0.1", face.port_of(b), "ab"[b % 2]) for b in (1, 2, 3, 4)]
    assert response.controller_id == cluster.controller_id
    orders = topics_of(response)["orders"]
    assert orders.error_code == 0
    assert [(p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in orders.partitions] == [(0, 1, (1, 2), (1, 2)), (1, 2, (2, 3), (2, 3)),
                                            (2, 3, (3, 4), (3, 4))]
    if version >= 10:
        assert str(orders.topic_id) != "00000000-0000-0000-0000-000000000000"
    if version in (8, 9, 10):
        assert response.cluster_authorized_operations > 0  # librdkafka's describe_cluster


def test_metadata_unknown_topic_is_an_error_not_a_creation(kraft, conn_to):
    _, face = kraft
    response = conn_to(face, 1).call(MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="nope")],
        allow_auto_topic_creation=True), 12)
    (topic,) = response.topics
    assert (topic.name, topic.error_code, topic.partitions) == ("nope", 3, ())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(emulator, conn_to, version):
    cluster, face = emulator
    response = conn_to(face, 3).call(DescribeClusterRequest(
        include_cluster_authorized_operations=True, endpoint_type=1), version)
    assert response.error_code == 0 and response.error_message is None
    assert response.cluster_id == cluster.cluster_id
    assert response.controller_id == cluster.controller_id
    assert {b.broker_id: b.rack for b in response.brokers} == {1: "b", 2: "a", 3: "b", 4: "a"}


def test_describe_cluster_v2_lists_stopped_kraft_brokers_as_fenced(emulator, conn_to):
    cluster, face = emulator
    cluster.stop_broker(4)
    conn = conn_to(face, 1)
    fenced = conn.call(DescribeClusterRequest(include_fenced_brokers=True), 2)
    plain = conn.call(DescribeClusterRequest(include_fenced_brokers=False), 2)
    expected = {1: False, 2: False, 3: False} | ({4: True} if cluster.mode == "kraft" else {})
    assert {b.broker_id: b.is_fenced for b in fenced.brokers} == expected
    assert [b.broker_id for b in plain.brokers] == [1, 2, 3]


# -- controller APIs -----------------------------------------------------------------------
@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_topics_with_assignment(emulator, conn_to, version):
    cluster, face = emulator
    C = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(topics=[
        C(name="fresh", num_partitions=-1, replication_factor=-1, configs=[],
          assignments=[C.CreatableReplicaAssignment(partition_index=0, broker_ids=[4, 1]),
                       C.CreatableReplicaAssignment(partition_index=1, broker_ids=[1, 2])]),
        C(name="orders", num_partitions=-1, replication_factor=-1, configs=[],
          assignments=[C.CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])]),
    ], timeout_ms=5000, validate_only=False)
    response = conn_to(face, cluster.controller_id).call(request, version)
    results = {t.name: t for t in response.topics}
    assert results["fresh"].error_code == 0
    assert results["orders"].error_code == 36  # TOPIC_ALREADY_EXISTS
    assert cluster.to_model().partition("fresh", 0).replicas == (4, 1)


def test_create_partitions_continue_the_count(emulator, conn_to):
    cluster, face = emulator
    T = CreatePartitionsRequest.CreatePartitionsTopic
    response = conn_to(face, cluster.controller_id).call(CreatePartitionsRequest(topics=[
        T(name="orders", count=4, assignments=[T.CreatePartitionsAssignment(broker_ids=[4, 2])]),
        T(name="events", count=1, assignments=None),
    ], timeout_ms=5000, validate_only=False), 3)
    results = {r.name: r.error_code for r in response.results}
    assert results == {"orders": 0, "events": 37}  # INVALID_PARTITIONS: not an increase
    assert cluster.to_model().partition("orders", 3).replicas == (4, 2)


def reassign(topic: str, partition: int, replicas):
    R = AlterPartitionReassignmentsRequest.ReassignableTopic
    return AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[R(
        name=topic, partitions=[R.ReassignablePartition(partition_index=partition,
                                                        replicas=replicas)])])


@pytest.mark.parametrize("version", [0, 1])
def test_alter_and_list_partition_reassignments(emulator, conn_to, version):
    cluster, face = emulator
    conn = conn_to(face, cluster.controller_id)
    response = conn.call(reassign("orders", 0, [3, 4]), version)
    assert response.error_code == 0
    ((topic, partition),) = [(t.name, p) for t in response.responses for p in t.partitions]
    assert (topic, partition.partition_index, partition.error_code) == ("orders", 0, 0)
    assert partition.error_message is None

    listed = conn.call(ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None), 0)
    assert listed.error_code == 0
    ((t,),) = [listed.topics]
    (p,) = t.partitions
    assert (t.name, p.partition_index, set(p.adding_replicas), set(p.removing_replicas)) == (
        "orders", 0, {3, 4}, {1, 2})
    assert set(p.replicas) == {1, 2, 3, 4}

    cancelled = conn.call(reassign("orders", 0, None), version)
    assert cancelled.responses[0].partitions[0].error_code == 0
    nothing = conn.call(reassign("orders", 0, None), version)
    assert nothing.responses[0].partitions[0].error_code == 85  # NO_REASSIGNMENT_IN_PROGRESS


def test_reassignment_errors_are_per_partition(emulator, conn_to):
    cluster, face = emulator
    conn = conn_to(face, cluster.controller_id)
    for replicas, code in (([1, 9], 39), ([1, 1], 39), ([], 39)):
        response = conn.call(reassign("orders", 1, replicas), 0)
        assert response.responses[0].partitions[0].error_code == code, replicas
    response = conn.call(reassign("nope", 0, [1, 2]), 0)
    assert response.responses[0].partitions[0].error_code == 3


def test_elect_leaders(emulator, conn_to):
    cluster, face = emulator
    E = ElectLeadersRequest.TopicPartitions
    response = conn_to(face, cluster.controller_id).call(ElectLeadersRequest(
        election_type=0, timeout_ms=5000,
        topic_partitions=[E(topic="events", partitions=[0, 1])]), 2)
    assert response.error_code == 0
    codes = {p.partition_id: p.error_code for r in response.replica_election_results
             for p in r.partition_result}
    assert codes == {0: 0, 1: 84}  # events-0 moves to broker 1; events-1 is led by 2 already
    assert cluster.to_model().partition("events", 0).leader == 1


def test_zk_mode_controller_apis_answer_not_controller_elsewhere(conn_to):
    cluster, face = start("zk")
    try:
        other = next(b for b in cluster.brokers if b != cluster.controller_id)
        conn = conn_to(face, other)
        assert conn.call(reassign("orders", 0, [3, 4]), 0).error_code == NOT_CONTROLLER
        assert conn.call(ListPartitionReassignmentsRequest(timeout_ms=1, topics=None),
                         0).error_code == NOT_CONTROLLER
        E = ElectLeadersRequest.TopicPartitions
        elect = conn.call(ElectLeadersRequest(election_type=0, timeout_ms=1, topic_partitions=[
            E(topic="events", partitions=[0])]), 2)
        assert elect.replica_election_results[0].partition_result[0].error_code == NOT_CONTROLLER
        assert cluster.list_reassignments() == {}
    finally:
        face.stop()


def test_kraft_mode_any_broker_accepts_controller_apis(kraft, conn_to):
    """KRaft brokers forward controller requests to the quorum (KIP-590)."""
    cluster, face = kraft
    other = next(b for b in cluster.brokers if b != cluster.controller_id)
    response = conn_to(face, other).call(reassign("orders", 0, [3, 4]), 0)
    assert response.error_code == 0
    assert set(cluster.list_reassignments()) == {("orders", 0)}


# -- configs and log dirs ------------------------------------------------------------------
def test_incremental_alter_and_describe_configs(emulator, conn_to):
    cluster, face = emulator
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    A = R.AlterableConfig
    conn = conn_to(face, 2)
    response = conn.call(IncrementalAlterConfigsRequest(resources=[
        R(resource_type=2, resource_name="orders", configs=[
            A(name="leader.replication.throttled.replicas", config_operation=0, value="0:1")]),
        R(resource_type=4, resource_name="2", configs=[
            A(name="follower.replication.throttled.rate", config_operation=0, value="1000")]),
        R(resource_type=4, resource_name="3", configs=[
            A(name="follower.replication.throttled.rate", config_operation=0, value="1000")]),
    ], validate_only=False), 1)
    codes = [(r.resource_name, r.error_code) for r in response.responses]
    assert codes == [("orders", 0), ("2", 0), ("3", INVALID_REQUEST)]  # broker 3's config: ask 3
    assert cluster.broker_config(2) == {"follower.replication.throttled.rate": "1000"}
    assert "follower.replication.throttled.rate" not in cluster.broker_config(3)

    D = DescribeConfigsRequest.DescribeConfigsResource
    for version in (1, 4):
        described = conn.call(DescribeConfigsRequest(resources=[
            D(resource_type=2, resource_name="orders", configuration_keys=None),
            D(resource_type=4, resource_name="2", configuration_keys=None),
            D(resource_type=2, resource_name="nope", configuration_keys=None),
        ], include_synonyms=False, include_documentation=False), version)
        by_name = {r.resource_name: r for r in described.results}
        topic = {c.name: (c.value, c.config_source) for c in by_name["orders"].configs}
        assert topic["leader.replication.throttled.replicas"] == ("0:1", 1)  # DYNAMIC_TOPIC_CONFIG
        broker = {c.name: (c.value, c.config_source) for c in by_name["2"].configs}
        assert broker["follower.replication.throttled.rate"] == ("1000", 2)  # DYNAMIC_BROKER
        assert by_name["nope"].error_code == 3


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_describe_log_dirs_reports_the_receiving_brokers_replicas(emulator, conn_to, version):
    cluster, face = emulator
    response = conn_to(face, 3).call(DescribeLogDirsRequest(topics=None), version)
    sizes = {(t.name, p.partition_index): p.partition_size
             for d in response.results for t in d.topics for p in t.partitions}
    assert set(sizes) == {("orders", 1), ("orders", 2), ("events", 0), ("events", 1)}
    assert sizes[("orders", 2)] == 3000
    if version >= 4:
        assert response.results[0].total_bytes == 10**12


# -- broker deaths -------------------------------------------------------------------------
def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def refused(port: int) -> bool:
    """True once nothing listens on ``port``.

    A connect that races the listener's close can land in its backlog and be reset rather than
    refused; that is the transition, not the end state, so it reads as "not yet".
    """
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        return False
    return False


def test_dead_broker_refuses_connections_and_disappears_from_metadata(kraft, conn_to):
    cluster, face = kraft
    port = face.port_of(4)
    cluster.stop_broker(4)
    wait_until(lambda: refused(port))
    response = conn_to(face, 1).call(MetadataRequest(topics=None), 12)
    assert [b.node_id for b in response.brokers] == [1, 2, 3]
    orders2 = topics_of(response)["orders"].partitions[2]
    assert tuple(orders2.offline_replicas) == (4,) and 4 not in orders2.isr_nodes

    cluster.start_broker(4)
    wait_until(lambda: not refused(port))  # same port: advertised addresses stay valid
    assert face.port_of(4) == port


# -- kcat and SASL -------------------------------------------------------------------------
kcat = pytest.mark.skipif(shutil.which("kcat") is None, reason="Debian's kcat is not installed")


@kcat
def test_kcat_lists_brokers_controller_and_topics(emulator):
    cluster, face = emulator
    out = subprocess.run(["kcat", "-L", "-b", f"127.0.0.1:{face.port_of(1)}", "-m", "10"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert " 4 brokers:" in out
    controller = cluster.controller_id
    assert f"broker {controller} at 127.0.0.1:{face.port_of(controller)} (controller)" in out
    assert 'topic "orders" with 3 partitions:' in out and 'topic "events" with 2 partitions:' in out
    assert "partition 1, leader 2, replicas: 2,3, isrs: 2,3" in out


def kcat_sasl(face: WireFace, password: str, wait_s: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["kcat", "-L", "-b", f"127.0.0.1:{face.port_of(1)}", "-m", str(wait_s),
         "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
         "-X", "sasl.username=admin", "-X", f"sasl.password={password}"],
        capture_output=True, text=True, timeout=30)


@kcat
def test_kcat_sasl_plain_success_and_failure(sasl):
    _, face = sasl
    ok = kcat_sasl(face, "admin-secret", wait_s=10)
    assert ok.returncode == 0 and 'topic "orders"' in ok.stdout
    bad = kcat_sasl(face, "wrong", wait_s=1)  # kcat retries until this metadata timeout
    assert bad.returncode != 0
    assert "Authentication failed: Invalid username or password" in bad.stderr


@pytest.mark.parametrize("password, code", [("admin-secret", 0), ("wrong", 58)])
def test_sasl_plain_handshake_and_authenticate(sasl, conn_to, password, code):
    _, face = sasl
    conn = conn_to(face, 2)
    versions = conn.call(ApiVersionsRequest(), 3)  # allowed before authentication
    assert {17, 36} <= {k.api_key for k in versions.api_keys}
    handshake = conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert (handshake.error_code, list(handshake.mechanisms)) == (0, ["PLAIN"])
    token = b"\0admin\0" + password.encode()
    auth = conn.call(SaslAuthenticateRequest(auth_bytes=token), 2)
    assert auth.error_code == code
    if code:
        assert auth.error_message == "Authentication failed: Invalid username or password"
        assert conn.closed_by_peer()  # Kafka hangs up after a failed authentication
    else:
        metadata = conn.call(MetadataRequest(topics=None), 12)
        assert len(metadata.brokers) == 4


def test_sasl_listener_refuses_requests_before_authentication(sasl, conn_to):
    _, face = sasl
    conn = conn_to(face, 1)
    conn.send(MetadataRequest(topics=None), 12)
    assert conn.closed_by_peer()


def test_sasl_unsupported_mechanism(sasl, conn_to):
    _, face = sasl
    response = conn_to(face, 1).call(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1)
    assert (response.error_code, list(response.mechanisms)) == (33, ["PLAIN"])


def test_sasl_handshake_v0_then_bare_plain_token(sasl, conn_to):
    """SaslHandshake v0 (pre-KIP-152 clients): the token follows as a bare frame and the
    answer is a bare (empty) frame, not a Kafka response."""
    _, face = sasl
    conn = conn_to(face, 1)
    assert conn.call(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
    token = b"\0admin\0admin-secret"
    conn.sock.sendall(struct.pack(">i", len(token)) + token)
    assert conn.frame() == b""
    assert len(conn.call(MetadataRequest(topics=None), 12).brokers) == 4
