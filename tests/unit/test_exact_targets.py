"""The small-cluster benchmark's oracle (benchmarks/exact_targets.py) against brute force."""

from __future__ import annotations

import importlib
import itertools
import math
import sys
from collections import Counter
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.testing.feasibility import rack_key, rack_limit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
exact_targets = importlib.import_module("exact_targets")

GiB = 1024**3


def part(topic: str, p: int, replicas: tuple[int, ...], rate: float, size: int = GiB) -> Partition:
    return Partition(topic, p, replicas, leader=replicas[0], size_bytes=size,
                     bytes_in_per_sec=rate, bytes_out_per_sec=rate)


def test_a_target_no_single_partition_explains_can_still_be_out_of_reach() -> None:
    """Four partitions of 5, 5, 5 and 4 bytes/s in over three brokers: one broker takes two,
    9 or more where 1.05 x the mean is 6.65. No partition alone is above it."""
    cluster = ClusterModel([Broker(i) for i in range(3)],
                           [part("t", i, (i % 3,), rate) for i, rate in enumerate((5, 5, 5, 4))])
    assert exact_targets.attainable(cluster, "network_in") is False
    assert exact_targets.attainable(cluster, "disk") is False  # 4 replicas of 1 GiB on 3 brokers


def _brute(cluster: ClusterModel, target: str) -> bool:
    live = sorted(cluster.brokers)
    n = len(live)
    parts = list(cluster)
    options = []
    for p in parts:
        limit = rack_limit(cluster, live, len(p.replicas))
        sets = [s for s in itertools.combinations(live, len(p.replicas))
                if max(Counter(rack_key(cluster, b) for b in s).values()) <= limit]
        options.append([(s, leader) for s in sets for leader in s])
    total = {"network_in": sum(p.bytes_in_per_sec * len(p.replicas) for p in parts),
             "leader_bytes_in": sum(p.bytes_in_per_sec for p in parts)}[target]
    bound = math.floor(total / n * exact_targets.TARGETS[target])
    replicas, leaders = sum(len(p.replicas) for p in parts), len(parts)
    for choice in itertools.product(*options):
        count, lead, load = Counter[int](), Counter[int](), Counter[int]()
        for p, (brokers, leader) in zip(parts, choice, strict=True):
            count.update(brokers)
            lead[leader] += 1
            if target == "network_in":
                for b in brokers:
                    load[b] += round(p.bytes_in_per_sec)
            else:
                load[leader] += round(p.bytes_in_per_sec)
        if (all(replicas // n <= count[b] <= -(-replicas // n) for b in live)
                and all(leaders // n <= lead[b] <= -(-leaders // n) for b in live)
                and all(load[b] <= bound for b in live)):
            return True
    return False


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(2, 4), racks=st.sampled_from(["none", "two"]),
       rates=st.lists(st.integers(1, 40), min_size=2, max_size=4),
       rf2=st.lists(st.booleans(), min_size=4, max_size=4),
       target=st.sampled_from(["network_in", "leader_bytes_in"]))
def test_the_oracle_agrees_with_trying_every_assignment(n: int, racks: str, rates: list[int],
                                                        rf2: list[bool], target: str) -> None:
    brokers = [Broker(i, None if racks == "none" else "ab"[i % 2]) for i in range(n)]
    parts = [part(f"t{i}", 0, (0, 1) if rf2[i] else (i % n,), rate) for i, rate in enumerate(rates)]
    cluster = ClusterModel(brokers, parts)
    expected = _brute(cluster, target)
    event(f"attainable: {expected}")
    assert exact_targets.attainable(cluster, target) is expected
