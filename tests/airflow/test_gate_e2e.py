"""The approval gate, in a real Airflow, against the emulated cluster.

The gate is the same for every DAG that moves replicas (``runbook.gated_execution``); these
tests drive it through ``kafka_broker_operation`` (remove broker 9: data moves, no Spark step,
so they stay quick) with answers given over Airflow's REST API, as on-call gives them.
"""

from __future__ import annotations

import pytest
from e2e_helpers import OPS, REMOVE, throttles_left

from kafka_ops.testing.airflow import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]



def test_reject_changes_nothing(airflow_stack, cluster) -> None:
    before = cluster.replicas()
    run_id = airflow_stack.trigger(OPS, {**cluster.conf, **REMOVE})
    airflow_stack.answer(OPS, run_id, "approve", "Reject")
    assert airflow_stack.wait_run(OPS, run_id, timeout=300) == "success"
    states = airflow_stack.task_states(OPS, run_id)
    assert states["approve"] == "success"
    for task in ("execute", "verify", "elect_leaders", "clear_throttles", "make_safe", "report"):
        assert states[task] == "skipped", states
    assert cluster.replicas() == before
    assert throttles_left(cluster) == {}


def test_no_answer_in_time_executes_nothing(airflow_stack, cluster) -> None:
    before = cluster.replicas()
    run_id = airflow_stack.trigger(OPS, {**cluster.conf, **REMOVE, "approval_timeout_minutes": 0.1})
    airflow_stack.wait_task(OPS, run_id, "approve", {"awaiting_input"}, timeout=600)
    # The scheduler's timeout sweep answers the default (Reject) by itself.
    assert airflow_stack.wait_run(OPS, run_id, timeout=180) == "success"
    states = airflow_stack.task_states(OPS, run_id)
    assert states["execute"] == "skipped", states
    assert airflow_stack.hitl(OPS, run_id, "approve")["chosen_options"] == ["Reject"]
    assert cluster.replicas() == before


def test_cluster_changed_after_approval_is_refused(airflow_stack, cluster) -> None:
    run_id = airflow_stack.trigger(OPS, {**cluster.conf, **REMOVE})
    airflow_stack.wait_task(OPS, run_id, "approve", {"awaiting_input"}, timeout=600)
    # Someone moves a partition by hand while the approval waits: the base state changed.
    model = cluster.model()
    tp, partition = next((tp, p) for tp, p in sorted(model.partitions.items())
                         if 9 in p.replicas and len(p.replicas) == 3)  # a planned partition
    keep = [b for b in partition.replicas if b != 9]
    spare = next(b for b in sorted(model.brokers) if b not in partition.replicas)
    target = [*keep, spare, 9][:3]
    cluster.emulated.alter_reassignments({tp: target})
    wait_for(lambda: list(cluster.model().partitions[tp].replicas) == target, 60,
             "the manual move to finish")
    changed = cluster.replicas()

    airflow_stack.answer(OPS, run_id, "approve", "Approve")
    assert airflow_stack.wait_run(OPS, run_id, timeout=300) == "failed"
    ti = airflow_stack.task_instance(OPS, run_id, "execute")
    assert ti["state"] == "failed" and ti["try_number"] == 1, "a refusal is not retried"
    assert cluster.replicas() == changed, "nothing moved after the refusal"
    assert throttles_left(cluster) == {}
