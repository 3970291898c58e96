"""Cluster model at production size: load time, memory and query speed.

The target cluster (issue 2, seed 003): 200 brokers, ~130,000 partitions, ~270,000 replicas,
generated with kafka_ops.generator's "xl" preset into a temp snapshot file. Generation and
measurement each run in a fresh child process: Linux carries ru_maxrss over fork and exec, so
a small parent keeps the peak RSS about the load alone. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/bench_model.py [--seed N] [--snapshot PATH]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 2**20


def timed(label: str, fn: Callable[..., Any], *args: Any) -> Any:
    start = time.perf_counter()
    result = fn(*args)
    print(f"{label:<52} {time.perf_counter() - start:8.3f} s")
    return result


def show(label: str, value: str) -> None:
    print(f"{label:<52} {value}")


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def generate(path: Path, seed: int) -> None:
    from kafka_ops.generator import generate_cluster
    from kafka_ops.snapshot import save_snapshot

    model = timed("generate xl cluster (kafka_ops.generator)", generate_cluster, "xl", seed)
    timed("save snapshot", save_snapshot, model, path)
    show("snapshot size", f"{path.stat().st_size / MiB:8.1f} MiB")


def measure(path: Path) -> None:
    from kafka_ops.plan_report import diff_plan, summarize_plan
    from kafka_ops.pools import migrate_to_pool, pools_from_dict
    from kafka_ops.snapshot import load_snapshot

    rss_start = max_rss_mib()
    model = timed("load snapshot (parse JSON + build model)", load_snapshot, path)
    rss_loaded = max_rss_mib()
    show("model", repr(model))
    show("peak RSS (ru_maxrss): before / after load", f"{rss_start:8.1f} / {rss_loaded:.1f} MiB")
    del model
    tracemalloc.start()
    model = load_snapshot(path)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    show(
        "tracemalloc: model held / peak while loading", f"{held / MiB:8.1f} / {peak / MiB:.1f} MiB"
    )

    brokers = model.broker_ids
    timed("first by-broker query (builds the index)", model.partitions_on, brokers[0])
    timed(
        f"partitions_on + leaders_on, all {len(brokers)} brokers",
        lambda: [(model.partitions_on(b), model.leaders_on(b)) for b in brokers],
    )
    timed(
        "first by-topic query (builds the index)", model.topic, next(iter(model.partitions)).topic
    )
    names = list(model.topics)
    timed(f"topic(name), all {len(names)} topics", lambda: [model.topic(t) for t in names])
    timed(
        "racks index + brokers_in_rack, every rack",
        lambda: [model.brokers_in_rack(r) for r in model.racks],
    )
    racks = sorted(model.racks, key=str)
    pools = pools_from_dict(
        {
            "pools": {
                f"pool-{i}": {"brokers": model.racks[r], "topic_patterns": [f"topic-.*{i}"]}
                for i, r in enumerate(racks)
            }
        }
    )
    timed(
        f"pool_for_topic, all topics ({len(racks)} pattern pools)",
        lambda: [pools.pool_for_topic(t) for t in names],
    )
    timed("pool_of_broker, all brokers", lambda: [pools.pool_of_broker(b) for b in brokers])
    timed("misplaced partitions for those pools", pools.misplaced, model)
    plan = timed(
        "migrate_to_pool: pool-0's topics into pool-0", migrate_to_pool, model, pools, "pool-0"
    )
    show("  plan size", f"{len(plan)} partitions of {len(plan.topics)} topics")
    timed("  diff_plan of that plan", diff_plan, plan, model)
    timed("  summarize_plan of that plan", summarize_plan, plan, model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--snapshot", type=Path, help="measure this snapshot instead of generating one"
    )
    parser.add_argument("--child", choices=("generate", "measure"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "generate":
        generate(args.snapshot, args.seed)
        return
    if args.child == "measure":
        measure(args.snapshot)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.snapshot
        me = [sys.executable, __file__, "--seed", str(args.seed)]
        if path is None:
            path = Path(tmp) / "xl.json"
            subprocess.run([*me, "--child", "generate", "--snapshot", str(path)], check=True)
        subprocess.run([*me, "--child", "measure", "--snapshot", str(path)], check=True)


if __name__ == "__main__":
    main()
