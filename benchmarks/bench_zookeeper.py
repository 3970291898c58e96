"""ZooKeeper mode at production size: load 270,000 replicas into ZooKeeper, read them back.

Generates the "xl" preset (200 brokers, ~130,000 partitions, ~270,000 replicas), starts a
private ZooKeeper on loopback, lets the emulator's ZooKeeper face write every znode (brokers,
topics, partition states, configs) the way ZooKeeper-mode Kafka holds them, then reads the
whole cluster back through our ZooKeeperBackend: with ZooKeeper 3.6's multiRead, and with the
pipelined single gets used against older servers. Prints numbers; asserts only that what was
read equals what was loaded.

    .venv/bin/python benchmarks/bench_zookeeper.py [--preset xl] [--seed 0] [--skip-fallback]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.generator import generate_cluster
from kafka_ops.testing.zookeeper import ZooKeeperServer


def timed(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    print(f"{label:<58} {time.perf_counter() - start:8.2f} s", flush=True)
    return result


def describe(connect: str, multi_read: bool):
    with ZooKeeperBackend(connect, multi_read=multi_read) as backend:
        return backend.describe_cluster()


def list_all(connect: str):
    """What the executor polls: every topic znode read for adding/removing replicas."""
    with ZooKeeperBackend(connect) as backend:
        return backend.list_reassignments()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="xl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-fallback", action="store_true", help="skip the single-get read")
    args = parser.parse_args()

    model = timed(f"generate preset {args.preset!r}", generate_cluster, args.preset, args.seed)
    print(f"  {model!r}")
    with ZooKeeperServer() as server:
        connect = f"{server.connect_string}/kafka"
        emulator = Emulator(model, zookeeper=connect, mode="zk", clock=ManualClock())
        timed("load into ZooKeeper (emulator's ZooKeeper face)", emulator.start)
        try:
            cluster = timed("describe_cluster via backend (multiRead)", describe, connect, True)
            timed("list_reassignments (all topics) via backend", list_all, connect)
            if not args.skip_fallback:
                timed("describe_cluster via backend (pipelined gets)", describe, connect, False)
        finally:
            emulator.stop()
    print(f"  read back: {cluster!r}")
    assert cluster.replica_count == model.replica_count, "replica count differs"
    assert {tp: p.replicas for tp, p in cluster.partitions.items()} == model.assignment
    assert sorted(cluster.brokers) == sorted(model.brokers)
    print("  assignment, brokers and replica count match the generated model")


if __name__ == "__main__":
    main()
