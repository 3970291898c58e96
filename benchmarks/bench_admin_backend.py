"""The Admin API backend against the emulator's wire face at production size.

Generates a cluster (default: the "xl" preset, ~130,000 partitions / ~270,000 replicas on 200
brokers), serves it over the Kafka protocol on 127.0.0.1 and times what the executor and
planner do through AdminApiBackend: describe_cluster (Metadata + DescribeCluster +
DescribeLogDirs on every broker + DescribeConfigs of every topic), list_reassignments, a
1,000-partition reassignment submit and a preferred leader election. Prints numbers; asserts
nothing.

    .venv/bin/python benchmarks/bench_admin_backend.py [--preset xl] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.wire_face import WireFace
from kafka_ops.generator import generate_cluster


def timed(label: str, fn: Callable[..., Any], *args: Any) -> Any:
    start = time.perf_counter()
    result = fn(*args)
    print(f"{label:<60} {time.perf_counter() - start:8.3f} s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="xl")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    model = timed(f"generate {args.preset}", generate_cluster, args.preset, args.seed)
    print(f"{'cluster':<60} {model!r}")
    cluster = timed("EmulatedCluster(model)", lambda: EmulatedCluster(
        model, mode="kraft", clock=ManualClock()))
    face = timed("wire face start (one listener per broker)", WireFace(cluster).start)
    backend = AdminApiBackend(face.bootstrap_servers, request_timeout_s=300)
    try:
        described = timed("describe_cluster (first: connects both clients)",
                          backend.describe_cluster)
        timed("describe_cluster (again)", backend.describe_cluster)
        print(f"{'described':<60} {described!r}")
        timed("list_reassignments (none)", backend.list_reassignments)
        live = [b for b in described.alive_broker_ids]
        moves = {}
        for p in list(described)[:1000]:
            spare = [b for b in live if b not in p.replicas]
            moves[p.tp] = [spare[0], *p.replicas[1:]]
        timed("alter_reassignments (1,000 partitions)", backend.alter_reassignments, moves)
        timed("list_reassignments (1,000 in flight)", backend.list_reassignments)
        timed("alter_reassignments (cancel 1,000)", backend.alter_reassignments,
              dict.fromkeys(moves))
        leaders = [p.tp for p in described if p.leader != p.preferred_leader][:1000]
        timed(f"elect_preferred_leaders ({len(leaders)} partitions)",
              backend.elect_preferred_leaders, leaders)
    finally:
        backend.close()
        face.stop()


if __name__ == "__main__":
    main()
