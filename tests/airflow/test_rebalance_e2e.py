"""The DAGs end to end, in a real Airflow, against the emulated example cluster.

Real: Airflow 3.3.2 (scheduler, triggerer, dag-processor, api-server), ZooKeeper, the emulator
(reached by the DAGs only through Kafka's interfaces), Prometheus scraping the emulated brokers,
Spark (`spark-submit`, local[*]) through SparkSubmitOperator. Approvals are given the way on-call
gives them: over Airflow's REST API. Expected figures come from the emulator's own record, not
from anything our code reports.
"""

from __future__ import annotations

import pytest
from e2e_helpers import FAST, inbox, replica_spread, throttles_left

from kafka_ops.testing.airflow import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

DAG = "kafka_rebalance"


def test_scheduled_rebalance_balances_the_cluster(airflow_stack, cluster) -> None:
    before = cluster.model()
    spread_before = replica_spread(before)
    assert spread_before > 1.3, "the example cluster starts unbalanced"

    run_id = airflow_stack.trigger(DAG, {**cluster.conf, **FAST})
    airflow_stack.wait_task(DAG, run_id, "approve", {"awaiting_input"}, timeout=600)

    # What on-call sees, and that they were told.
    request = airflow_stack.hitl(DAG, run_id, "approve")
    body = request["body"]
    for figure in ("replica moves", "Estimated duration", "| goal | status | before | after |",
                   "Plan:", "chart", "Digest:"):
        assert figure in body, f"{figure!r} missing from the approval body:\n{body}"
    assert request["options"] == ["Approve", "Reject"]
    assert any(m["run_id"] == run_id and m["task_id"] == "approve" for m in inbox(airflow_stack))
    assert cluster.replicas() == {(tp.topic, tp.partition): p.replicas
                                  for tp, p in before.partitions.items()}, "moved before approval"

    airflow_stack.answer(DAG, run_id, "approve", "Approve")
    # Waiting for replication holds no worker slot, by Airflow's own accounting: the task is
    # deferred and the pool counts it as deferred, with no slot running.
    def waiting_without_slot() -> dict | None:
        pool = airflow_stack.api("GET", "/pools/default_pool")
        state = airflow_stack.task_instance(DAG, run_id, "execute")["state"]
        return pool if (state == "deferred" and pool["deferred_slots"] >= 1
                        and pool["running_slots"] == 0) else None

    pool = wait_for(waiting_without_slot, 300, "execute deferred with no running slot",
                    interval=0.5)
    print(f"\nwhile replicating: execute deferred; default_pool running_slots "
          f"{pool['running_slots']}, deferred_slots {pool['deferred_slots']}")
    assert airflow_stack.wait_run(DAG, run_id, timeout=600) == "success", \
        airflow_stack.task_states(DAG, run_id)

    after = cluster.model()
    spread_after = replica_spread(after)
    print(f"\nreplica spread (max/mean): before {spread_before:.2f}, after {spread_after:.2f}")
    assert spread_after < 1.15 < spread_before
    assert all(len(p.isr) == len(p.replicas) for p in after.partitions.values())
    assert throttles_left(cluster) == {}
    states = airflow_stack.task_states(DAG, run_id)
    assert states["make_safe"] == "skipped" and states["report"] == "success"
