"""Step 1 of the runbook: read the cluster, as a snapshot record other steps plan from."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.log_dirs import describe_cluster_with_log_dirs
from kafka_ops.model import ClusterModel
from kafka_ops.snapshot import load_snapshot, model_from_dict, model_to_dict
from kafka_ops.workflow.records import Record


@dataclass(frozen=True)
class ClusterSnapshot(Record):
    """The cluster in kafka_ops' snapshot JSON (the ``--cluster`` file format), and when."""

    cluster: dict[str, Any]
    taken_at: float = 0.0
    source: str = ""  # where it came from: a backend's repr or a file name (never a secret)
    summary: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, model: ClusterModel, taken_at: float = 0.0, source: str = "") -> ClusterSnapshot:
        summary = {"brokers": len(model.brokers), "alive_brokers": len(model.alive_broker_ids),
                   "partitions": len(model.partitions), "replicas": model.replica_count,
                   "under_replicated": sum(p.is_under_replicated for p in model)}
        return cls(model_to_dict(model), taken_at, source, summary)

    def model(self) -> ClusterModel:
        return model_from_dict(self.cluster)


def read_cluster(backend: ClusterBackend, clock: Callable[[], float] = time.time, *,
                 log_dirs: bool = False) -> ClusterSnapshot:
    """Brokers, partitions (with sizes where the backend reads them) and topic configs, now.
    ``log_dirs``: also every broker's log directories and each replica's (JBOD plans need
    them); the Admin API backend reads them anyway, ZooKeeper mode asks the brokers'
    DescribeLogDirs (as Kafka's reassign tool does) only when asked to."""
    model = describe_cluster_with_log_dirs(backend) if log_dirs else backend.describe_cluster()
    return ClusterSnapshot.of(model, clock(), repr(backend))


def read_snapshot_file(path: str | Path) -> ClusterSnapshot:
    """A snapshot file (``kafka-ops snapshot`` output or hand-written) as a record."""
    return ClusterSnapshot.of(load_snapshot(path), 0.0, str(path))
