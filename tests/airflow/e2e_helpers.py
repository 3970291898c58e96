"""What the Airflow end-to-end tests share: run parameters and checks read from the emulator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from kafka_ops.testing.airflow import AirflowStack
from kafka_ops.throttle import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS

THROTTLE_KEYS = {LEADER_RATE, FOLLOWER_RATE, LEADER_REPLICAS, FOLLOWER_REPLICAS}
# Fast enough for CI: the emulator replicates at 600x real time, so at 200 MB/s per broker the
# small example's largest move (1.6 GB) takes a fraction of a second; 16 moves in and out per
# broker start a rebalance in one or two batches; the triggerer polls every second.
FAST = {"throttle": 200_000_000, "concurrency": 16, "poll_interval": 1.0, "force": True}


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


OPS = "kafka_broker_operation"
#: Remove broker 9: data moves, and no Spark step, so gate and failure tests stay quick.
REMOVE = {"mode": "remove", "brokers": [9], "throttle": FAST["throttle"], "concurrency": 16,
          "poll_interval": 1.0}
