"""Progress of an execution and Kafka's verify: where each partition of a plan stands.

Progress is measured in bytes where partition sizes are known (the Admin API backend reads log
dirs; ZooKeeper holds no sizes, so there every partition counts as one unit). A new replica
counts as copied once it is in the ISR: the backend interface reports no per-replica offsets,
so a move in flight shows 0 or 100% per new replica, and a move is "stalled" when none of its
new replicas joined the ISR and nothing else about it changed for ``stall_timeout`` seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from kafka_ops.backends.base import ClusterBackend, OngoingReassignment
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan


def task_weight(task: ExecutionTask) -> int:
    """Bytes the task copies; one unit per new replica when sizes are unknown."""
    new = sum(1 for b in task.target if b not in task.source)
    return task.size_bytes * new if task.size_bytes else new


def task_done_weight(task: ExecutionTask, cluster: ClusterModel) -> int:
    """How much of ``task_weight`` is copied: new replicas already in the ISR."""
    if task.state is TaskState.COMPLETED:
        return task_weight(task)
    if task.state is TaskState.PENDING:
        return 0
    partition = cluster.partitions.get(task.tp)
    if partition is None:
        return 0
    copied = sum(1 for b in task.target if b not in task.source and b in partition.isr)
    return copied * (task.size_bytes or 1)


@dataclass(frozen=True)
class MoveProgress:
    """One move in flight."""

    tp: TopicPartition
    step: int
    steps: int
    replicas: tuple[int, ...]  # the step's target
    caught_up: tuple[int, ...]  # new replicas of the step already in the ISR
    waiting_for: tuple[int, ...]  # new replicas of the step not yet in the ISR
    running_for: float  # seconds since the task started
    stalled: bool


@dataclass(frozen=True)
class ExecutionProgress:
    """A snapshot for progress bars and logs, passed to the executor's progress callback."""

    phase: str  # "moving", "cancelling", "draining", "electing", "done"
    total: int
    completed: int
    in_flight: int
    pending: int
    aborted: int
    dead: int
    skipped: int
    weight_total: int  # bytes (or replica units when sizes are unknown)
    weight_done: int
    elapsed: float
    eta_seconds: float | None
    moves: list[MoveProgress] = field(default_factory=list)

    @property
    def stalled(self) -> list[TopicPartition]:
        return [m.tp for m in self.moves if m.stalled]

    @property
    def fraction(self) -> float:
        return self.weight_done / self.weight_total if self.weight_total else 1.0


def move_progress(
    task: ExecutionTask, cluster: ClusterModel, now: float, last_change: float, stall_timeout: float
) -> MoveProgress:
    isr = cluster.partitions[task.tp].isr if task.tp in cluster.partitions else ()
    incoming = task.incoming
    return MoveProgress(
        tp=task.tp,
        step=task.step + 1,
        steps=len(task.steps),
        replicas=task.step_target,
        caught_up=tuple(b for b in incoming if b in isr),
        waiting_for=tuple(b for b in incoming if b not in isr),
        running_for=now - (task.started_at or now),
        stalled=now - last_change > stall_timeout,
    )


def estimate_eta(weight_done_this_run: int, remaining: int, elapsed: float) -> float | None:
    """Remaining work at the rate observed so far in this run; None until something moved."""
    if remaining <= 0:
        return 0.0
    if weight_done_this_run <= 0 or elapsed <= 0:
        return None
    return remaining * elapsed / weight_done_this_run


# -- Kafka's verify ---------------------------------------------------------------------------
class VerifyStatus(str, Enum):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"  # no reassignment running, but the replicas are not the target


@dataclass(frozen=True)
class PartitionVerifyResult:
    tp: TopicPartition
    status: VerifyStatus
    current: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def message(self) -> str:
        """ReassignPartitionsCommand's sentences, word for word."""
        if self.status is VerifyStatus.IN_PROGRESS:
            return f"Reassignment of partition {self.tp} is still in progress."
        if self.status is VerifyStatus.COMPLETED:
            return f"Reassignment of partition {self.tp} is completed."
        return (
            f"There is no active reassignment of partition {self.tp}, but replica set is "
            f"{_jlist(self.current)} rather than {_jlist(self.target)}."
        )


def _jlist(values: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def calculate_verify_results(
    plan: ReassignmentPlan,
    cluster: ClusterModel,
    ongoing: Mapping[TopicPartition, OngoingReassignment],
) -> list[PartitionVerifyResult]:
    """Kafka's three outcomes per plan partition, from the cluster state and the ongoing list."""
    results = []
    for tp, target in plan.replicas.items():
        current = cluster.partitions[tp].replicas if tp in cluster.partitions else ()
        if tp in ongoing:
            status = VerifyStatus.IN_PROGRESS
        elif current == target:
            status = VerifyStatus.COMPLETED
        else:
            status = VerifyStatus.FAILED
        results.append(PartitionVerifyResult(tp, status, current, target))
    return results


def verify_plan(backend: ClusterBackend, plan: ReassignmentPlan) -> list[PartitionVerifyResult]:
    """Read the cluster once and verify every partition of the plan."""
    ongoing = backend.list_reassignments(plan.partitions)
    return calculate_verify_results(plan, backend.describe_cluster(), ongoing)
