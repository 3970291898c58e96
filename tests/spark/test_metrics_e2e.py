"""End to end: emulator (ZooKeeper mode) -> real Prometheus -> snapshot -> Spark -> planner.

The cluster's replica counts and sizes are even while its network load is not: three hot
topics are led from brokers 0 and 1. The live ZooKeeper backend reads no rates, so a plan made
from it cannot see the skew; the plan made through the load seam from the Spark analysis does.
On the loads it sees, the informed plan balances network in (<= 1.08) where the blind plan ends
0.1 or more above it; on the window's true loads (the emulator's rates times its traffic shape
over the analysed window) it improves network in and network out on the start. The estimation
error of per-partition bytes-in against the emulator's true rates is printed (pytest -s) and bounded.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kafka_ops.backends.connection import ClusterConnection, connect
from kafka_ops.emulator.metrics import BrokerMetrics, Traffic
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.loads import (
    AnalysisOutputSource,
    ModelFieldsSource,
    broker_loads,
    lay_loads,
)
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.monitor.snapshot import take_snapshot
from kafka_ops.monitor.sources import PrometheusConfig, PrometheusSource
from kafka_ops.planner import plan_rebalance
from kafka_ops.testing.prometheus import prometheus_for_emulator
from spark_jobs.balance_analysis import analyze

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper]
GiB, MiB = 1024**3, 1024**2


def skewed_network_cluster(seed: int = 7) -> ClusterModel:
    """6 brokers on racks a, b, c; 12 replicas each, all 64 GiB; hot topics led by 0 and 1.

    The size is the replicas' now; the backfill grows each log at its topic's rate up to now,
    so the analysed window (which ends 5-10 minutes before now) sees the hot ones up to 2.3 GiB
    smaller, by an amount the wall clock decides. At 1 GiB that put the hot replicas anywhere
    between 0.5 GiB and empty: which swaps the disk bound allowed changed from run to run, and
    one CI run planned network in to 1.20 (the planner's gap this exposed has its own test in
    tests/unit/test_planner_network.py). At 64 GiB they differ by at most 4%.
    """
    rng = random.Random(seed)
    cap = BrokerCapacity(10 * 1024 * GiB, 125 * MiB, 125 * MiB)
    brokers = [Broker(i, "abc"[i // 2], capacity=cap) for i in range(6)]
    parts = []
    hot_pairs = [(0, 2), (1, 3), (0, 3), (1, 2)]
    for t in range(3):
        for p, replicas in enumerate(hot_pairs):
            rate = 2 * MiB * rng.uniform(0.7, 1.3)
            parts.append(Partition(f"hot-{t}", p, replicas, replicas[0], replicas, 64 * GiB, rate,
                                   2 * rate))
    cold = [(4, 5), (5, 4)] * 6 + [(0, 3), (1, 2), (2, 0), (3, 1)] * 3
    for i, replicas in enumerate(cold):
        rate = 20 * 1024 * rng.uniform(0.7, 1.3)
        parts.append(Partition(f"cold-{i // 6}", i % 6, replicas, replicas[0], replicas, 64 * GiB, rate,
                               rate))
    return ClusterModel(brokers, parts)


def _max_over_mean(loads: dict, resource: str) -> float:
    values = [getattr(b, resource) for b in loads.values()]
    return max(values) / (sum(values) / len(values))


def test_network_skew_seen_through_metrics(spark, zk_connect: str, tmp_path: Path) -> None:
    truth = skewed_network_cluster()
    counts = {b.replicas for b in broker_loads(truth).values()}
    assert counts == {12}  # even replica counts: only the network is skewed
    emulator = Emulator(truth, zookeeper=zk_connect, metrics_port_base=0)
    face = emulator.metrics_face
    assert face is not None
    # The day's shape and noise, without bursts: a hot topic bursting (2-4x) inside the analysed
    # window makes its partitions too big to spread evenly, so what the plans can reach would
    # depend on where the wall clock puts the window (the traffic model has its own tests).
    # The window is the two hours before the last whole five minutes but one, and the traffic's
    # origin two days before its end: every run analyses the same buckets of per-topic noise
    # (a loose origin let each run draw its own, and one planned network in to 1.128 where the
    # others reached 1.03-1.10; the planner on this cluster is as good as its estimate).
    end = (time.time() // 300) * 300 - 300
    start = end - 2 * 3600
    face.metrics = BrokerMetrics(emulator.cluster, Traffic(
        sorted({p.topic for p in truth}), end - 2 * 86400, burst_chance=0.0))
    with emulator:
        with prometheus_for_emulator(face, history=3 * 3600, step=60, scrape_interval="5s") as prom:
            backend = connect(ClusterConnection(zookeeper=zk_connect))
            try:
                live = backend.describe_cluster()
            finally:
                backend.close()
            assert all(p.bytes_in_per_sec == 0 for p in live)  # ZooKeeper carries no rates
            result = take_snapshot(live, PrometheusSource(PrometheusConfig(prom.url, job="kafka")),
                                   tmp_path / "snapshots", "e2e", step=300, start=start, end=end)
            traffic = face.metrics.traffic
    assert result.samples == 25 and not result.issues.get("missing_rate_samples")
    out = tmp_path / "analysis"
    summary = analyze(spark, str(tmp_path / "snapshots"), "e2e", int(start), int(end), str(out))
    assert not summary["imbalance"]["network_in"]["balanced"]
    assert summary["imbalance"]["replicas"]["balanced"]
    loads = AnalysisOutputSource(out).read(live)
    assert len(loads.partitions) == len(truth.partitions)

    # Estimation error of per-partition bytes-in: the exact mean a perfect estimator would give
    # is the true rate times the traffic shape averaged over the same rate() windows.
    times = np.arange(start, end + 1, 300)
    errors, topic_errors = [], {}
    for p in truth:
        t = traffic.index[p.topic]
        mult = np.mean([(traffic.integral(s)[t] - traffic.integral(s - 300)[t]) / 300
                        for s in times])
        exact = p.bytes_in_per_sec * mult
        got = loads.partitions[p.tp].bytes_in_per_sec
        errors.append(abs(got - exact) / exact)
        key = (p.topic, p.leader)
        e, g = topic_errors.get(key, (0.0, 0.0))
        topic_errors[key] = (e + exact, g + got)
    errors_arr = np.array(errors)
    print(f"\nper-partition bytes-in estimation error vs the emulator's true rates: mean "
          f"{errors_arr.mean():.1%}, median {np.median(errors_arr):.1%}, max {errors_arr.max():.1%}"
          f" over {len(errors)} partitions")
    # The even split of a broker's topic rate is exact in sum, off per partition by the spread
    # of rates within the topic (the generator's +-30%).
    for exact_sum, got_sum in topic_errors.values():
        assert got_sum == pytest.approx(exact_sum, rel=0.02)
    assert errors_arr.max() < 0.45 and errors_arr.mean() < 0.15

    # The loads land on the right brokers through the seam: per-broker network from the laid
    # estimates agrees with the per-broker network of the true rates (window mean).
    mult_all = {p.tp: np.mean([(traffic.integral(s)[traffic.index[p.topic]]
                                - traffic.integral(s - 300)[traffic.index[p.topic]]) / 300
                               for s in times]) for p in truth}
    seen_model = lay_loads(live, loads)
    window_truth = lay_loads(live, ModelFieldsSource().read(ClusterModel(
        truth.brokers.values(), [replace(p, bytes_in_per_sec=p.bytes_in_per_sec * mult_all[p.tp],
                                         bytes_out_per_sec=p.bytes_out_per_sec * mult_all[p.tp])
                                 for p in truth])))
    est_b, true_b = broker_loads(seen_model), broker_loads(window_truth)
    for b in true_b:
        for r in ("network_in_bytes_per_sec", "network_out_bytes_per_sec"):
            assert getattr(est_b[b], r) == pytest.approx(getattr(true_b[b], r), rel=0.05), (b, r)

    # The planner works on what the seam gives it: on those loads (the estimate) the plan made
    # through the seam balances network in (1.043) where the plan blind to rates cannot (1.26).
    # On the window's true loads (the emulator's rates times the traffic shape over the analysed
    # window, what the analysis estimated) both network resources improve on the start (1.50
    # and 2.98): network in to 1.08, network out to 1.13. The per-partition estimate is exact
    # per broker in sum but off per partition by the topic's spread of rates (the generator's
    # +-30%), and each hot leadership is half a broker's mean network out, so a leadership
    # placed on a wrong estimate weighs. With the sizes pinned (above) three runs gave the
    # same numbers to the fourth decimal.
    before = broker_loads(window_truth, preferred=True)
    resources = ("network_in_bytes_per_sec", "network_out_bytes_per_sec")

    def after(plan_from: ClusterModel, judge_on: ClusterModel) -> dict[str, float]:
        plan = plan_rebalance(plan_from).plan
        assert plan.replicas
        loads_after = broker_loads(judge_on.with_assignment(plan.replicas), preferred=True)
        assert {b.replicas for b in loads_after.values()} <= {11, 12, 13}
        return {r: _max_over_mean(loads_after, r) for r in resources}

    start_ratio = {r: _max_over_mean(before, r) for r in resources}
    blind, seen = after(live, window_truth), after(seen_model, window_truth)
    blind_est, seen_est = after(live, seen_model), after(seen_model, seen_model)
    print(f"network max/mean on the window's true loads: before {start_ratio}; after the live "
          f"plan blind to rates {blind}; after the plan through the seam {seen}. On the "
          f"estimate: blind {blind_est}, through the seam {seen_est}")
    network_in = "network_in_bytes_per_sec"
    # The goal's band is 1.05, but what a plan can reach depends on the estimate: a hot
    # partition is about a fifth of a broker's mean network in, and the even split of a topic's
    # rate over its partitions moves where the hot ones are seen. Over 300 windows' sizes with
    # each partition's rates perturbed by up to 30% on top, the planner reached at most 1.070.
    assert seen_est[network_in] <= 1.08
    assert seen_est[network_in] < blind_est[network_in] - 0.1
    assert seen[network_in] < start_ratio[network_in] - 0.1  # 1.50 at the start
    assert seen["network_out_bytes_per_sec"] < start_ratio["network_out_bytes_per_sec"] - 0.2
