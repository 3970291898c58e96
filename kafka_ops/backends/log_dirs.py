"""Log directories over the Admin API (DescribeLogDirs, AlterReplicaLogDirs), for both backends.

ZooKeeper does not hold log directories: Kafka's reassign tool reads and moves them over the
Admin API even in ZooKeeper mode, and so do we. Both backends hand a kafka-python
KafkaAdminClient to these functions (confluent-kafka 2.x has neither call).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.model import ClusterModel, LogDir, TopicPartition

Replica = tuple[TopicPartition, int]


@dataclass(frozen=True)
class BrokerLogDirs:
    """What one broker's DescribeLogDirs says: its directories (offline ones answered with an
    error), the directory of each replica it hosts, their sizes, and future replicas (moves
    between directories in flight: partition -> directory being copied into)."""

    broker: int
    dirs: tuple[LogDir, ...]
    replicas: dict[TopicPartition, str] = field(default_factory=dict)
    sizes: dict[TopicPartition, int] = field(default_factory=dict)
    futures: dict[TopicPartition, str] = field(default_factory=dict)


def parse_describe_log_dirs(broker: int, log_dirs: list[dict[str, Any]]) -> BrokerLogDirs:
    """kafka-python's describe_log_dirs answer for one broker, as a BrokerLogDirs."""
    dirs = []
    replicas: dict[TopicPartition, str] = {}
    sizes: dict[TopicPartition, int] = {}
    futures: dict[TopicPartition, str] = {}
    for d in log_dirs:
        total = d.get("total_bytes", -1)
        dirs.append(LogDir(d["log_dir"], max(int(total), 0), d.get("error_code", 0) == 0))
        for topic in d.get("topics", []):
            for p in topic["partitions"]:
                tp = TopicPartition(topic["name"], p["partition_index"])
                if p.get("is_future_key"):
                    futures[tp] = d["log_dir"]
                else:
                    replicas[tp] = d["log_dir"]
                    sizes[tp] = int(p["partition_size"])
    return BrokerLogDirs(broker, tuple(dirs), replicas, sizes, futures)


def describe(client: Any, brokers: Iterable[int],
             topics: Mapping[int, Mapping[str, list[int]]] | None = None) -> dict[int, BrokerLogDirs]:
    """DescribeLogDirs of each broker (``topics[broker]`` narrows what it lists)."""
    out = {}
    for b in brokers:
        wanted = None if topics is None else (dict(topics.get(b, {})) or None)
        answers = client.describe_log_dirs(topic_partitions=wanted, brokers=[b])
        for answer in answers:
            out[answer["broker"]] = parse_describe_log_dirs(answer["broker"], answer["log_dirs"])
    return out


def alter(client: Any, moves: Mapping[Replica, str]) -> dict[Replica, str | None]:
    """AlterReplicaLogDirs: per replica the Kafka error name, None when accepted."""
    from kafka import TopicPartitionReplica

    if not moves:
        return {}
    answer = client.alter_replica_log_dirs(
        {TopicPartitionReplica(tp.topic, tp.partition, b): path for (tp, b), path in moves.items()})
    out: dict[Replica, str | None] = {}
    for tpr, error in answer.items():
        name = getattr(error, "message", None) or getattr(error, "__name__", str(error))
        ok = getattr(error, "errno", 0) == 0
        out[TopicPartition(tpr.topic, tpr.partition), tpr.broker_id] = None if ok else name
    return out


def with_log_dirs(model: ClusterModel, described: Mapping[int, BrokerLogDirs]) -> ClusterModel:
    """The model with brokers' directories, each replica's directory and (where the model
    has none) partition sizes filled in."""
    brokers = [dataclasses.replace(b, log_dirs=described[b.id].dirs) if b.id in described else b
               for b in model.brokers.values()]
    parts = []
    for p in model:
        dirs = tuple(described[r].replicas.get(p.tp) if r in described else None
                     for r in p.replicas)
        if any(dirs):
            p = dataclasses.replace(p, log_dirs=dirs)
        if not p.size_bytes:  # ZooKeeper holds no sizes: the leader's log, else the largest
            sizes = {r: described[r].sizes[p.tp] for r in p.replicas
                     if r in described and p.tp in described[r].sizes}
            if sizes:
                p = dataclasses.replace(p, size_bytes=sizes.get(p.leader, max(sizes.values())))
        parts.append(p)
    return ClusterModel(brokers, parts, model.topic_configs)


def describe_cluster_with_log_dirs(backend: Any) -> ClusterModel:
    """The cluster with its log directories: from describe_cluster when the backend reads
    them there (Admin API), else with one DescribeLogDirs per live broker (ZooKeeper)."""
    model = backend.describe_cluster()
    if any(b.log_dirs for b in model.brokers.values()):
        return model
    return with_log_dirs(model, backend.describe_log_dirs())
