"""The persisted execution state: round trip, atomic writes, lock and cancel request."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_ops.errors import ReassignmentInProgressError, ValidationError
from kafka_ops.executor.state import CANCELLING, ExecutionState, SkippedPartition, plan_id
from kafka_ops.executor.store import StateStore
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import LEADER_RATE, LEADER_REPLICAS, ThrottleConfig


def _state() -> ExecutionState:
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (3, 2), TP("t", 1): (1, 3), TP("u", 0): (2,)})
    done = ExecutionTask(TP("t", 0), (1, 2), (3, 2), size_bytes=7, steps=[(3, 2)])
    done.transition(TaskState.IN_PROGRESS, 1.0)
    done.transition(TaskState.COMPLETED, 2.0)
    running = ExecutionTask(TP("t", 1), (1, 2), (1, 3), under_replicated=True, steps=[(1, 3)])
    running.transition(TaskState.IN_PROGRESS, 3.0)
    return ExecutionState(
        plan=plan,
        base={TP("t", 0): (1, 2), TP("t", 1): (1, 2), TP("u", 0): (1,)},
        tasks=[done, running],
        options={"throttle": 1000},
        status=CANCELLING,
        started_at=1.0,
        updated_at=3.0,
        skipped=[SkippedPartition(TP("u", 0), "replicas are [4], the plan expected [1]")],
        throttles=ThrottleConfig({"t": {LEADER_REPLICAS: "1:1,1:2"}}, {1: {LEADER_RATE: "1000"}}),
        submitted={TP("t", 1)},
    )


def test_round_trip(tmp_path):
    store = StateStore(tmp_path / "state")
    state = _state()
    store.save(state)
    loaded = store.load()
    assert loaded.to_dict() == state.to_dict()
    assert loaded.tasks == state.tasks
    assert loaded.throttles.brokers == {1: {LEADER_RATE: "1000"}}
    assert loaded.submitted == {TP("t", 1)}
    assert loaded.plan_id == plan_id(state.plan) and not loaded.finished
    assert not list((tmp_path / "state").glob("*.tmp"))


def test_missing_and_unreadable_state(tmp_path):
    store = StateStore(tmp_path)
    assert store.load() is None
    store.path.write_text(json.dumps({"version": 1, "tasks": []}))
    with pytest.raises(ValidationError, match="execution state .* is unreadable"):
        store.load()
    store.path.write_text(json.dumps({"version": 99}))
    with pytest.raises(ValidationError, match="version 99 is not supported"):
        store.load()


def test_lock_is_exclusive_across_processes_and_freed_by_death(tmp_path):
    store = StateStore(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; from kafka_ops.executor.store import StateStore\n"
         f"s=StateStore({str(tmp_path)!r})\n"
         "with s.lock():\n print('locked', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert store.executor_running()
        with pytest.raises(ReassignmentInProgressError, match="another kafka-ops executor is running"):
            with store.lock():
                pass
    finally:
        holder.kill()
        holder.wait()
    assert not store.executor_running()
    with store.lock():
        pass


def test_cancel_request(tmp_path):
    store = StateStore(tmp_path)
    assert not store.cancel_requested()
    store.request_cancel()
    assert store.cancel_requested()
    store.clear_cancel_request()
    assert not store.cancel_requested()
