"""The task state table, one-replica-at-a-time steps and ordering strategies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from kafka_ops.errors import ValidationError
from kafka_ops.executor.strategies import chain, order_tasks
from kafka_ops.executor.tasks import (
    VALID_TRANSITIONS,
    ExecutionTask,
    IllegalTaskTransition,
    TaskState,
    one_replica_at_a_time_steps,
)
from kafka_ops.model import TopicPartition as TP

S = TaskState


def test_state_table_is_cruise_controls():
    assert VALID_TRANSITIONS[S.PENDING] == {S.IN_PROGRESS}
    assert VALID_TRANSITIONS[S.IN_PROGRESS] == {S.COMPLETED, S.ABORTING, S.DEAD}
    assert VALID_TRANSITIONS[S.ABORTING] == {S.ABORTED, S.DEAD}
    assert all(not VALID_TRANSITIONS[s] for s in (S.COMPLETED, S.ABORTED, S.DEAD))


def test_transitions_record_times_and_refuse_what_the_table_forbids():
    task = ExecutionTask(TP("t", 0), (1, 2), (3, 2))
    task.transition(S.IN_PROGRESS, 10.0)
    task.transition(S.COMPLETED, 20.0)
    assert (task.started_at, task.finished_at, task.done) == (10.0, 20.0, True)
    with pytest.raises(IllegalTaskTransition, match="t-0: cannot go from completed to in_progress"):
        task.transition(S.IN_PROGRESS)
    fresh = ExecutionTask(TP("t", 1), (1,), (2,))
    with pytest.raises(IllegalTaskTransition):
        fresh.transition(S.COMPLETED)


def test_task_brokers_and_bytes():
    task = ExecutionTask(TP("t", 0), (1, 2, 3), (4, 2, 5), size_bytes=100)
    assert task.incoming == (4, 5)
    assert task.outgoing == (1, 3)
    assert task.moved_bytes == 200
    assert task.steps == [(4, 2, 5)] and task.last_step


def test_one_replica_at_a_time_replaces_in_place():
    assert one_replica_at_a_time_steps((1, 2, 3), (4, 5, 6)) == [(4, 2, 3), (4, 5, 3), (4, 5, 6)]
    # the preferred leader only changes when it is the replica being moved; order fixed last
    assert one_replica_at_a_time_steps((1, 2, 3), (2, 4, 3)) == [(4, 2, 3), (2, 4, 3)]
    assert one_replica_at_a_time_steps((1, 2), (1, 2, 3)) == [(1, 2, 3)]
    assert one_replica_at_a_time_steps((1, 2, 3), (3, 1)) == [(1, 3), (3, 1)]


replica_lists = hs.lists(hs.integers(0, 9), min_size=1, max_size=4, unique=True).map(tuple)


@given(replica_lists, replica_lists)
def test_steps_never_carry_more_than_one_extra_replica(source, target):
    steps = one_replica_at_a_time_steps(source, target)
    assert (steps[-1] if steps else source) == target
    previous = source
    for step in steps:
        assert len(set(step)) == len(step)
        during = set(previous) | set(step)  # what the partition holds while the step runs
        assert len(during) <= max(len(previous), len(step)) + 1
        previous = step


def _task(topic, p, size, urp=False):
    return ExecutionTask(TP(topic, p), (1,), (2,), size_bytes=size, under_replicated=urp)


def test_strategies_order_and_break_ties_by_topic_partition():
    tasks = [_task("b", 0, 5), _task("a", 1, 5), _task("a", 0, 9), _task("c", 0, 1, urp=True)]
    names = lambda ts: [str(t.tp) for t in ts]  # noqa: E731
    assert names(order_tasks(tasks)) == ["a-0", "a-1", "b-0", "c-0"]
    assert names(order_tasks(tasks, ["small-first"])) == ["c-0", "a-1", "b-0", "a-0"]
    assert names(order_tasks(tasks, ["large-first"])) == ["a-0", "a-1", "b-0", "c-0"]
    assert names(order_tasks(tasks, ["under-replicated-first", "large-first"])) == ["c-0", "a-0", "a-1", "b-0"]


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValidationError, match="unknown ordering strategy 'fastest'"):
        chain(["fastest"])
