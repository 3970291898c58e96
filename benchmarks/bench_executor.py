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

The backend is kafka_ops.testing.inprocess.InProcessBackend: the executor talks to the emulator's
core without sockets so that the numbers measure scheduling, not transport (each poll reads only
the moves in flight, through describe_partitions).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from dataclasses import replace

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor
from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend

TB = 10**12
MB = 10**6


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
    backend = InProcessBackend.for_model(model, incremental=incremental, clock=clock)

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
