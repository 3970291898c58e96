"""Manually triggered DAGs and failures mid-run, in a real Airflow, against the emulated cluster.

The pool migration moves topics into their pool; a broker killed mid-execution pauses the run
safely (no throttle left, nothing below its replica count, the report says how to resume) and
clearing `execute` once the broker is back finishes the job; the process running `execute`
SIGKILLed: the retry resumes and no reassignment is started (no replica fetched) twice.
Expected outcomes are read from the
emulator's own record.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from e2e_helpers import FAST, OPS, REMOVE, throttles_left

from kafka_ops.testing.airflow import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

POOLS = Path(__file__).resolve().parents[2] / "kafka_ops" / "examples" / "pools.yaml"
PAYMENTS = {1, 2, 3}


def _payments(replicas: dict) -> dict:
    return {tp: reps for tp, reps in replicas.items()
            if tp[0].startswith("payments.") or tp[0] == "ledger"}


def test_pool_migration_moves_topics_into_their_pool(airflow_stack, cluster) -> None:
    before = _payments(cluster.replicas())
    outside = {tp for tp, reps in before.items() if not set(reps) <= PAYMENTS}
    assert outside, "some payments partitions start outside their pool"
    airflow_stack.set_variable("kafka_ops_pools", str(POOLS))
    try:
        dag = "kafka_pool_migration"
        run_id = airflow_stack.trigger(dag, {
            **cluster.conf, "pool": "payments", "topic_pattern": r"payments\..*|ledger",
            "throttle": FAST["throttle"], "concurrency": 8, "poll_interval": 1.0})
        body = airflow_stack.answer(dag, run_id, "approve", "Approve")
        assert body["chosen_options"] == ["Approve"]
        assert airflow_stack.wait_run(dag, run_id, timeout=600) == "success", \
            airflow_stack.task_states(dag, run_id)
    finally:
        airflow_stack.api("DELETE", "/variables/kafka_ops_pools", ok=(404,))
    after = _payments(cluster.replicas())
    print(f"\npool migration: {len(outside)} of {len(before)} payments partitions were outside "
          f"brokers 1-3; after: {sum(not set(r) <= PAYMENTS for r in after.values())}")
    assert all(set(reps) <= PAYMENTS for reps in after.values()), after
    assert all(len(after[tp]) == len(before[tp]) for tp in before), "replication factor kept"
    assert throttles_left(cluster) == {}


def test_broker_killed_mid_run_pauses_safely_and_resumes(airflow_stack, cluster) -> None:
    dag = OPS
    rf = {tp: len(reps) for tp, reps in cluster.replicas().items()}
    # Broker 9 is removed: 23 moves. Eight at a time sharing 2 MB/s per broker: each share
    # (250 KB/s) outruns its partition's ingest (at most ~115 KB/s here; below it a move never
    # catches up, as in Kafka) and a batch replicates for a few seconds of real
    # time (up to 830 MB a move, at 600x), long enough to kill a broker mid-batch.
    run_id = airflow_stack.trigger(dag, {**cluster.conf, **REMOVE, "concurrency": 8,
                                         "throttle": 2_000_000})
    airflow_stack.answer(dag, run_id, "approve", "Approve")
    airflow_stack.wait_task(dag, run_id, "execute", {"deferred"}, timeout=300)
    moving = wait_for(lambda: cluster.emulated.list_reassignments(), 120, "moves in flight",
                      interval=0.05)
    victim = sorted({b for _replicas, adding, _removing in moving.values() for b in adding})[0]
    assert victim != 9
    cluster.emulated.stop_broker(victim)

    assert airflow_stack.wait_run(dag, run_id, timeout=600) == "failed"
    states = airflow_stack.task_states(dag, run_id)
    assert states["execute"] == "failed" and states["make_safe"] == "success", states
    assert states["report"] == "failed", "the report is written and fails the run"
    assert cluster.emulated.list_reassignments() == {}, "nothing left moving"
    assert throttles_left(cluster) == {}
    model = cluster.model()
    assert all(len(p.replicas) == rf[(tp.topic, tp.partition)]
               for tp, p in model.partitions.items()), "no partition lost a replica"
    healthy = [p for p in model.partitions.values() if victim not in p.replicas]
    assert all(len(p.isr) == len(p.replicas) for p in healthy), \
        "only the dead broker's partitions may be under-replicated"
    run_dir = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    report = (airflow_stack.artifacts / dag / run_dir / "report.txt").read_text()  # type: ignore[attr-defined]
    assert "paused" in report and "To resume" in report, report

    # What the report says: bring the broker back, clear 'execute'; the run finishes the job.
    cluster.emulated.start_broker(victim)
    airflow_stack.api("POST", f"/dags/{dag}/clearTaskInstances", {
        "dag_run_id": run_id, "task_ids": ["execute"], "include_downstream": True,
        "only_failed": False, "dry_run": False, "reset_dag_runs": True})
    assert airflow_stack.wait_run(dag, run_id, timeout=900) == "success", \
        airflow_stack.task_states(dag, run_id)
    assert not cluster.model().partitions_on(9), "broker 9 emptied once resumed"
    assert throttles_left(cluster) == {}


def test_worker_killed_during_execute_retry_resumes_without_moving_twice(
        airflow_stack, cluster) -> None:
    dag = OPS
    started: Counter = Counter()
    fetches: Counter = Counter()

    def record(event) -> None:
        if event.kind == "reassignment_started":
            started[(event.topic, event.partition, tuple(event.data["target"]))] += 1
        elif event.kind == "replica_fetch_started":
            fetches[(event.topic, event.partition, event.broker)] += 1

    cluster.emulated.add_listener(record)
    run_id = airflow_stack.trigger(dag, {**cluster.conf, **REMOVE, "throttle": 20_000_000})
    airflow_stack.answer(dag, run_id, "approve", "Approve")
    store = airflow_stack.artifacts / "state" / dag  # type: ignore[attr-defined]

    def running_with_state() -> dict | None:
        ti = airflow_stack.task_instance(dag, run_id, "execute")
        recorded = any(store.glob("*/execution.json"))
        return ti if ti["state"] == "running" and ti.get("pid") and recorded else None

    # Kill the process running `execute` (SIGKILL: no clean-up) once it has recorded the
    # execution and moves may be in flight: the first run, or a resume after a deferral.
    ti = wait_for(running_with_state, 300, "execute running with its execution recorded",
                  interval=0.1)
    os.kill(int(ti["pid"]), signal.SIGKILL)
    killed_try = ti["try_number"]

    assert airflow_stack.wait_run(dag, run_id, timeout=600) == "success", \
        airflow_stack.task_states(dag, run_id)
    cluster.emulated.remove_listener(record)
    final = airflow_stack.task_instance(dag, run_id, "execute")
    print(f"\nexecute killed in try {killed_try}; finished in try {final['try_number']}; "
          f"{len(started)} reassignments started")
    assert final["try_number"] > killed_try, "the kill cost a try: a retry resumed it"
    assert started and max(started.values()) == 1, \
        {k: v for k, v in started.items() if v > 1}
    assert max(fetches.values()) == 1, {k: v for k, v in fetches.items() if v > 1}
    assert not cluster.model().partitions_on(9)
    assert throttles_left(cluster) == {}
