"""The DAGs end to end, in a real Airflow, against the emulated example cluster.

Real: Airflow 3.3.2 (scheduler, triggerer, dag-processor, api-server), ZooKeeper, the emulator
(reached by the DAGs only through Kafka's interfaces), Prometheus scraping the emulated brokers,
Spark (`spark-submit`, local[*]) through SparkSubmitOperator. Approvals are given the way on-call
gives them: over Airflow's REST API. Expected figures come from the emulator's own record, not
from anything our code reports.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kafka_ops.testing.airflow import AirflowStack, wait_for
from kafka_ops.throttle import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

DAG = "kafka_rebalance"
THROTTLE_KEYS = {LEADER_RATE, FOLLOWER_RATE, LEADER_REPLICAS, FOLLOWER_REPLICAS}
# Fast enough for CI: the emulator replicates at 600x real time; polls every second.
FAST = {"throttle": 200_000_000, "concurrency": 4, "poll_interval": 1.0, "force": True}


def replica_spread(model) -> float:
    """Replicas on the fullest broker over the mean: 1.0 is perfectly even."""
    counts = Counter(b for p in model.partitions.values() for b in p.replicas)
    counts.update({b: 0 for b in model.brokers})
    return max(counts.values()) / (sum(counts.values()) / len(counts))


def throttles_left(cluster) -> dict:
    """Throttle settings still present, from the emulator's own record."""
    emulated = cluster.emulated
    left = {}
    for b in sorted(emulated.brokers):
        found = THROTTLE_KEYS & set(emulated.broker_config(b))
        if found:
            left[f"broker {b}"] = sorted(found)
    for topic in sorted({p.topic for p in cluster.model().partitions.values()}):
        found = THROTTLE_KEYS & set(emulated.topic_config(topic))
        if found:
            left[f"topic {topic}"] = sorted(found)
    return left


def inbox(stack: AirflowStack) -> list[dict]:
    path = Path(stack.artifacts, "oncall-inbox.jsonl")  # type: ignore[attr-defined]
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_scheduled_rebalance_balances_the_cluster(airflow_stack, cluster) -> None:
    before = cluster.model()
    spread_before = replica_spread(before)
    assert spread_before > 1.3, "the example cluster starts unbalanced"

    run_id = airflow_stack.trigger(DAG, {**cluster.conf, **FAST})
    airflow_stack.wait_task(DAG, run_id, "approve", {"awaiting_input"}, timeout=600)

    # What on-call sees, and that they were told.
    request = airflow_stack.hitl(DAG, run_id, "approve")
    body = request["body"]
    for figure in ("replica moves", "Estimated duration", "| goal | status | before | after |",
                   "Plan:", "chart", "Digest:"):
        assert figure in body, f"{figure!r} missing from the approval body:\n{body}"
    assert request["options"] == ["Approve", "Reject"]
    assert any(m["run_id"] == run_id and m["task_id"] == "approve" for m in inbox(airflow_stack))
    assert cluster.replicas() == {(tp.topic, tp.partition): p.replicas
                                  for tp, p in before.partitions.items()}, "moved before approval"

    airflow_stack.answer(DAG, run_id, "approve", "Approve")
    # Waiting for replication holds no worker slot: Airflow itself records the task deferred.
    airflow_stack.wait_task(DAG, run_id, "execute", {"deferred"}, timeout=300)
    ti = airflow_stack.task_instance(DAG, run_id, "execute")
    assert ti["state"] == "deferred"
    assert airflow_stack.wait_run(DAG, run_id, timeout=600) == "success", \
        airflow_stack.task_states(DAG, run_id)

    after = cluster.model()
    spread_after = replica_spread(after)
    print(f"\nreplica spread (max/mean): before {spread_before:.2f}, after {spread_after:.2f}")
    assert spread_after < 1.15 < spread_before
    assert all(len(p.isr) == len(p.replicas) for p in after.partitions.values())
    assert throttles_left(cluster) == {}
    states = airflow_stack.task_states(DAG, run_id)
    assert states["make_safe"] == "skipped" and states["report"] == "success"
