"""The files the view reads, written next to a run's plan before anyone is asked to approve.

``write_run_files`` is what the ``predict`` task calls: the plan task's digest (``planned.json``),
the full diff with sizes and leaders from the snapshot (``diff.json``), and the predicted timeline
of the plan on the emulator's replication model (``prediction.json``), and per-broker totals
before and after the plan (``brokers.json``: the before/after chart, drawn by the page itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_ops.model import ClusterModel
from kafka_ops.plan import ReassignmentPlan
from kafka_ops_provider.ui.runs import BROKERS, DIFF, PLANNED, PREDICTION


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


def broker_totals(model: ClusterModel, plan: ReassignmentPlan) -> list[dict[str, Any]]:
    """Per broker: replicas, preferred leaders and bytes on disk, before and after the plan
    (after: the plan's replica lists, their first replica leading once leaders are elected)."""
    out = {b: {"broker": b, "replicas": [0, 0], "leaders": [0, 0], "disk": [0, 0]}
           for b in model.broker_ids}
    for p in model:
        after = tuple(plan.replicas.get(p.tp, p.replicas))
        for i, replicas, leader in ((0, p.replicas, p.leader), (1, after, after[0] if after else -1)):
            for b in replicas:
                if b in out:
                    out[b]["replicas"][i] += 1
                    out[b]["disk"][i] += p.size_bytes
            if leader in out:
                out[leader]["leaders"][i] += 1
    return [out[b] for b in sorted(out)]


def write_run_files(directory: str | Path, planned: dict[str, Any], model: ClusterModel,
                    plan: ReassignmentPlan, prediction: dict[str, Any] | None) -> Path:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    _atomic(out / DIFF, json.dumps(diff_rows(model, plan), separators=(",", ":")))
    _atomic(out / BROKERS, json.dumps(broker_totals(model, plan), separators=(",", ":")))
    if prediction is not None:
        _atomic(out / PREDICTION, json.dumps(prediction))
    _atomic(out / PLANNED, json.dumps(planned, indent=1, default=str))  # last: marks complete
    return out


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
