"""Execution tasks: one partition's move, with an explicit state table (Cruise Control's).

Every state change goes through ``ExecutionTask.transition``, which refuses anything the table
does not list: a task that completed can never be started again, which is what makes a resumed
execution safe to run twice.

A task moves a partition from ``source`` to ``target`` in one or more steps. Normally there is
one step (the whole target); in one-replica-at-a-time mode each step adds one new replica and
removes one old one, so the partition never carries more than RF+1 replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kafka_ops.errors import KafkaOpsError
from kafka_ops.model import TopicPartition


class TaskState(str, Enum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    ABORTING = "aborting"  # cancel sent, not yet confirmed
    ABORTED = "aborted"  # cancel confirmed: the step's original replicas are back
    DEAD = "dead"  # failed: the partition is neither at the step's target nor moving


VALID_TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.PENDING: frozenset({TaskState.IN_PROGRESS}),
    TaskState.IN_PROGRESS: frozenset({TaskState.COMPLETED, TaskState.ABORTING, TaskState.DEAD}),
    TaskState.ABORTING: frozenset({TaskState.ABORTED, TaskState.DEAD}),
    TaskState.COMPLETED: frozenset(),
    TaskState.ABORTED: frozenset(),
    TaskState.DEAD: frozenset(),
}

FINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.ABORTED, TaskState.DEAD})


class IllegalTaskTransition(KafkaOpsError):
    """A state change the task table forbids (a bug, or a corrupted state file)."""


def one_replica_at_a_time_steps(
    source: tuple[int, ...], target: tuple[int, ...]
) -> list[tuple[int, ...]]:
    """Intermediate replica lists from source to target, each adding and removing one replica.

    A new replica takes the place of the old one it replaces, so the preferred leader only
    changes when it is the replica being moved. Replication-factor changes add (or drop) one
    replica per step; a last step sets the target's exact order if it still differs.
    """
    current = list(source)
    adds = [b for b in target if b not in source]
    removes = [b for b in source if b not in target]
    steps: list[tuple[int, ...]] = []
    for added, removed in zip(adds, removes, strict=False):  # RF changes: unequal lengths
        current[current.index(removed)] = added
        steps.append(tuple(current))
    for added in adds[len(removes):]:
        current.append(added)
        steps.append(tuple(current))
    for removed in removes[len(adds):]:
        current.remove(removed)
        steps.append(tuple(current))
    if tuple(current) != target:
        steps.append(target)
    return steps


@dataclass
class ExecutionTask:
    """The move of one partition: its steps, where it is, and how big it is."""

    tp: TopicPartition
    source: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int = 0
    under_replicated: bool = False
    steps: list[tuple[int, ...]] = field(default_factory=list)
    step: int = 0  # index of the step in flight (or next to run)
    state: TaskState = TaskState.PENDING
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.steps:
            self.steps = [self.target]

    def transition(self, new_state: TaskState, now: float | None = None) -> None:
        if new_state not in VALID_TRANSITIONS[self.state]:
            raise IllegalTaskTransition(
                f"task {self.tp}: cannot go from {self.state.value} to {new_state.value}"
            )
        self.state = new_state
        if new_state is TaskState.IN_PROGRESS:
            self.started_at = now
        elif new_state in FINAL_STATES:
            self.finished_at = now

    @property
    def done(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def step_source(self) -> tuple[int, ...]:
        return self.source if self.step == 0 else self.steps[self.step - 1]

    @property
    def step_target(self) -> tuple[int, ...]:
        return self.steps[self.step]

    @property
    def last_step(self) -> bool:
        return self.step == len(self.steps) - 1

    @property
    def incoming(self) -> tuple[int, ...]:
        """Brokers that receive a new replica in the current step."""
        return tuple(b for b in self.step_target if b not in self.step_source)

    @property
    def outgoing(self) -> tuple[int, ...]:
        """Brokers that lose a replica in the current step."""
        return tuple(b for b in self.step_source if b not in self.step_target)

    @property
    def moved_bytes(self) -> int:
        """Bytes the whole task copies: the partition's size once per new replica."""
        return self.size_bytes * sum(1 for b in self.target if b not in self.source)

    @property
    def touched(self) -> bool:
        """Whether the partition has left its source (a completed step or the whole task)."""
        return self.state is TaskState.COMPLETED or self.step > 0
