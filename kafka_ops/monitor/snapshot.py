"""The snapshot workflow step: cluster metadata + a window of metrics, appended to the dataset.

A scheduled run (no explicit window) writes the sample times after the last run's end up to
now, so runs never overlap and a missed run is caught up by the next; a backfill writes the
window it is given. The result says how many rows went where and what could not be trusted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.monitor.schema import SCHEMA_VERSION, read_runs, record_run, write_table
from kafka_ops.monitor.sources import MetricsSource

log = logging.getLogger(__name__)

DEFAULT_FIRST_WINDOW = 3600.0  # a dataset's first scheduled run looks back this far


@dataclass
class SnapshotResult:
    """What one snapshot run wrote (travels through XCom: plain JSON types only)."""

    cluster: str
    start: float
    end: float
    step: float
    samples: int = 0  # sample times written
    rows: dict[str, int] = field(default_factory=dict)
    issues: dict[str, int] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    dataset: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SnapshotResult:
        return cls(**d)


def take_snapshot(
    model: ClusterModel,
    source: MetricsSource,
    dataset: str | Path,
    cluster: str,
    *,
    step: float = 300.0,
    start: float | None = None,
    end: float | None = None,
    now: Callable[[], float] = time.time,
) -> SnapshotResult:
    """Write the samples of a window to the dataset; ``start``/``end`` given = a backfill."""
    if not cluster or "/" in cluster or "=" in cluster:
        raise ValidationError(f"cluster name {cluster!r} must be non-empty, without '/' or '='")
    if step <= 0:
        raise ValidationError(f"step must be positive, got {step}")
    end = float(end if end is not None else now())
    if start is None:
        last = read_runs(dataset, cluster).get("last_end") if Path(dataset).exists() else None
        start = last + step if last is not None else end - DEFAULT_FIRST_WINDOW
    if start > end:
        return SnapshotResult(cluster, start, end, step, dataset=str(dataset))
    samples = source.samples(model, start, end, step)
    result = SnapshotResult(cluster, start, end, step, samples=len(samples.times),
                            issues={k: int(v) for k, v in sorted(samples.issues.items()) if v},
                            dataset=str(dataset))
    for name, table in samples.tables().items():
        result.rows[name] = write_table(dataset, name, cluster, table)
    if samples.times:
        # The next scheduled run starts after the last time written, not after "now".
        record_run(dataset, cluster, {"start": start, "end": float(max(samples.times)),
                                      "rows": result.rows, "issues": result.issues})
    log.info("snapshot %s: %d sample times, rows %s, issues %s", cluster, result.samples,
             result.rows, result.issues or "none")
    return result
