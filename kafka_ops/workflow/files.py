"""Plan files on disk: a plan and its rollback written as a pair, the base read back.

One convention everywhere: ``PLAN.json`` goes with ``PLAN.rollback.json``, the replicas the
plan's partitions had when it was made. That file is both the way back and the base the
executor's drift check compares against.
"""

from __future__ import annotations

import os
from pathlib import Path

from kafka_ops.errors import ValidationError
from kafka_ops.model import TopicPartition
from kafka_ops.plan import ReassignmentPlan


def rollback_path(output: str | Path) -> Path:
    """PLAN.json -> PLAN.rollback.json (any other name gets .rollback.json appended)."""
    path = Path(output)
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    return path.with_name(stem + ".rollback.json")


def write_files(files: dict[str, str]) -> None:
    """Write all files or none: each goes to a temp file first, renamed once all are written."""
    temps: list[Path] = []
    try:
        for path, text in files.items():
            tmp = Path(f"{path}.tmp{os.getpid()}")
            tmp.write_text(text)
            temps.append(tmp)
    except OSError as e:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise ValidationError(f"cannot write {e.filename}: {e.strerror}") from None
    for tmp, path in zip(temps, files, strict=True):
        tmp.replace(path)


def write_plan_pair(plan: ReassignmentPlan, rollback: ReassignmentPlan, output: str | Path) -> Path:
    """Write the plan to ``output`` and its rollback beside it, both or neither; returns the
    rollback's path."""
    back = rollback_path(output)
    write_files({str(output): plan.to_json(), str(back): rollback.to_json()})
    return back


def read_base(plan_path: str | Path, base_path: str | Path | None = None
              ) -> dict[TopicPartition, tuple[int, ...]] | None:
    """The replicas the plan was computed against: ``base_path``, else the plan's rollback
    file when it exists; None when there is none (the drift check then uses the cluster now)."""
    path = Path(base_path) if base_path else rollback_path(plan_path)
    if not path.exists():
        if base_path:
            raise ValidationError(f"base file {path} does not exist")
        return None
    return ReassignmentPlan.read(path).replicas
