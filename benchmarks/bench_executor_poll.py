"""What one executor poll costs with 50 moves in flight on the xl cluster, before and after.

Before (up to issue 11) every poll read the whole cluster: ``describe_cluster()`` and an
unfiltered ``list_reassignments()``. Now a poll is ``Executor.step()``: it reads only the
partitions in flight (``describe_partitions``) and their reassignments. Both are measured on
the xl preset (200 brokers, 130,000 partitions) with 50 moves in flight, through

  inprocess   the emulator's core in this process (no I/O: the cost of building the model);
  zookeeper   the ZooKeeper backend on a real ZooKeeper server, the emulator's ZooKeeper face
              writing the cluster's znodes (loading 130,000 partitions takes a few minutes).

Printed: wall time per poll (median of ``--repeat``) and partitions read per poll (partition
records returned by the backend's describe calls plus reassignments listed).

    .venv/bin/python benchmarks/bench_executor_poll.py [--backend inprocess|zookeeper|both]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor, StateStore
from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend

IN_FLIGHT = 50


class Counting:
    """Wraps a backend; counts the partitions each describe/list call returns."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read = 0
        self.supports_incremental_reassignment = inner.supports_incremental_reassignment

    def describe_cluster(self) -> ClusterModel:
        model = self.inner.describe_cluster()
        self.read += len(model.partitions)
        return model

    def describe_partitions(self, partitions: Iterable[TopicPartition]) -> ClusterModel:
        model = self.inner.describe_partitions(partitions)
        self.read += len(model.partitions)
        return model

    def list_reassignments(self, partitions=None):
        ongoing = self.inner.list_reassignments(partitions)
        self.read += len(ongoing)
        return ongoing

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def xl_cluster() -> ClusterModel:
    model = generate_cluster("xl", seed=0)
    return ClusterModel(model.brokers.values(),
                        [replace(p, leader=p.replicas[0], isr=p.replicas) for p in model])


def plan_for(model: ClusterModel) -> ReassignmentPlan:
    """IN_FLIGHT big partitions each get one replica on a new (empty) broker."""
    new = [b for b in model.broker_ids if not model.partitions_on(b)]
    big = sorted((p for p in model if p.size_bytes > 0), key=lambda p: -p.size_bytes)[:IN_FLIGHT]
    return ReassignmentPlan.from_assignment({
        p.tp: (new[i % len(new)], *p.replicas[1:]) for i, p in enumerate(big)
    })


def measure(backend: Any, plan: ReassignmentPlan, clock: ManualClock, repeat: int, settle) -> dict[str, Any]:
    counting = Counting(backend)
    options = ExecutionOptions(
        throttle=1_000_000, poll_interval=1.0, elect_leaders=False, allow_under_replicated=True,
        limits=ExecutionLimits(incoming_per_broker=IN_FLIGHT, outgoing_per_broker=IN_FLIGHT, in_flight=IN_FLIGHT),
    )
    with tempfile.TemporaryDirectory() as d:
        ex = Executor(counting, plan, options=options, store=StateStore(d), clock=clock.now)
        ex.start()
        ex.step()  # submits the 50 moves
        settle(lambda: len(counting.inner.list_reassignments(plan.partitions)) == IN_FLIGHT)
        in_flight = len(backend.list_reassignments(plan.partitions))
        before_t, before_n, after_t, after_n = [], [], [], []
        for _ in range(repeat):
            counting.read = 0
            t0 = time.perf_counter()
            counting.describe_cluster()
            counting.list_reassignments()
            before_t.append(time.perf_counter() - t0)
            before_n.append(counting.read)
            counting.read = 0
            t0 = time.perf_counter()
            assert not ex.step()
            after_t.append(time.perf_counter() - t0)
            after_n.append(counting.read)
        ex.request_cancel()
        while not ex.step():
            clock.advance(1.0)
    return {"in_flight": in_flight, "before_s": statistics.median(before_t), "before_read": before_n[-1],
            "after_s": statistics.median(after_t), "after_read": after_n[-1]}


def run_inprocess(model: ClusterModel, plan: ReassignmentPlan, repeat: int) -> dict[str, Any]:
    clock = ManualClock()
    return measure(InProcessBackend.for_model(model, clock=clock), plan, clock, repeat, lambda check: None)


def run_zookeeper(model: ClusterModel, plan: ReassignmentPlan, repeat: int) -> dict[str, Any]:
    from kafka_ops.backends.zookeeper import ZooKeeperBackend
    from kafka_ops.emulator.runtime import Emulator
    from kafka_ops.testing.zookeeper import ZooKeeperServer

    server = ZooKeeperServer().start()
    try:
        clock = ManualClock()
        t0 = time.perf_counter()
        with Emulator(model, zookeeper=f"{server.connect_string}/kafka", mode="zk", clock=clock):
            print(f"  (emulator loaded the xl cluster into ZooKeeper in {time.perf_counter() - t0:.0f} s)")
            backend = ZooKeeperBackend(f"{server.connect_string}/kafka")

            def settle(check) -> None:
                deadline = time.monotonic() + 120
                while not check():
                    if time.monotonic() > deadline:
                        raise SystemExit("the emulator did not start the moves within 120 s")
                    time.sleep(0.1)

            try:
                return measure(backend, plan, clock, repeat, settle)
            finally:
                backend.close()
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("inprocess", "zookeeper", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    model = xl_cluster()
    plan = plan_for(model)
    print(f"xl preset: {model}; {len(plan)} moves in flight")
    print(f"{'backend':<11}{'poll before (s)':>16}{'read before':>13}{'poll after (s)':>16}"
          f"{'read after':>12}{'speed-up':>10}")
    for name in ("inprocess", "zookeeper"):
        if args.backend not in (name, "both"):
            continue
        r = (run_inprocess if name == "inprocess" else run_zookeeper)(model, plan, args.repeat)
        assert r["in_flight"] == IN_FLIGHT, r
        print(f"{name:<11}{r['before_s']:>16.3f}{r['before_read']:>13,}{r['after_s']:>16.4f}"
              f"{r['after_read']:>12,}{r['before_s'] / r['after_s']:>9.0f}x")


if __name__ == "__main__":
    main()
