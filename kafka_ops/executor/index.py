"""The tasks a poll looks at, kept between polls: a poll costs O(moves in flight), not O(plan).

A 60,000-move plan is polled thousands of times (and its prediction simulates every poll), so
walking every task on each poll made polling quadratic in the plan. Tasks only move forward
(pending -> in progress -> aborting -> final) and only the executor's loop starts a move, so
the moves in flight are a short list filtered as they finish, and the pending moves a list in
plan order read lazily from the first one still pending. The index belongs to one task list:
anything that replaces ``state.tasks`` (a resume, a pause ending, drifted moves dropped) or
loads another state gets a new index (``TaskIndex.of``).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from kafka_ops.executor.state import ExecutionState
from kafka_ops.executor.tasks import ExecutionTask, TaskState

ACTIVE = (TaskState.IN_PROGRESS, TaskState.ABORTING)


class TaskIndex:
    def __init__(self, state: ExecutionState) -> None:
        self.state = state
        self.tasks = state.tasks
        self.size = len(state.tasks)
        self._active = [t for t in state.tasks if t.state in ACTIVE]
        self._pending = [t for t in state.tasks if t.state is TaskState.PENDING]
        self._head = 0  # every pending task before it has started

    @classmethod
    def of(cls, state: ExecutionState, index: TaskIndex | None) -> TaskIndex:
        """``index`` if it still describes ``state``'s task list, else a new one."""
        if (index is not None and index.state is state and index.tasks is state.tasks
                and index.size == len(state.tasks)):
            return index
        return cls(state)

    def in_flight(self) -> list[ExecutionTask]:
        """Tasks in progress or aborting, in the order they started."""
        self._active = [t for t in self._active if t.state in ACTIVE]
        return list(self._active)

    def started(self, task: ExecutionTask) -> None:
        """``task`` went from pending to in progress."""
        self._active.append(task)

    def pending(self) -> Iterator[ExecutionTask]:
        """Pending tasks in plan order, lazily (a scheduler reads only as far as it needs)."""
        while self._head < len(self._pending) and self._pending[self._head].state is not TaskState.PENDING:
            self._head += 1
        return (t for t in islice(self._pending, self._head, None) if t.state is TaskState.PENDING)
