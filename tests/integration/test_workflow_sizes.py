"""Partition sizes in ZooKeeper mode: ZooKeeper holds none, so the workflow's snapshot (what
plans and approval digests are made from) reads them from the brokers' log directories over
the Admin API. Real ZooKeeper, the emulator's brokers over the Kafka protocol; the expected
sizes are the emulator's own record of each partition's log."""

from __future__ import annotations

from kafka_ops import workflow
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.testing.clusters import four_broker_cluster


def test_zookeeper_mode_snapshot_has_the_logs_sizes(zk_connect: str) -> None:
    from kafka_ops.backends.zookeeper import ZooKeeperBackend
    from kafka_ops.emulator.runtime import Emulator

    with Emulator(four_broker_cluster(), zookeeper=zk_connect, mode="zk", clock=ManualClock(),
                  wire=True) as emulator:
        backend = ZooKeeperBackend(zk_connect)
        try:
            assert not any(p.size_bytes for p in backend.describe_cluster()), \
                "ZooKeeper alone knows no sizes"
            model = workflow.read_cluster(backend).model()
        finally:
            backend.close()
        expected = {tp: int(p.log_end_bytes) for tp, p in emulator.cluster.partitions.items()}
    assert {tp: p.size_bytes for tp, p in model.partitions.items()} == expected
    assert all(expected.values())
