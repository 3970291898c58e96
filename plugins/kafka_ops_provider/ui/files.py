"""The files the view reads, written next to a run's plan before anyone is asked to approve.

``write_run_files`` is what the ``predict`` task calls: the plan task's digest (``planned.json``),
the full diff with sizes and leaders from the snapshot (``diff.json``), and the predicted timeline
of the plan on the emulator's replication model (``prediction.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_ops.model import ClusterModel
from kafka_ops.plan import ReassignmentPlan
from kafka_ops_provider.ui.runs import DIFF, PLANNED, PREDICTION


def diff_rows(model: ClusterModel, plan: ReassignmentPlan) -> list[list[Any]]:
    """One row per partition the plan changes: [topic, partition, before, after, size,
    leader before, leader after (the preferred leader once the plan's leaders are elected)]."""
    rows = []
    for tp, after in plan.replicas.items():
        p = model.partitions[tp]
        if tuple(after) == tuple(p.replicas):
            continue
        rows.append([tp.topic, tp.partition, list(p.replicas), list(after), p.size_bytes,
                     p.leader, after[0]])
    return rows


def write_run_files(directory: str | Path, planned: dict[str, Any], model: ClusterModel,
                    plan: ReassignmentPlan, prediction: dict[str, Any] | None) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    _atomic(out / DIFF, json.dumps(diff_rows(model, plan), separators=(",", ":")))
    if prediction is not None:
        _atomic(out / PREDICTION, json.dumps(prediction))
    _atomic(out / PLANNED, json.dumps(planned, indent=1, default=str))  # last: marks complete
    return out


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
