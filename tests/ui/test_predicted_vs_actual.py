"""Predicted against actual duration, for three plan shapes, on the emulator as a cluster.

Predicted: kafka_ops.predict (the Executor on the emulator core, manual clock, no
I/O). Actual: the same plan run by the Executor through the ZooKeeper backend against the
emulator served on a real ZooKeeper, in emulated time played ``speed`` times faster than real
(the cluster ticks on its own thread; the executor polls in real time). What differs between
the two is what differs in life: polls land late, ZooKeeper round-trips take time, the
controller acts on watches. The error is printed (for the closing note) and bounded.

Shapes: many small moves; a few huge moves; one hot broker (every move leaves broker 1, so its
outgoing limit and leader throttle set the pace).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.predict import predict

MB = 1_000_000
GB = 1_000_000_000
CAP = BrokerCapacity(10**13, 1000 * MB, 1000 * MB)
WALL_TARGET = 30.0  # seconds of real time an actual run should take (speed = predicted / this)
RESULTS = Path(os.environ.get("KAFKA_OPS_TEST_ARTIFACTS", ".artifacts")) / "predicted_vs_actual.json"


def brokers(n: int) -> list[Broker]:
    return [Broker(i, rack=f"r{i % 3}", capacity=CAP) for i in range(1, n + 1)]


def many_small() -> tuple[ClusterModel, ReassignmentPlan, ExecutionOptions]:
    parts, targets = [], {}
    for p in range(96):
        reps = (1 + p % 3, 4 + p % 3)
        parts.append(Partition("small", p, reps, reps[0], reps, size_bytes=(1 + p % 7) * GB // 2,
                               bytes_in_per_sec=50_000.0))
        targets[TP("small", p)] = (reps[0], 7 + p % 3)
    opts = ExecutionOptions(throttle=10 * MB, limits=ExecutionLimits(2, 2, 100))
    return ClusterModel(brokers(9), parts), ReassignmentPlan.from_assignment(targets), opts


def few_huge() -> tuple[ClusterModel, ReassignmentPlan, ExecutionOptions]:
    parts = [Partition("huge", p, (1 + p, 4 + p), 1 + p, (1 + p, 4 + p), size_bytes=(200 + 100 * p) * GB,
                       bytes_in_per_sec=2 * MB) for p in range(3)]
    targets = {TP("huge", p): (1 + p, 7 + p) for p in range(3)}
    opts = ExecutionOptions(throttle=50 * MB, limits=ExecutionLimits(1, 1, 10))
    return ClusterModel(brokers(9), parts), ReassignmentPlan.from_assignment(targets), opts


def hot_broker() -> tuple[ClusterModel, ReassignmentPlan, ExecutionOptions]:
    parts, targets = [], {}
    for p in range(30):
        other = 2 + p % 8
        parts.append(Partition("hot", p, (1, other), 1, (1, other), size_bytes=8 * GB))
        dest = next(b for b in range(2, 10) if b != other and (b + p) % 3 == 0) if p % 2 else \
            next(b for b in range(9, 1, -1) if b != other)
        targets[TP("hot", p)] = (other, dest)
    opts = ExecutionOptions(throttle=40 * MB, limits=ExecutionLimits(3, 3, 100))
    return ClusterModel(brokers(9), parts), ReassignmentPlan.from_assignment(targets), opts


SHAPES = {"many small moves": many_small, "few huge moves": few_huge, "one hot broker": hot_broker}


@pytest.mark.slow
@pytest.mark.zookeeper
@pytest.mark.parametrize("shape", list(SHAPES))
def test_predicted_duration_against_actual_on_the_emulator(shape, zk_connect):
    model, plan, options = SHAPES[shape]()
    predicted = predict(model, plan, replace(options, poll_interval=1.0), incremental=False)
    assert predicted.status == "completed"
    # Poll about 100 times over the run, as a long real execution would (5 s polls, hours).
    poll = max(predicted.duration / 100, 1.0)
    options = replace(options, poll_interval=poll, elect_leaders=False, missing_grace=20 * poll,
                      stall_timeout=100 * poll)
    predicted = predict(model, plan, options, incremental=False)
    speed = max(predicted.duration / WALL_TARGET, 1.0)
    with Emulator(model, zookeeper=zk_connect, mode="zk", speed=speed, tick_interval=0.02) as emu:
        backend = ZooKeeperBackend(zk_connect)
        try:
            report = Executor(backend, plan, options=options, clock=emu.clock.now,
                              sleep=lambda s: time.sleep(s / speed)).run()
        finally:
            backend.close()
        final = emu.cluster.to_model()
    assert report.status == "completed", report.message
    assert all(final.partitions[tp].replicas == tuple(t) for tp, t in plan.replicas.items())
    actual = report.elapsed
    error = 100.0 * (predicted.duration - actual) / actual
    line = {"shape": shape, "moves": len(plan), "predicted_s": round(predicted.duration, 1),
            "actual_s": round(actual, 1), "error_percent": round(error, 1),
            "poll_s": round(poll, 1), "speed": round(speed, 1)}
    print(json.dumps(line))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as out:
        out.write(json.dumps(line) + "\n")
    assert abs(error) < 20.0, line
