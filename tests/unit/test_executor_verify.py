"""Kafka's verify outcomes, progress weights, ETA and leader checks (pure parts)."""

from __future__ import annotations

from kafka_ops.backends.base import OngoingReassignment
from kafka_ops.executor.leaders import calculate_leader_elections, calculate_misplaced_leaders
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.executor.verify import (
    VerifyStatus,
    calculate_verify_results,
    estimate_eta,
    move_progress,
    task_done_weight,
    task_weight,
)
from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan


def cluster(*parts: Partition) -> ClusterModel:
    return ClusterModel([Broker(i) for i in range(1, 6)], parts)


def test_kafkas_three_verify_outcomes_word_for_word():
    c = cluster(
        Partition("t", 0, (4, 2, 3, 1), leader=2, isr=(2, 3, 1)),
        Partition("t", 1, (1, 3), leader=1, isr=(1, 3)),
        Partition("t", 2, (1, 2), leader=1, isr=(1, 2)),
    )
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (4, 2, 3), TP("t", 1): (1, 3), TP("t", 2): (2, 5)})
    ongoing = {TP("t", 0): OngoingReassignment(TP("t", 0), (4, 2, 3, 1), (4,), (1,))}
    results = calculate_verify_results(plan, c, ongoing)
    assert [r.status for r in results] == [VerifyStatus.IN_PROGRESS, VerifyStatus.COMPLETED, VerifyStatus.FAILED]
    assert [r.message for r in results] == [
        "Reassignment of partition t-0 is still in progress.",
        "Reassignment of partition t-1 is completed.",
        "There is no active reassignment of partition t-2, but replica set is [1, 2] rather than [2, 5].",
    ]


def test_progress_counts_new_replicas_in_the_isr():
    task = ExecutionTask(TP("t", 0), (1, 2, 3), (4, 5, 3), size_bytes=1000)
    c = cluster(Partition("t", 0, (4, 5, 3, 1, 2), leader=1, isr=(1, 2, 3, 4)))
    assert task_weight(task) == 2000
    assert task_done_weight(task, c) == 0  # pending
    task.transition(TaskState.IN_PROGRESS, 0.0)
    assert task_done_weight(task, c) == 1000
    progress = move_progress(task, c, now=50.0, last_change=10.0, stall_timeout=30.0)
    assert (progress.caught_up, progress.waiting_for, progress.stalled) == ((4,), (5,), True)
    unsized = ExecutionTask(TP("t", 0), (1, 2, 3), (4, 5, 3))
    assert task_weight(unsized) == 2  # one unit per new replica when sizes are unknown


def test_eta_from_observed_rate():
    assert estimate_eta(0, 100, 10.0) is None
    assert estimate_eta(50, 100, 10.0) == 20.0
    assert estimate_eta(50, 0, 10.0) == 0.0


def test_leader_checks_use_the_targets_first_replica():
    c = cluster(Partition("t", 0, (2, 1), leader=1, isr=(1, 2)), Partition("t", 1, (1, 2), leader=1, isr=(1, 2)))
    targets = {TP("t", 0): (2, 1), TP("t", 1): (1, 2)}
    assert calculate_leader_elections(c, targets) == [TP("t", 0)]
    assert calculate_misplaced_leaders(c, targets) == {TP("t", 0): (2, 1)}
