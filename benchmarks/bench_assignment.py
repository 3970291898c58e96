"""Benchmark: Kafka's replica assignment of 1,000,000 partitions over 1,000 brokers, RF 3.

Prints wall time (best of --repeat runs, no tracing) and, from a separate traced run, the
peak memory tracemalloc sees (the result dict dominates it). Target: <= 2 s rack-unaware.

    .venv/bin/python benchmarks/bench_assignment.py [--partitions N] [--brokers B] [--racks R]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

from kafka_ops.assignment import BrokerMetadata, assign_replicas_to_brokers


def timed(brokers: list[BrokerMetadata], partitions: int, rf: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        result = assign_replicas_to_brokers(brokers, partitions, rf, fixed_start_index=7)
        best = min(best, time.perf_counter() - started)
        assert len(result) == partitions
        del result
    return best


def peak_mib(brokers: list[BrokerMetadata], partitions: int, rf: int) -> float:
    gc.collect()
    tracemalloc.start()
    result = assign_replicas_to_brokers(brokers, partitions, rf, fixed_start_index=7)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=1_000)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    cases = {
        "rack-unaware": [BrokerMetadata(b) for b in range(args.brokers)],
        f"rack-aware ({args.racks} racks)": [
            BrokerMetadata(b, f"rack-{b % args.racks}") for b in range(args.brokers)
        ],
    }
    print(
        f"{args.partitions:,} partitions, {args.brokers:,} brokers, "
        f"RF {args.replication_factor}, best of {args.repeat}"
    )
    for name, brokers in cases.items():
        seconds = timed(brokers, args.partitions, args.replication_factor, args.repeat)
        peak = peak_mib(brokers, args.partitions, args.replication_factor)
        print(f"  {name:<22} {seconds:6.2f} s   peak {peak:7.1f} MiB (tracemalloc)")


if __name__ == "__main__":
    main()
