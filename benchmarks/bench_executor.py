"""Executor benchmark: completion time of a multi-TB plan against the bandwidth lower bound.

The large preset (60 brokers, ~50,000 partitions, 6 new empty brokers) runs in the emulator core
in-process on a manual clock: the executor's ``sleep`` advances emulated time and ticks the
cluster, so a 10-hour reassignment takes seconds to minutes and the times printed are emulated
seconds, free of any polling or Python overhead. The plan moves one replica of the biggest
partitions onto the new brokers until a few TB move.

Lower bound (issue 5): every destination broker must receive its bytes through its follower
throttle, so no schedule finishes before max over brokers of (bytes it receives / rate).
Compared:
  pipelined   our executor, Admin API semantics: a finished move frees its slot at once;
  one batch   the whole plan submitted at once (what kafka-reassign-partitions does);
  fixed       our executor's limits, but each batch waits for its slowest move (ZooKeeper mode).

    .venv/bin/python benchmarks/bench_executor.py [--tb 3] [--throttle-mb 100] [--seed 0]

The backend adapter below is the benchmark's only way to the emulator: the library never
imports the emulator; this script wires the executor to it without sockets so that the numbers
measure scheduling, not transport.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from kafka_ops.backends.base import ConfigResource, OngoingReassignment
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.errors import BackendError
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan

TB = 10**12
MB = 10**6


class InProcessBackend:
    """ClusterBackend over an EmulatedCluster, in-process (benchmark harness only)."""

    def __init__(self, cluster: EmulatedCluster, incremental: bool, watched: Iterable[TopicPartition]):
        self.cluster = cluster
        self.supports_incremental_reassignment = incremental
        # The executor reads every partition on every poll; the benchmark hands it only the
        # plan's partitions after the first read, so a run takes minutes, not hours, of CPU.
        self.watched = set(watched)
        self.first_read = True

    def describe_cluster(self) -> ClusterModel:
        if self.first_read:
            self.first_read = False
            return self.cluster.to_model()
        with self.cluster.lock:
            self.cluster.tick()
            brokers = [Broker(b.id, b.rack, alive=b.alive) for b in self.cluster.brokers.values()]
            parts = [self.cluster.partitions[tp] for tp in self.watched]
            return ClusterModel(brokers, [
                Partition(p.topic, p.partition, tuple(p.replicas), p.leader, tuple(p.isr), int(p.log_end_bytes))
                for p in parts
            ])

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        results = self.cluster.alter_reassignments(
            {tp: (list(r) if r is not None else None) for tp, r in targets.items()}
        )
        errors = {tp: e for tp, e in results.items() if e is not None}
        if errors:
            raise BackendError(f"reassignment failed: {errors}")

    def list_reassignments(self, partitions: Iterable[TopicPartition] | None = None):
        return {
            tp: OngoingReassignment(tp, tuple(r), tuple(a), tuple(rm))
            for tp, (r, a, rm) in self.cluster.list_reassignments(partitions).items()
        }

    def describe_configs(self, resource: ConfigResource) -> dict[str, str]:
        if resource.type == "topic":
            return self.cluster.topic_config(resource.name)
        return self.cluster.broker_config(int(resource.name))

    def alter_configs(self, resource: ConfigResource, set_configs=None, delete_configs=()) -> None:
        ops = [(k, 0, v) for k, v in (set_configs or {}).items()] + [(k, 1, None) for k in delete_configs]
        self.cluster.incremental_alter_configs(resource.type, resource.name, ops)

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        results = self.cluster.elect_leaders(0, list(partitions))
        return {tp: (e.name if e is not None else None) for tp, e in results.items()}

    def create_topic(self, *a, **k) -> None:  # not used by the executor
        raise NotImplementedError

    def create_partitions(self, *a, **k) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def build_plan(model: ClusterModel, target_bytes: int) -> ReassignmentPlan:
    """Move the last replica of partitions (in a fixed shuffled order, so sizes are typical of
    the cluster: heavy-tailed) to the least-loaded new broker until target_bytes move."""
    new = [b for b in model.broker_ids if not model.partitions_on(b)]
    incoming: dict[int, int] = {b: 0 for b in new}
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    moved = 0
    candidates = [p for p in model if p.size_bytes > 0]
    random.Random(0).shuffle(candidates)
    for p in candidates:
        if moved >= target_bytes:
            break
        dest = min(new, key=lambda b: (incoming[b], b))
        victim = p.replicas[-1]
        targets[p.tp] = tuple(dest if b == victim else b for b in p.replicas)
        incoming[dest] += p.size_bytes
        moved += p.size_bytes
    return ReassignmentPlan.from_assignment(targets)


def lower_bound(model: ClusterModel, plan: ReassignmentPlan, rate: float) -> float:
    received: dict[int, int] = defaultdict(int)
    for tp, target in plan.replicas.items():
        for b in target:
            if b not in model.partitions[tp].replicas:
                received[b] += model.partitions[tp].size_bytes
    return max(received.values()) / rate


def run(model: ClusterModel, plan: ReassignmentPlan, *, incremental: bool, limits: ExecutionLimits,
        throttle: int, poll: float) -> tuple[float, int]:
    clock = ManualClock()
    cluster = EmulatedCluster(model, mode="kraft", clock=clock)
    backend = InProcessBackend(cluster, incremental, plan.partitions)

    def sleep(seconds: float) -> None:
        clock.advance(seconds)

    options = ExecutionOptions(
        throttle=throttle, limits=limits, strategy=("large-first",), poll_interval=poll,
        elect_leaders=False, allow_under_replicated=True, missing_grace=10 * poll,
    )
    report = Executor(backend, plan, options=options, clock=clock.now, sleep=sleep).run()
    assert report.status == "completed", (report.status, report.message, list(report.dead.items())[:3])
    return clock.now(), len(report.completed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tb", type=float, default=3.0, help="bytes to move, in TB")
    parser.add_argument("--throttle-mb", type=float, default=100.0, help="throttle, MB/s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--poll", type=float, default=5.0, help="executor poll interval, emulated s")
    args = parser.parse_args()
    t0 = time.perf_counter()
    model = generate_cluster("large", seed=args.seed)
    # Steady state for the benchmark: no traffic growth, every replica in sync.
    model = ClusterModel(
        model.brokers.values(),
        [replace(p, leader=p.replicas[0], isr=p.replicas, bytes_in_per_sec=0.0, bytes_out_per_sec=0.0)
         for p in model],
    )
    plan = build_plan(model, int(args.tb * TB))
    throttle = int(args.throttle_mb * MB)
    bound = lower_bound(model, plan, throttle)
    moved = sum(model.partitions[tp].size_bytes for tp in plan.replicas)
    print(f"large preset: {model}; plan: {len(plan)} moves, {moved / TB:.2f} TB, throttle "
          f"{args.throttle_mb:.0f} MB/s; lower bound {bound:,.0f} s (built in {time.perf_counter() - t0:.1f} s)")
    limits = ExecutionLimits(incoming_per_broker=4, outgoing_per_broker=4, in_flight=200)
    unlimited = ExecutionLimits(incoming_per_broker=10**6, outgoing_per_broker=10**6, in_flight=10**6)
    rows = []
    for name, incremental, lim in (
        ("pipelined (ours)", True, limits),
        ("one batch (stock tool)", True, unlimited),
        ("fixed batches", False, limits),
    ):
        start = time.perf_counter()
        elapsed, done = run(model, plan, incremental=incremental, limits=lim, throttle=throttle, poll=args.poll)
        rows.append((name, elapsed, bound / elapsed, done, time.perf_counter() - start))
    print(f"{'strategy':<24}{'completion (s)':>16}{'bound/time':>12}{'moves':>8}{'wall (s)':>10}")
    for name, elapsed, ratio, done, wall in rows:
        print(f"{name:<24}{elapsed:>16,.0f}{ratio:>12.3f}{done:>8}{wall:>10.1f}")


if __name__ == "__main__":
    main()
