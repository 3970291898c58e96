"""Step 1 of the runbook: read the cluster, as a snapshot record other steps plan from."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.log_dirs import with_log_dirs
from kafka_ops.errors import KafkaOpsError
from kafka_ops.model import ClusterModel
from kafka_ops.snapshot import load_snapshot, model_from_dict, model_to_dict
from kafka_ops.workflow.records import Record

log = logging.getLogger(__name__)


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


def read_cluster(backend: ClusterBackend, clock: Callable[[], float] = time.time) -> ClusterSnapshot:
    """Brokers, partitions with their sizes, and topic configs, now.

    ZooKeeper holds no sizes: in ZooKeeper mode they come from the brokers' log directories
    over the Admin API (DescribeLogDirs, as Kafka's tools read them), so plans and approval
    digests show the bytes a move copies even without a metrics analysis. When the brokers
    cannot be asked, the sizes stay unknown (0) and the snapshot's source says so."""
    model = backend.describe_cluster()
    source = repr(backend)
    if model.partitions and not any(p.size_bytes for p in model) \
            and hasattr(backend, "describe_log_dirs"):
        try:
            model = with_log_dirs(model, backend.describe_log_dirs())
        except KafkaOpsError as e:
            log.warning("partition sizes unknown: the brokers' log dirs could not be read: %s", e)
            source += f" (sizes unknown: {e})"
    return ClusterSnapshot.of(model, clock(), source)


def read_snapshot_file(path: str | Path) -> ClusterSnapshot:
    """A snapshot file (``kafka-ops snapshot`` output or hand-written) as a record."""
    return ClusterSnapshot.of(load_snapshot(path), 0.0, str(path))
