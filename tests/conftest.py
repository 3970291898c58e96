"""Shared fixtures: one real ZooKeeper server per test session, a fresh chroot per test.

Modelled on kazoo's harness: the server is started lazily, once, on 127.0.0.1 and a free port;
each test gets its own chroot so nothing needs cleaning between tests. When a test fails, the
server's log is attached to the report.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_ops.testing.zookeeper import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A connect string with a fresh chroot of its own for this test."""
    chroot = f"/kafkaops-{uuid.uuid4().hex[:12]}"
    root = KazooClient(hosts=zookeeper_server.connect_string)
    root.start(timeout=15)
    try:
        root.ensure_path(chroot)
    finally:
        root.stop()
        root.close()
    yield f"{zookeeper_server.connect_string}{chroot}"
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        request.node.add_report_section("call", "zookeeper log", zookeeper_server.logs()[-5000:])


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
