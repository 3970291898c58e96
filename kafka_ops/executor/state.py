"""The execution's persisted state: everything an executor needs to continue, in any process.

Saved (by a ``StateStore``, kafka_ops/executor/store.py) after every change that matters: which
task is in which state and step, which throttles may be set, and the poll loop's own memory
(``Runtime``: stall clocks, the brokers alive at the start, a pause). Throttles are recorded
BEFORE they are sent, so after a crash the state names a superset of what is on the cluster and
nothing is forgotten. Because the runtime travels with the state, ``Executor.step()`` can run
each poll in a different process (an Airflow worker, a trigger) and behave as one loop would.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.executor.log_dirs import DirMove
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


def _tp_key(tp: TopicPartition) -> str:
    return f"{tp.topic}\0{tp.partition}"


def _tp_from_key(key: str) -> TopicPartition:
    topic, _, partition = key.rpartition("\0")
    return TopicPartition(topic, int(partition))


@dataclass
class Runtime:
    """The poll loop's memory between steps (what used to live only in the running process).

    ``applied`` is what the executor knows is set on the cluster; ``applied_known`` is False
    while a step is between recording and sending throttle changes: a process that finds it
    False (the previous one died mid-step) treats every recorded value as unknown and resends.
    """

    applied: ThrottleConfig = field(default_factory=lambda: ThrottleConfig({}, {}))
    applied_known: bool = True
    in_step: bool = False  # a step recorded changes it may not have finished sending
    last_change: dict[TopicPartition, tuple[tuple[int, tuple[int, ...]], float]] = field(default_factory=dict)
    missing_since: dict[TopicPartition, float] = field(default_factory=dict)
    stalled: set[TopicPartition] = field(default_factory=set)
    broker_progress: dict[int, float] = field(default_factory=dict)
    paused_at: float | None = None
    dead_brokers: set[int] = field(default_factory=set)
    cancel_failures: int = 0
    alive_at_start: set[int] = field(default_factory=set)
    run_started: float = 0.0
    weight_at_start: int = 0
    polls: int = 0
    report: dict[str, Any] | None = None  # the final report, once finished

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": _throttles_to_dict(self.applied),
            "applied_known": self.applied_known,
            "in_step": self.in_step,
            "last_change": {_tp_key(tp): [[sig[0], list(sig[1])], t] for tp, (sig, t) in self.last_change.items()},
            "missing_since": {_tp_key(tp): t for tp, t in self.missing_since.items()},
            "stalled": sorted(_tp_key(tp) for tp in self.stalled),
            "broker_progress": {str(b): t for b, t in self.broker_progress.items()},
            "paused_at": self.paused_at,
            "dead_brokers": sorted(self.dead_brokers),
            "cancel_failures": self.cancel_failures,
            "alive_at_start": sorted(self.alive_at_start),
            "run_started": self.run_started,
            "weight_at_start": self.weight_at_start,
            "polls": self.polls,
            "report": self.report,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Runtime:
        return cls(
            applied=_throttles_from_dict(d["applied"]),
            applied_known=d["applied_known"],
            in_step=d["in_step"],
            last_change={_tp_from_key(k): (_signature(sig), t) for k, (sig, t) in d["last_change"].items()},
            missing_since={_tp_from_key(k): t for k, t in d["missing_since"].items()},
            stalled={_tp_from_key(k) for k in d["stalled"]},
            broker_progress={int(b): t for b, t in d["broker_progress"].items()},
            paused_at=d["paused_at"],
            dead_brokers=set(d["dead_brokers"]),
            cancel_failures=d["cancel_failures"],
            alive_at_start=set(d["alive_at_start"]),
            run_started=d["run_started"],
            weight_at_start=d["weight_at_start"],
            polls=d.get("polls", 0),
            report=d.get("report"),
        )


def _signature(sig: list) -> tuple[int, tuple[int, ...]]:
    """A move's progress signature (step, new replicas in the ISR) back from JSON."""
    step, caught_up = sig
    return (int(step), tuple(caught_up))


def _throttles_to_dict(t: ThrottleConfig) -> dict[str, Any]:
    return {"topics": t.topics, "brokers": {str(b): c for b, c in t.brokers.items()}}


def _throttles_from_dict(d: dict[str, Any]) -> ThrottleConfig:
    return ThrottleConfig(d["topics"], {int(b): c for b, c in d["brokers"].items()})


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
    runtime: Runtime = field(default_factory=Runtime)
    #: Moves between log directories (the plan's log_dirs), run after the inter-broker tasks.
    dir_moves: list[DirMove] = field(default_factory=list)
    #: Brokers on which the alter-log-dirs throttle may be set (recorded before it is set).
    dir_throttled: set[int] = field(default_factory=set)

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
            "throttles": _throttles_to_dict(self.throttles),
            "tasks": [_task_to_dict(t, t.tp in self.submitted) for t in self.tasks],
            "runtime": self.runtime.to_dict(),
            "dir_moves": [m.to_dict() for m in self.dir_moves],
            "dir_throttled": sorted(self.dir_throttled),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionState:
        if data.get("version") != STATE_VERSION:
            raise ValidationError(f"execution state version {data.get('version')!r} is not supported")
        tasks = [_task_from_dict(t) for t in data["tasks"]]
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
            throttles=_throttles_from_dict(data["throttles"]),
            submitted={
                TopicPartition(t["topic"], t["partition"]) for t in data["tasks"] if t.get("submitted")
            },
            # States written before the step API have no runtime: an empty one is a resume.
            runtime=Runtime.from_dict(data["runtime"]) if "runtime" in data else Runtime(in_step=True),
            dir_moves=[DirMove.from_dict(m) for m in data.get("dir_moves", [])],
            dir_throttled=set(data.get("dir_throttled", [])),
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
