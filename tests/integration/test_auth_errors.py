"""Named authentication and connection errors, within seconds, on both client libraries.

Against the emulator's wire face with SASL/PLAIN, over real sockets: a wrong password, an
unsupported mechanism, TLS against a plaintext listener, a refused port and an unresolvable
name must each be named (not "Broker transport failure" after a minute, not kafka-python's
KafkaTimeoutError), without the secret, in a few seconds (bounds generous for a loaded
machine; the errors arrive in milliseconds). Client settings outside the security ones
(librdkafka's ``debug``) pass through, and their output stays free of the password.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.backends.connection import ClusterConnection, connect
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.wire_face import WireFace
from kafka_ops.errors import (
    AuthenticationError,
    TlsError,
    UnreachableError,
    ValidationError,
)
from kafka_ops.testing.clusters import four_broker_cluster

PASSWORD = "s3cret-Pa55"
SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": "admin", "sasl.password": PASSWORD}
FAST = 8.0  # seconds: "within a few seconds", with room for a loaded 2-core machine


@pytest.fixture(scope="module")
def face() -> Iterator[WireFace]:
    cluster = EmulatedCluster(four_broker_cluster(), mode="kraft", clock=ManualClock())
    with WireFace(cluster, sasl_plain_users={"admin": PASSWORD}) as face:
        yield face


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timed_failure(fn, error_type):
    start = time.monotonic()
    with pytest.raises(error_type) as failure:
        fn()
    return failure.value, time.monotonic() - start


@pytest.mark.parametrize("settings, error_type, words", [
    ({"sasl.password": "guess"}, AuthenticationError, "Invalid username or password"),
    ({"sasl.username": "nobody"}, AuthenticationError, "authentication to"),
    ({"sasl.mechanism": "SCRAM-SHA-256"}, AuthenticationError, "SCRAM-SHA-256"),
    ({"security.protocol": "SASL_SSL"}, TlsError, "TLS connection"),
])
def test_wrong_credentials_are_named_fast_through_confluent_kafka(face, settings, error_type, words):
    def attempt():
        connect(ClusterConnection(bootstrap_servers=face.bootstrap_servers,
                                  security={**SASL, **settings}))
    error, elapsed = _timed_failure(attempt, error_type)
    assert words in str(error) and elapsed < FAST, (str(error), elapsed)
    assert "guess" not in str(error) and PASSWORD not in str(error)


def test_kafka_python_path_names_a_wrong_password_too(face):
    """list_reassignments goes through kafka-python, which alone would time out after the
    request timeout with KafkaTimeoutError; the backend names the cause first."""
    backend = AdminApiBackend(face.bootstrap_servers, {**SASL, "sasl.password": "guess"},
                              request_timeout_s=30)
    try:
        error, elapsed = _timed_failure(backend.list_reassignments, AuthenticationError)
    finally:
        backend.close()
    assert "Invalid username or password" in str(error) and elapsed < FAST
    assert "guess" not in str(error)


def test_good_credentials_work_on_both_libraries(face):
    backend = connect(ClusterConnection(bootstrap_servers=face.bootstrap_servers, security=SASL))
    try:
        assert backend.list_reassignments() == {}          # kafka-python
        assert len(backend.describe_cluster().brokers) == 4  # confluent-kafka
    finally:
        backend.close()


@pytest.mark.parametrize("servers, words", [
    (f"127.0.0.1:{_free_port()}", "Connection refused"),
    ("no-such-host.invalid:9092", "resolve"),
])
def test_unreachable_hosts_are_named_fast(servers, words):
    error, elapsed = _timed_failure(
        lambda: connect(ClusterConnection(bootstrap_servers=servers)), UnreachableError)
    assert words in str(error) and servers.split(":")[0] in str(error) and elapsed < FAST


@pytest.mark.parametrize("servers", ["localhost", "host:port", "h:99999", "a:1,,b:2", " "])
def test_unparsable_bootstrap_servers_are_refused_before_connecting(servers):
    with pytest.raises(ValidationError, match="bootstrap servers"):
        ClusterConnection(bootstrap_servers=servers)


@pytest.mark.parametrize("setting, words", [
    ({"ssl.ca.locaton": "/ca.pem"}, 'No such configuration property: "ssl.ca.locaton"'),
    ({"ssl.truststore.location": "/x.jks"}, "Java TrustStores are not supported"),
])
def test_unknown_client_setting_is_named_by_librdkafka(setting, words):
    with pytest.raises(ValidationError, match=words):
        AdminApiBackend("127.0.0.1:1", setting)


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_ops.cli", *argv], capture_output=True,
                          text=True, timeout=60, check=False)


def test_cli_names_a_wrong_password_and_passes_debug_through(face, tmp_path: Path):
    """Through the CLI: a wrong password is one error line, in seconds; librdkafka's ``debug``
    setting (refused before) reaches the client and its debug output shows no password."""
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                   "sasl.username=admin\nsasl.password=guess-wrong\n")
    start = time.monotonic()
    result = _cli("plan", "rebalance", "--bootstrap-server", face.bootstrap_servers,
                  "--command-config", str(bad))
    elapsed = time.monotonic() - start
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: authentication to"), result.stderr
    assert "guess-wrong" not in result.stderr + result.stdout
    assert elapsed < FAST + 5  # interpreter start-up on a loaded machine included

    good = tmp_path / "good.properties"
    good.write_text("security.protocol: SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\n"
                    f"sasl.password={PASSWORD}\ndebug=security,broker\n")
    result = _cli("plan", "rebalance", "--bootstrap-server", face.bootstrap_servers,
                  "--command-config", str(good), "--json")
    assert result.returncode == 0, result.stderr
    assert "SASL" in result.stderr  # librdkafka's security debug lines, on stderr
    assert PASSWORD not in result.stderr + result.stdout
