"""Tiny hand-built clusters named after what they are, shared by tests (like Cruise Control's
DeterministicCluster): small enough to reason about every replica in an assertion."""

from __future__ import annotations

from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition


def four_broker_cluster() -> ClusterModel:
    """Brokers 1-4 on racks a/b; "orders" (3 partitions, RF 2) and "events" (2, RF 3), sized."""
    capacity = BrokerCapacity(
        disk_bytes=10**12, network_in_bytes_per_sec=10**8, network_out_bytes_per_sec=10**8
    )
    brokers = [Broker(id=i, rack="ab"[i % 2], capacity=capacity) for i in (1, 2, 3, 4)]
    partitions = [
        Partition("orders", 0, (1, 2), 1, (1, 2), size_bytes=1000),
        Partition("orders", 1, (2, 3), 2, (2, 3), size_bytes=2000),
        Partition("orders", 2, (3, 4), 3, (3, 4), size_bytes=3000),
        Partition("events", 0, (1, 2, 3), 2, (1, 2, 3), size_bytes=500),
        Partition("events", 1, (2, 3, 4), 2, (2, 3, 4), size_bytes=700),
    ]
    return ClusterModel(brokers, partitions)
