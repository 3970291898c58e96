"""The execution's persisted state: what a killed executor needs to resume safely.

Written atomically (temporary file, fsync, rename) after every change that matters: which task
is in which state and step, and which throttles may be set. Throttles are recorded BEFORE they
are sent, so after a crash the file names a superset of what is on the cluster and nothing is
forgotten. A lock file (``flock``, released by the kernel when the process dies) tells a second
``execute`` or a ``cancel`` whether an executor is alive; a cancel request is a file the running
executor looks for on every poll.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_ops.errors import ReassignmentInProgressError, ValidationError
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.model import TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import ThrottleConfig

STATE_VERSION = 1

# Execution statuses. running/cancelling/paused are unfinished: the next execute (same plan)
# or cancel picks them up; the others are final.
RUNNING, CANCELLING, PAUSED = "running", "cancelling", "paused"
COMPLETED, CANCELLED, FAILED = "completed", "cancelled", "failed"
UNFINISHED = frozenset({RUNNING, CANCELLING, PAUSED})


def plan_id(plan: ReassignmentPlan) -> str:
    """A plan's identity: the hash of its Kafka JSON (same targets = same plan)."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


@dataclass
class SkippedPartition:
    tp: TopicPartition
    reason: str


@dataclass
class ExecutionState:
    plan: ReassignmentPlan
    base: dict[TopicPartition, tuple[int, ...]]
    tasks: list[ExecutionTask]
    options: dict[str, Any]
    status: str = RUNNING
    started_at: float = 0.0
    updated_at: float = 0.0
    skipped: list[SkippedPartition] = field(default_factory=list)
    throttles: ThrottleConfig = field(default_factory=lambda: ThrottleConfig({}, {}))
    submitted: set[TopicPartition] = field(default_factory=set)
    message: str = ""

    @property
    def plan_id(self) -> str:
        return plan_id(self.plan)

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED

    # -- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "plan_id": self.plan_id,
            "status": self.status,
            "message": self.message,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "options": self.options,
            "plan": self.plan.to_dict(),
            "base": [[tp.topic, tp.partition, list(r)] for tp, r in self.base.items()],
            "skipped": [[s.tp.topic, s.tp.partition, s.reason] for s in self.skipped],
            "throttles": {
                "topics": self.throttles.topics,
                "brokers": {str(b): c for b, c in self.throttles.brokers.items()},
            },
            "tasks": [_task_to_dict(t, t.tp in self.submitted) for t in self.tasks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionState:
        if data.get("version") != STATE_VERSION:
            raise ValidationError(f"execution state version {data.get('version')!r} is not supported")
        tasks = [_task_from_dict(t) for t in data["tasks"]]
        throttles = data["throttles"]
        return cls(
            plan=ReassignmentPlan.from_dict(data["plan"]),
            base={TopicPartition(t, p): tuple(r) for t, p, r in data["base"]},
            tasks=tasks,
            options=data["options"],
            status=data["status"],
            message=data.get("message", ""),
            started_at=data["started_at"],
            updated_at=data["updated_at"],
            skipped=[SkippedPartition(TopicPartition(t, p), r) for t, p, r in data["skipped"]],
            throttles=ThrottleConfig(
                throttles["topics"], {int(b): c for b, c in throttles["brokers"].items()}
            ),
            submitted={
                TopicPartition(t["topic"], t["partition"]) for t in data["tasks"] if t.get("submitted")
            },
        )


def _task_to_dict(task: ExecutionTask, submitted: bool) -> dict[str, Any]:
    return {
        "topic": task.tp.topic,
        "partition": task.tp.partition,
        "source": list(task.source),
        "target": list(task.target),
        "steps": [list(s) for s in task.steps],
        "step": task.step,
        "state": task.state.value,
        "size_bytes": task.size_bytes,
        "under_replicated": task.under_replicated,
        "started_at": task.started_at,
        "finished_at": task.finished_at,
        "error": task.error,
        "submitted": submitted,
    }


def _task_from_dict(d: dict[str, Any]) -> ExecutionTask:
    return ExecutionTask(
        tp=TopicPartition(d["topic"], d["partition"]),
        source=tuple(d["source"]),
        target=tuple(d["target"]),
        size_bytes=d["size_bytes"],
        under_replicated=d["under_replicated"],
        steps=[tuple(s) for s in d["steps"]],
        step=d["step"],
        state=TaskState(d["state"]),
        started_at=d["started_at"],
        finished_at=d["finished_at"],
        error=d["error"],
    )


class StateStore:
    """The state directory: execution.json, the executor lock, cancel requests, rollback."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / "execution.json"
        self.lock_path = self.dir / "executor.lock"
        self.cancel_path = self.dir / "cancel.request"
        self.rollback_path = self.dir / "rollback.json"

    def load(self) -> ExecutionState | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        try:
            return ExecutionState.from_dict(json.loads(text))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValidationError(f"execution state {self.path} is unreadable: {e}") from None

    def save(self, state: ExecutionState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(state.to_dict(), f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the executor lock; refuse when another live process holds it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ReassignmentInProgressError(
                    f"another kafka-ops executor is running with state directory {self.dir}"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def executor_running(self) -> bool:
        """Whether a live process holds the executor lock (without taking it)."""
        if not self.lock_path.exists():
            return False
        with open(self.lock_path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    def request_cancel(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cancel_path.touch()

    def cancel_requested(self) -> bool:
        return self.cancel_path.exists()

    def clear_cancel_request(self) -> None:
        self.cancel_path.unlink(missing_ok=True)

    def write_rollback(self, plan: ReassignmentPlan) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        plan.write(self.rollback_path)
        return self.rollback_path
