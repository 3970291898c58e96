"""An emulated Kafka cluster with one of our backends connected to it, for the contract suite.

``emulated`` is parametrised over ``EMULATED_BACKENDS``: one factory per backend kind, each a
context manager ``factory(model, zk_connect) -> Emulated`` that starts the emulator the way
that backend reaches Kafka (ZooKeeper-mode znodes for the kazoo backend) and stops it after
the test. ``zk_emulated`` is the ZooKeeper one alone, for ZooKeeper-only tests.

The clock is a ManualClock: replication moves only when a test advances it, so tests wait on
conditions observed through the backend (``wait_until``), never on wall-clock sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition

MB = 1_000_000


@dataclass
class Emulated:
    """What a test gets: our backend, and the emulator behind it (faults, its own record)."""

    kind: str
    backend: ClusterBackend
    cluster: Any  # kafka_ops.emulator.cluster.EmulatedCluster
    clock: ManualClock

    def advance(self, seconds: float) -> None:
        """Move emulated time and apply it now (the ticker thread would, a little later)."""
        self.clock.advance(seconds)
        self.cluster.tick()

    def wait_emulator(self, check: Callable[[Any], Any], what: str, timeout: float = 15.0) -> None:
        """Wait until ``check(cluster)`` holds in the emulator's own record. Requests sent
        through ZooKeeper reach the emulated controller when its watch fires, a moment after
        our write returns; time advanced before that would be lost on them, so tests
        synchronise here before moving the clock (never to observe results)."""
        deadline = time.monotonic() + timeout
        while not check(self.cluster):
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g}s waiting for the emulator: {what}")
            time.sleep(0.02)


def contract_cluster() -> ClusterModel:
    """Six brokers on three racks, 100 MB/s each; "orders" (3 x RF3, 10 MB each) on 1-3 and
    "events" (2 x RF2) on 4-6."""
    capacity = BrokerCapacity(
        disk_bytes=10**12, network_in_bytes_per_sec=100 * MB, network_out_bytes_per_sec=100 * MB
    )
    brokers = [
        Broker(id=i, rack=f"rack-{'abc'[(i - 1) % 3]}", capacity=capacity) for i in range(1, 7)
    ]
    partitions = [
        Partition("orders", 0, (1, 2, 3), 1, (1, 2, 3), size_bytes=10 * MB),
        Partition("orders", 1, (2, 3, 1), 2, (2, 3, 1), size_bytes=10 * MB),
        Partition("orders", 2, (3, 1, 2), 3, (3, 1, 2), size_bytes=10 * MB),
        Partition("events", 0, (4, 5), 4, (4, 5), size_bytes=MB),
        Partition("events", 1, (5, 6), 5, (5, 6), size_bytes=MB),
    ]
    return ClusterModel(brokers, partitions)


@contextmanager
def zookeeper_emulated(model: ClusterModel, zk_connect: str) -> Iterator[Emulated]:
    """The emulator's ZooKeeper face on the test's chroot, and a ZooKeeperBackend on it."""
    from kafka_ops.emulator.runtime import Emulator

    clock = ManualClock()
    emulator = Emulator(model, zookeeper=zk_connect, mode="zk", clock=clock)
    emulator.start()
    try:
        backend = ZooKeeperBackend(zk_connect, election_timeout_s=10.0)
        try:
            yield Emulated("zookeeper", backend, emulator.cluster, clock)
        finally:
            backend.close()
    finally:
        emulator.stop()


@contextmanager
def admin_emulated(
    model: ClusterModel, zk_connect: str, mode: str = "kraft"
) -> Iterator[Emulated]:
    """The emulator serving the Kafka protocol (one listener per broker on 127.0.0.1) and an
    AdminApiBackend (confluent-kafka + kafka-python) on its listeners. Mode "kraft" is the
    modern cluster; mode "zk" is a ZooKeeper-mode Kafka (2.4+) reached through its Admin API.
    ``zk_connect`` is unused: the backend reaches Kafka only through the Kafka protocol."""
    from kafka_ops.backends.admin import AdminApiBackend
    from kafka_ops.emulator.runtime import Emulator

    clock = ManualClock()
    with Emulator(model, mode=mode, clock=clock, wire=True) as emulator:
        backend = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=15.0)
        try:
            yield Emulated("admin" if mode == "kraft" else f"admin-{mode}", backend,
                           emulator.cluster, clock)
        finally:
            backend.close()


def admin_zk_emulated(model: ClusterModel, zk_connect: str) -> AbstractContextManager[Emulated]:
    return admin_emulated(model, zk_connect, mode="zk")


EmulatedFactory = Callable[[ClusterModel, str], AbstractContextManager[Emulated]]
EMULATED_BACKENDS: dict[str, EmulatedFactory] = {"zookeeper": zookeeper_emulated}
EMULATED_BACKENDS["admin"] = admin_emulated
EMULATED_BACKENDS["admin-zk"] = admin_zk_emulated


@pytest.fixture
def emulated_model() -> ClusterModel:
    """The cluster the emulator starts with; override this fixture in a module to change it."""
    return contract_cluster()


@pytest.fixture(params=list(EMULATED_BACKENDS))
def emulated(
    request: pytest.FixtureRequest, emulated_model: ClusterModel, zk_connect: str
) -> Iterator[Emulated]:
    with EMULATED_BACKENDS[request.param](emulated_model, zk_connect) as e:
        yield e


@pytest.fixture
def zk_emulated(emulated_model: ClusterModel, zk_connect: str) -> Iterator[Emulated]:
    with zookeeper_emulated(emulated_model, zk_connect) as e:
        yield e


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """``wait_until(check, timeout=15, what=...)``: poll ``check()`` until it returns a truthy
    value (returned), failing the test with ``what`` after ``timeout`` seconds."""

    def wait(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                pytest.fail(
                    f"timed out after {timeout:g}s waiting for {what}; last value {value!r}"
                )
            time.sleep(0.02)

    return wait
