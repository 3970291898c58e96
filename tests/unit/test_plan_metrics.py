"""The benchmark's scoring script (benchmarks/plan_metrics.py): the floors it holds plans to."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from ortools.sat.python import cp_model

from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.pools import Pool, PoolSet
from kafka_ops.testing.feasibility import count_spread_floor, feasibility, rack_key, rack_limit
from kafka_ops.testing.strategies import adversarial_clusters

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
plan_metrics = importlib.import_module("plan_metrics")

GiB = 1024**3


def test_a_rack_of_one_broker_raises_the_topic_floor_and_the_disk_floor() -> None:
    # Racks a and b of 2 brokers, c of 1: every RF-3 partition keeps a replica on broker 4, so
    # it holds all 4 of topic t (the others 2 each) and 4 GiB where the mean is 2.4 GiB.
    brokers = [Broker(i, rack=r) for i, r in enumerate("aabbc")]
    cluster = ClusterModel(brokers, [Partition("t", i, (i % 2, 2 + i % 2, 4), leader=i % 2,
                                               size_bytes=GiB) for i in range(4)])
    score = plan_metrics.score(cluster)
    assert score["topic_spread_floor"] == 1  # 12 replicas do not divide over 5 brokers
    assert score["topic_spread_floor_racks"] == 2  # 4 on broker 4, 2 on the others at best
    assert score["topic_spread_sum"] == 2
    assert abs(score["disk_floor"] - 4 / 2.4) < 1e-9
    assert score["replicas_floor"] == 2  # 4 on broker 4, 8 over the other 4 brokers
    cost = plan_metrics.moves(cluster, {})
    missed = plan_metrics.targets_missed(score, cost)
    assert "disk 1.667 (the loads allow no better than 1.667)" in missed
    assert "replicas max-min 2 (the racks allow no better than 2)" in missed
    # A count above that floor misses, though the floor is above 1.
    assert "replicas max-min 3 > 2" in plan_metrics.targets_missed({**score, "replicas_max_min": 3}, cost)
    assert not any(m.startswith("topic spread") for m in missed)  # 2 = 1 x its floor


def test_without_racks_the_floors_are_the_plain_ones() -> None:
    cluster = ClusterModel([Broker(i) for i in range(3)],
                           [Partition("t", i, (i % 3, (i + 1) % 3), leader=i % 3, size_bytes=GiB)
                            for i in range(4)])
    score = plan_metrics.score(cluster)
    assert score["topic_spread_floor_racks"] == score["topic_spread_floor"] == 1
    assert score["disk_floor"] == 1.0  # no replica heavier than the mean, nothing forced
    assert score["replicas_floor"] == 1  # 8 replicas on 3 brokers


def test_the_disk_floor_fills_a_small_rack_only_with_replicas_that_may_enter_it() -> None:
    # Broker 4 (rack c, alone) holds a replica of each RF-3 partition: 20.1 GiB. The replica
    # counts one apart give it 4 of the 21 replicas, so one more: the lightest partition is
    # the 0.1 GiB RF-3 one, already there; the lightest that may still come is 2 GiB.
    brokers = [Broker(i, rack=r) for i, r in enumerate("aabbc")]
    sizes = [10 * GiB, 10 * GiB, GiB // 10]
    parts = [Partition("big", i, (i % 2, 2 + i % 2, 4), leader=4, size_bytes=s)
             for i, s in enumerate(sizes)]
    parts += [Partition("small", i, (i % 4,), leader=i % 4, size_bytes=2 * GiB) for i in range(12)]
    score = plan_metrics.score(ClusterModel(brokers, parts))
    mean = (3 * sum(sizes) + 12 * 2 * GiB) / 5
    assert abs(score["disk_floor"] - (sum(sizes) + 2 * GiB) / mean) < 1e-9


def test_a_rack_that_may_hold_little_leaves_the_other_racks_the_rest_of_the_load() -> None:
    # Rack a (3 brokers) may hold one replica of each RF-2 partition, 21 GiB at most: racks b
    # and c (a broker each) hold the other 21, 10.5 each, where the mean is 42 / 5 = 8.4.
    # Each rack's least alone (rack b's: its two lightest replicas) gives a floor of 1.
    brokers = [Broker(i, rack=r) for i, r in enumerate("aaabc")]
    parts = [Partition("t", i, (i % 3, 3 + i % 2), leader=i % 3, size_bytes=(i + 1) * GiB)
             for i in range(6)]
    score = plan_metrics.score(ClusterModel(brokers, parts))
    assert abs(score["disk_floor"] - 10.5 / 8.4) < 1e-9


@settings(max_examples=60, deadline=None, derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(adversarial_clusters())
def test_the_disk_floor_is_never_above_the_exact_one(case) -> None:
    # Above it, the benchmark would excuse a plan the loads allow to do better ("the loads
    # allow no better than"). The exact one, by CP-SAT: the least max disk over placements of
    # every partition on the live brokers within the rack limits, with the replica counts in
    # the range the floor assumes (count_range). A placement found bounds it from above.
    drawn, _, _ = case
    live = [b for b, broker in drawn.brokers.items() if broker.alive]
    cluster = ClusterModel([replace(b, capacity=BrokerCapacity()) for b in drawn.brokers.values()],
                           [replace(p, adding_replicas=(), removing_replicas=()) for p in drawn
                            if len(p.replicas) <= len(live)])
    assume(live and any(p.size_bytes for p in cluster))
    bottom, top = plan_metrics._RackFloors(cluster, live).count_range()
    model = cp_model.CpModel()
    x = {(i, b): model.new_bool_var(f"x{i}_{b}") for i in range(len(cluster.partitions)) for b in live}
    racks = {rack_key(cluster, b) for b in live}
    for i, p in enumerate(cluster):
        model.add(sum(x[i, b] for b in live) == len(p.replicas))
        lim = rack_limit(cluster, live, len(p.replicas))
        for r in racks:
            model.add(sum(x[i, b] for b in live if rack_key(cluster, b) == r) <= lim)
    heaviest = model.new_int_var(0, sum(p.size_bytes // GiB * len(p.replicas) for p in cluster), "max")
    for b in live:
        model.add_linear_constraint(sum(x[i, b] for i in range(len(cluster.partitions))), bottom, top)
        model.add(sum(p.size_bytes // GiB * x[i, b] for i, p in enumerate(cluster)) <= heaviest)
    model.minimize(heaviest)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10.0
    status = solver.solve(model)
    assume(status in (cp_model.OPTIMAL, cp_model.FEASIBLE))
    mean = sum(p.size_bytes // GiB * len(p.replicas) for p in cluster) / len(live)
    assert plan_metrics.score(cluster)["disk_floor"] * mean <= solver.objective_value + 1e-6


def test_a_new_broker_in_a_small_rack_must_receive_what_its_rack_holds_beyond_the_others() -> None:
    # Racks a and b of 3 brokers, c of 2: broker 6 holds a replica of each of 12 RF-3
    # partitions (1 GiB), broker 7 is new and empty; six RF-1 partitions of 1 GiB sit on 0-5.
    # Mean 42 / 8 = 5.25 GiB. Rack c must keep 12 GiB, so at best 6 per broker (the disk
    # floor, 1.143 x the mean): broker 7 needs 12 - 6 = 6 GiB, not 0.97 x the mean (5.09),
    # and broker 6 sheds 6, not 12 - 1.03 x the mean (6.59: the floor is above 1.03).
    brokers = [Broker(i, rack=r) for i, r in enumerate("aaabbbcc")]
    parts = [Partition("t", i, (i % 3, 3 + i % 3, 6), leader=6, size_bytes=GiB) for i in range(12)]
    parts += [Partition("f", i, (i,), leader=i, size_bytes=GiB) for i in range(6)]
    cluster = ClusterModel(brokers, parts)
    mean = 42 / 8
    assert abs(plan_metrics.score(cluster)["disk_floor"] - 6 / mean) < 1e-9
    # Brokers 0-5 hold 5 GiB each, all that rack c leaves them: within the band around that.
    assert abs(plan_metrics.moves(cluster, {})["bytes_bound"] / GiB - 6) < 1e-6
    # With broker 5's RF-1 partition on broker 0, rack b lacks 1 GiB: with 5 replicas per
    # broker it holds its 12 forced ones and 3 of 1 GiB at least (broker 5 alone lacks 0.85).
    parts[-1] = Partition("f", 5, (0,), leader=0, size_bytes=GiB)
    assert abs(plan_metrics.moves(ClusterModel(brokers, parts), {})["bytes_bound"] / GiB - 7) < 1e-6


def test_a_partition_heavier_than_a_brokers_share_of_network_out_sets_the_leader_floors() -> None:
    # 3 brokers, 6 RF-1 partitions: one sends 10/s, the rest 1/s (mean per broker 5). With
    # leader counts one apart its leader leads 2 partitions: at least 10 + 1, 2.2 x the mean.
    parts = [Partition("t", i, (i % 3,), leader=i % 3, bytes_in_per_sec=4.0 if i == 0 else 0.5,
                       bytes_out_per_sec=10.0 if i == 0 else 1.0) for i in range(6)]
    score = plan_metrics.score(ClusterModel([Broker(i) for i in range(3)], parts))
    assert abs(score["net_out_floor"] - 11 / 5) < 1e-9
    assert abs(score["leader_in_floor"] - 4.5 / (6.5 / 3)) < 1e-9  # 4 + 0.5 over the mean
    missed = plan_metrics.targets_missed(score, {"moves": 0, "moves_bound": 0, "bytes": 0, "bytes_bound": 0})
    assert "network out 2.200 (the loads allow no better than 2.200)" in missed
    # Partitions that are all lighter than a share: the plain target.
    even = [Partition("t", i, (i % 3,), leader=i % 3, bytes_out_per_sec=1.0) for i in range(6)]
    assert plan_metrics.score(ClusterModel([Broker(i) for i in range(3)], even))["net_out_floor"] == 1.0


def test_leaders_evenable_agrees_with_brute_force() -> None:
    """The augmenting-path check against trying every choice of leaders, on 300 random small
    topics (3-5 live brokers, 2-8 partitions of RF 1-3, some replicas on a dead broker 9)."""
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(300):
        n = rng.choice((3, 4, 5))
        live = list(range(n))
        lists = [tuple(rng.sample([*live, 9], rng.choice((1, 2, 3)))) for _ in range(rng.randint(2, 8))]
        k = len(lists)
        lo, hi = k // n, -(-k // n)
        choices = [[b for b in reps if b in live] for reps in lists]
        brute = any(all(lo <= pick.count(b) <= hi for b in live)
                    for pick in map(list, itertools.product(*choices)))
        assert plan_metrics.leaders_evenable(lists, live) == brute, (lists, n)


def test_a_rack_repair_copies_its_partition_out_and_the_rack_is_refilled() -> None:
    # Brokers 0 and 1 (rack a) hold both replicas of a 10 GiB RF-2 partition; 2 and 3 (rack b)
    # a 10 GiB RF-1 partition each: counts and disk even, so neither bound alone asks for a
    # byte. Rack awareness copies one of big's replicas to rack b, whatever the plan, and rack
    # a must be refilled: at least 10 GiB arrive (the plan copies 20: big to broker 2, and a
    # 10 GiB partition back into rack a).
    brokers = [Broker(i, rack=r) for i, r in enumerate("aabb")]
    parts = [Partition("big", 0, (0, 1), leader=0, size_bytes=10 * GiB)]
    parts += [Partition("f", i, (i,), leader=i, size_bytes=10 * GiB) for i in (2, 3)]
    assert abs(plan_metrics.moves(ClusterModel(brokers, parts), {})["bytes_bound"] / GiB - 10) < 1e-6


def test_a_rack_that_may_hold_less_than_the_mean_raises_the_count_floor() -> None:
    # Rack a (5 brokers) holds one replica of each of the 18 partitions at most: one of its
    # brokers 3 or fewer; racks b and c (2 brokers each) share the other 30: one of them 8 or more.
    brokers = [Broker(i, rack=r) for i, r in enumerate("aaaaabbcc")]
    parts = [Partition("t", i, (i % 2, 5 + i % 2, 7 + i % 2), leader=i % 2) for i in range(12)]
    parts += [Partition("u", j, (j % 2, 5 + j % 2), leader=j % 2) for j in range(6)]
    score = plan_metrics.score(ClusterModel(brokers, parts))
    assert score["replicas_floor"] == 5


@settings(max_examples=100, deadline=None, derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(adversarial_clusters())
def test_the_count_floor_is_never_above_the_exact_one(case) -> None:
    # Above it, the benchmark would excuse a plan the racks allow to do better ("the racks
    # allow no better than"); the flow oracle decides the exact one.
    drawn, _, _ = case
    cluster = ClusterModel([replace(b, capacity=BrokerCapacity()) for b in drawn.brokers.values()],
                           [replace(p, adding_replicas=(), removing_replicas=()) for p in drawn])
    assume(feasibility(cluster).feasible)
    assert plan_metrics.score(cluster)["replicas_floor"] <= max(1, count_spread_floor(cluster))


def test_with_pools_every_target_holds_pool_by_pool_and_the_bound_counts_what_must_enter() -> None:
    # Pool x (brokers 0, 1) owns topic x, whose two partitions sit on brokers 2 and 3; pool y
    # the other way round. The cluster's counts are even (bound 0), but all 4 replicas must
    # move, and a plan that swaps them leaves each pool even.
    brokers = [Broker(i, rack="ab"[i % 2]) for i in range(4)]
    parts = [Partition("x", 0, (2,), leader=2, size_bytes=GiB), Partition("x", 1, (3,), leader=3, size_bytes=GiB),
             Partition("y", 0, (0,), leader=0, size_bytes=GiB), Partition("y", 1, (1,), leader=1, size_bytes=GiB)]
    cluster = ClusterModel(brokers, parts)
    pools = PoolSet([Pool("x", frozenset({0, 1}), ("x",)), Pool("y", frozenset({2, 3}), ("y",))])
    assert plan_metrics.moves(cluster, {})["moves_bound"] == 0
    assert plan_metrics.pool_moves_bound(cluster, pools) == 4
    start = plan_metrics.pool_scores(cluster, pools)
    assert start["x"]["replicas_max_min"] == 0  # its topic counts 0 on both its brokers
    swap = {TopicPartition("x", 0): (0,), TopicPartition("x", 1): (1,),
            TopicPartition("y", 0): (2,), TopicPartition("y", 1): (3,)}
    after = plan_metrics.pool_scores(cluster, pools, swap)
    assert {sc["disk_max_mean"] for sc in after.values()} == {1.0}
    assert plan_metrics.pool_targets_missed(after, 4, 4) == []
    # Both of x's replicas on broker 0: pool x's counts, leaders and disk are uneven (2 GiB
    # against a mean of 1), pool y's are not (no traffic: the rates are even). Had the plan
    # made one more move, it would be above 1.10 x the bound.
    crowd = {**swap, TopicPartition("x", 1): (0,)}
    scores = plan_metrics.pool_scores(cluster, pools, crowd)
    assert plan_metrics.pool_topic_spread(cluster, pools, crowd) == (2, 0)
    missed = plan_metrics.pool_targets_missed(scores, 4, 4)
    assert missed == ["x: replicas max-min 2 > 1", "x: leaders max-min 2.000 > 1.000", "x: disk 2.000 > 1.030"]
    assert plan_metrics.pool_targets_missed(scores, 5, 4)[-1] == "moves / bound 1.250 > 1.100"
