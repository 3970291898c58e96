"""The disk planner (rebalance-disks) on a 200-broker x 12-directory cluster.

Generates the "xl" preset (~270,000 replicas on 200 brokers), gives every broker 12 log
directories of equal capacity and places replicas skewed the way JBOD clusters drift: one
disk per broker takes ``--hot`` of its replicas, the rest are spread at random. Prints the
planning time, the moves and bytes planned, and each broker's directory usage spread
(max - min fraction of capacity, worst and mean over brokers) before and after; then the same
through the workflow API (``make_plan`` with mode rebalance-disks, plus the approval digest an
on-call reads: summary, rollback with the original directories, content hash). Asserts nothing.

    .venv/bin/python benchmarks/bench_jbod.py [--preset xl] [--seed 0] [--hot 0.3] [--execute]

``--execute`` also runs the plan on the emulator's core in-process (emulated time, unthrottled
copies): the executor's cost of recording, sending and verifying every log-dir move.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time

from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel, LogDir
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner.disks import plan_rebalance_disks
from kafka_ops.workflow import approval_digest, make_plan

DIRS = 12


def with_disks(model: ClusterModel, hot: float, seed: int) -> ClusterModel:
    rng = random.Random(seed)
    load: dict[int, int] = {b: 0 for b in model.brokers}
    for p in model:
        for b in p.replicas:
            load[b] = load.get(b, 0) + p.size_bytes
    parts = [dataclasses.replace(p, log_dirs=tuple(
        "/data/00" if rng.random() < hot else f"/data/{rng.randrange(DIRS):02d}"
        for _ in p.replicas)) for p in model]
    used: dict[tuple[int, str], int] = {}
    for p in parts:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            used[b, d] = used.get((b, d), 0) + p.size_bytes
    # Same disks everywhere, sized so the fullest broker would fill half of them if even, and
    # no disk holds more than it can (the hot ones at most 95% full): a cluster that can exist.
    cap = max(int(max(load.values()) / DIRS / 0.5), int(max(used.values()) / 0.95), 1)
    brokers = [dataclasses.replace(b, log_dirs=tuple(LogDir(f"/data/{i:02d}", cap)
                                                     for i in range(DIRS)))
               for b in model.brokers.values()]
    return ClusterModel(brokers, parts, model.topic_configs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="xl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hot", type=float, default=0.3)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--band", type=float, default=0.05)
    parser.add_argument("--execute", action="store_true", help="also run the plan on the emulator")
    args = parser.parse_args()
    model = with_disks(generate_cluster(args.preset, args.seed), args.hot, args.seed)
    print(f"cluster: {len(model.brokers)} brokers x {DIRS} directories, {model.replica_count} replicas")
    start = time.perf_counter()
    result = plan_rebalance_disks(model, threshold=args.threshold, band=args.band)
    took = time.perf_counter() - start
    total = sum(p.size_bytes * len(p.replicas) for p in model)
    print(f"planning time                         {took:8.2f} s")
    print(f"intra-broker moves                    {result.moves:8d}")
    print(f"bytes moved                           {result.moved_bytes / 1e12:8.2f} TB "
          f"({100 * result.moved_bytes / total:.1f}% of all replica bytes)")
    for label, m in (("before", result.before), ("after", result.after)):
        print(f"spread {label:<6} worst {m.worst_spread:6.3f}  mean {m.mean_spread:6.3f}  "
              f"directories over {args.threshold:.0%}: {len(m.over_threshold)}  brokers with "
              f"spread > 2 x band: {sum(1 for v in m.spread.values() if v > 2 * args.band)}")
    start = time.perf_counter()
    proposal = make_plan(model, {"mode": "rebalance-disks", "disk_threshold": args.threshold,
                                 "disk_band": args.band})
    planned = time.perf_counter()
    digest = approval_digest(proposal.reassignment(), model, summary=proposal.summary)
    print(f"workflow make_plan                    {planned - start:8.2f} s  "
          f"({len(proposal.plan['partitions'])} partitions in the plan JSON)")
    print(f"workflow approval digest              {time.perf_counter() - planned:8.2f} s  "
          f"({digest.log_dir_moves} log-dir moves, {digest.log_dir_bytes / 1e12:.2f} TB)")
    if args.execute:
        execute(model, proposal.reassignment())


def execute(model: ClusterModel, plan: ReassignmentPlan) -> None:
    from kafka_ops.emulator.clock import ManualClock
    from kafka_ops.executor import ExecutionOptions, Executor
    from kafka_ops.testing.inprocess import InProcessBackend

    clock = ManualClock()
    start = time.perf_counter()
    backend = InProcessBackend.for_model(model, clock=clock)
    loaded = time.perf_counter()
    polls = 0

    def sleep(seconds: float) -> None:
        nonlocal polls
        polls += 1
        clock.advance(seconds)

    report = Executor(backend, plan, options=ExecutionOptions(poll_interval=10.0, elect_leaders=False),
                      clock=clock.now, sleep=sleep).run()
    took = time.perf_counter() - loaded
    counts = (report.log_dirs or {}).get("counts", {})
    print(f"emulated cluster loaded               {loaded - start:8.2f} s")
    print(f"execution ({report.status}, {polls} polls)      {took:8.2f} s  "
          f"({counts.get('completed', 0)} log-dir moves completed, {counts.get('failed', 0)} failed)")


if __name__ == "__main__":
    main()
