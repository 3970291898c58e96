"""Balance planner benchmark: a full rebalance of the generator's presets, measured from outside.

Every quality number is recomputed from the cluster model after the plan (ClusterModel
.with_assignment), not taken from the planner's own summary, so a bookkeeping bug in the
planner cannot make its results look better. Each preset runs in a fresh process so the peak
memory is that preset's alone.

    .venv/bin/python benchmarks/bench_planner.py [medium large xl] [--seed N] [--topic-swaps]

Targets (issue 4): xl plan < 20 s on one core; replica and leader counts within 1 on every
broker of a pool; disk max/mean <= 1.03; moves <= 1.05 x the count lower bound; zero rack
violations.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import resource
import time
from collections import Counter, defaultdict
from typing import Any

from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel
from kafka_ops.planner import PlannerOptions, plan_rebalance


def count_lower_bound(cluster: ClusterModel) -> int:
    """Replica moves no plan can go below: the surplus above ceil(mean) (or the deficit below
    floor(mean)) of per-broker replica counts over the live brokers."""
    live = cluster.alive_broker_ids
    counts = Counter({b: 0 for b in live})
    for p in cluster:
        for b in p.replicas:
            if b in counts:
                counts[b] += 1
    mean = sum(counts.values()) / len(live)
    hi, lo = math.ceil(mean), math.floor(mean)
    surplus = sum(max(0, c - hi) for c in counts.values())
    deficit = sum(max(0, lo - c) for c in counts.values())
    return max(surplus, deficit)


def quality(cluster: ClusterModel) -> dict[str, Any]:
    live = cluster.alive_broker_ids
    replicas = Counter({b: 0 for b in live})
    leaders = Counter({b: 0 for b in live})
    disk: dict[int, float] = defaultdict(float)
    bytes_in: dict[int, float] = defaultdict(float)
    per_topic: dict[str, Counter[int]] = defaultdict(Counter)
    rack_violations = 0
    racks = len({cluster.brokers[b].rack for b in live})
    for p in cluster:
        leaders[p.replicas[0]] += 1
        for b in p.replicas:
            replicas[b] += 1
            disk[b] += p.size_bytes
            bytes_in[b] += p.bytes_in_per_sec
            per_topic[p.topic][b] += 1
        per_rack = Counter(cluster.brokers[b].rack for b in p.replicas)
        if max(per_rack.values()) > math.ceil(len(p.replicas) / racks):
            rack_violations += 1
    spreads = [max(c[b] for b in live) - min(c[b] for b in live) for c in per_topic.values()]
    mean_disk = sum(disk[b] for b in live) / len(live)
    mean_in = sum(bytes_in[b] for b in live) / len(live)
    return {
        "replicas_max_min": max(replicas.values()) - min(replicas.values()),
        "leaders_max_min": max(leaders.values()) - min(leaders.values()),
        "disk_max_mean": max(disk[b] for b in live) / mean_disk,
        "in_max_mean": max(bytes_in[b] for b in live) / mean_in,
        "topic_spread_max": max(spreads),
        "topics_within_1": sum(1 for s in spreads if s <= 1) / len(spreads),
        "rack_violations": rack_violations,
    }


def run_preset(preset: str, seed: int, topic_swaps: bool = False) -> dict[str, Any]:
    cluster = generate_cluster(preset, seed=seed)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    wall = time.perf_counter()
    result = plan_rebalance(cluster, options=PlannerOptions(topic_swaps=topic_swaps))
    wall = time.perf_counter() - wall
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    after = cluster.with_assignment(result.plan.replicas)
    bound = count_lower_bound(cluster)
    s = result.summary
    return {
        "preset": preset,
        "brokers": len(cluster.brokers),
        "replicas": cluster.replica_count,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mb": peak / 1024,
        "plan_mb": (peak - rss_before) / 1024,
        "before": quality(cluster),
        "after": quality(after),
        "moves": s.replica_moves,
        "bound": bound,
        "bytes_moved": s.bytes_moved,
        "leader_changes": s.leader_changes,
        "unsatisfied": [g.name for g in s.goals if g.status != "satisfied"],
        "worse": [g.name for g in s.goals if g.status == "worse"],
    }


def _row(label: str, values: list[str]) -> str:
    return f"{label:<34}" + "".join(f"{v:>16}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=["medium", "large", "xl"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--topic-swaps", action="store_true",
                        help="let per-topic goals swap replicas (more moves, better topic spread)")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    results = []
    for preset in args.presets:
        with ctx.Pool(1) as pool:
            results.append(pool.apply(run_preset, (preset, args.seed, args.topic_swaps)))
    print(_row("preset", [r["preset"] for r in results]))
    print(_row("brokers / replicas", [f"{r['brokers']} / {r['replicas']}" for r in results]))
    print(_row("plan wall time (s)", [f"{r['wall_s']:.1f}" for r in results]))
    print(_row("plan CPU time (s)", [f"{r['cpu_s']:.1f}" for r in results]))
    print(_row("peak RSS, process (MB)", [f"{r['peak_mb']:.0f}" for r in results]))
    print(_row("peak RSS added by planning (MB)", [f"{r['plan_mb']:.0f}" for r in results]))
    for key, label, fmt in (
        ("replicas_max_min", "replicas per broker max-min", "{:.0f}"),
        ("leaders_max_min", "leaders per broker max-min", "{:.0f}"),
        ("disk_max_mean", "disk max/mean", "{:.3f}"),
        ("in_max_mean", "bytes-in max/mean", "{:.3f}"),
        ("topic_spread_max", "per-topic replicas max-min (worst)", "{:.0f}"),
        ("topics_within_1", "topics with max-min <= 1", "{:.1%}"),
        ("rack_violations", "rack violations", "{:.0f}"),
    ):
        print(_row(label, [f"{fmt.format(r['before'][key])} -> {fmt.format(r['after'][key])}"
                           for r in results]))
    print(_row("replica moves / count lower bound", [f"{r['moves']} / {r['bound']}" for r in results]))
    print(_row("moves / lower bound", [f"{r['moves'] / max(1, r['bound']):.3f}" for r in results]))
    print(_row("bytes moved (TiB)", [f"{r['bytes_moved'] / 1024**4:.2f}" for r in results]))
    print(_row("leader changes", [str(r["leader_changes"]) for r in results]))
    print(_row("goals made worse by their own run", [",".join(r["worse"]) or "none" for r in results]))
    for r in results:
        print(f"{r['preset']}: goals not fully satisfied: {', '.join(r['unsatisfied']) or 'none'}")


if __name__ == "__main__":
    main()
