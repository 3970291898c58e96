"""The small-cluster benchmark's oracle (benchmarks/exact_targets.py) against brute force."""

from __future__ import annotations

import importlib
import itertools
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.planner import plan_rebalance
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


def _options(cluster: ClusterModel) -> list[list[tuple[tuple[int, ...], int]]]:
    """Per partition, every (broker set within the rack rule, its leader)."""
    live = sorted(cluster.brokers)
    options = []
    for p in cluster:
        limit = rack_limit(cluster, live, len(p.replicas))
        sets = [s for s in itertools.combinations(live, len(p.replicas))
                if max(Counter(rack_key(cluster, b) for b in s).values()) <= limit]
        options.append([(s, leader) for s in sets for leader in s])
    return options


def _brute(cluster: ClusterModel, target: str) -> bool:
    live = sorted(cluster.brokers)
    n = len(live)
    parts = list(cluster)
    options = _options(cluster)
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


def _loads(cluster: ClusterModel, choice: Sequence[tuple[tuple[int, ...], int]]) -> dict[str, Counter[int]]:
    """Per load (in the oracle's units: disk in MiB, rates in bytes/s) and count, per broker."""
    out: dict[str, Counter[int]] = {r: Counter() for r in ("disk", "network_in", "network_out",
                                                            "leader_bytes_in", "count", "leaders")}
    for p, (brokers, leader) in zip(cluster, choice, strict=True):
        for b in brokers:
            out["disk"][b] += p.size_bytes // 2**20
            out["network_in"][b] += round(p.bytes_in_per_sec)
            out["count"][b] += 1
        out["network_out"][leader] += round(p.bytes_out_per_sec + p.bytes_in_per_sec * (len(brokers) - 1))
        out["leader_bytes_in"][leader] += round(p.bytes_in_per_sec)
        out["leaders"][leader] += 1
    return out


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(2, 4), racks=st.sampled_from(["none", "two"]),
       rates=st.lists(st.integers(1, 40), min_size=2, max_size=4),
       sizes=st.lists(st.integers(1, 4), min_size=4, max_size=4),
       rf2=st.lists(st.booleans(), min_size=4, max_size=4))
def test_the_fewest_moves_agree_with_trying_every_assignment(n: int, racks: str, rates: list[int],
                                                             sizes: list[int], rf2: list[bool]) -> None:
    """Every partition starts on brokers 0 and 1 (or 0 alone); the planner's plan sets the loads
    to reach, and every assignment at least as good on each, counts within one, is tried."""
    brokers = [Broker(i, None if racks == "none" else "ab"[i % 2]) for i in range(n)]
    parts = [part(f"t{i}", 0, (0, 1) if rf2[i] else (0,), rate, sizes[i] * GiB) for i, rate in enumerate(rates)]
    cluster = ClusterModel(brokers, parts)
    plan = plan_rebalance(cluster).plan.replicas
    options = _options(cluster)
    planned = [(tuple(plan.get(p.tp, p.replicas)), plan.get(p.tp, p.replicas)[0]) for p in cluster]
    live = sorted(cluster.brokers)
    worst = {r: max(v.values(), default=0) for r, v in _loads(cluster, planned).items()}
    # Counts within one, or as close as the plan's (RF-1 partitions can leave leaders 2 apart).
    band = {r: (min(sum(v.values()) // n, *(v[b] for b in live)), max(-(-sum(v.values()) // n), worst[r]))
            for r, v in _loads(cluster, planned).items() if r in ("count", "leaders")}
    fewest = math.inf
    for choice in itertools.product(*options):
        loads = _loads(cluster, choice)
        if (all(max(v.values(), default=0) <= worst[r] for r, v in loads.items() if r not in band)
                and all(band[r][0] <= loads[r][b] <= band[r][1] for r in band for b in live)):
            fewest = min(fewest, sum(b not in p.replicas for p, (chosen, _) in zip(cluster, choice, strict=True)
                                     for b in chosen))
    assert exact_targets.fewest_moves(cluster, plan) == (fewest, fewest)
