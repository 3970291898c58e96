"""The executor's task index against a scan of the whole task list (the answer it replaces),
through random sequences of the loop's own transitions, and through task lists replaced."""

from __future__ import annotations

import random

from kafka_ops.executor.index import ACTIVE, TaskIndex
from kafka_ops.executor.state import ExecutionState
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan


def state_of(n: int) -> ExecutionState:
    tasks = [ExecutionTask(TP("t", i), (1, 2), (1, 3), steps=[(1, 3)]) for i in range(n)]
    plan = ReassignmentPlan.from_assignment({t.tp: t.target for t in tasks})
    return ExecutionState(plan, {}, tasks, {})


def scan(state: ExecutionState) -> tuple[set[int], list[int]]:
    return ({id(t) for t in state.tasks if t.state in ACTIVE},
            [id(t) for t in state.tasks if t.state is TaskState.PENDING])


def test_index_agrees_with_a_full_scan_through_random_runs():
    for seed in range(30):
        rng = random.Random(seed)
        state = state_of(rng.randint(0, 60))
        index: TaskIndex | None = None
        for _ in range(40):
            index = TaskIndex.of(state, index)
            active, pending = scan(state)
            assert {id(t) for t in index.in_flight()} == active
            assert [id(t) for t in index.pending()] == pending  # plan order kept
            # Start some pending moves, in any order (the scheduler passes over some).
            for task in rng.sample(list(index.pending()), min(len(pending), rng.randint(0, 4))):
                task.transition(TaskState.IN_PROGRESS, 0.0)
                index.started(task)
            for task in index.in_flight():
                roll = rng.random()
                if task.state is TaskState.IN_PROGRESS and roll < 0.3:
                    task.transition(TaskState.COMPLETED, 1.0)
                elif task.state is TaskState.IN_PROGRESS and roll < 0.4:
                    task.transition(TaskState.ABORTING, 1.0)
                elif task.state is TaskState.ABORTING and roll < 0.5:
                    task.transition(TaskState.ABORTED, 1.0)
            if rng.random() < 0.1:  # drifted moves dropped: a new task list
                state.tasks = [t for t in state.tasks
                               if t.state is not TaskState.PENDING or rng.random() < 0.8]


def test_a_replaced_task_list_or_another_state_gets_a_new_index():
    state = state_of(5)
    index = TaskIndex.of(state, None)
    assert TaskIndex.of(state, index) is index
    state.tasks = list(state.tasks)  # same tasks, another list (a resume rebuilds it)
    assert TaskIndex.of(state, index) is not index
    other = state_of(5)
    assert TaskIndex.of(other, index).state is other
