"""Pool migration, triggered by hand: move topics (named, or matching a pattern) into a pool.

    validate -> plan -> approve -> execute -> verify -> elect_leaders -> clear_throttles -> report

The trigger form asks for the topics or a regular expression, the target pool (from the pools
file named by the `kafka_ops_pools` Variable), the throttle, the per-broker concurrency,
one-replica-at-a-time, and dry run (plan and digest only). Everything after `plan` is the same
gated tail as the scheduled rebalance: on-call approves the exact plan, execution is deferred.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Param

from kafka_ops_provider.operators.planning import PlanReassignmentOperator, ValidateRequestOperator
from kafka_ops_provider.runbook import gate_params, gated_execution

with DAG(
    dag_id="kafka_pool_migration",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={
        "pool": Param("", type="string", minLength=1, description="target pool"),
        "topics": Param([], type="array", items={"type": "string"},
                        description="topics to move (empty: every topic of the pool)"),
        "topic_pattern": Param("", type="string",
                               description="or a regular expression over topic names"),
        **gate_params(),
    },
    tags=["kafka", "kafka-ops"],
    doc_md=__doc__,
) as dag:
    validate = ValidateRequestOperator(task_id="validate", mode="migrate-pool")
    plan = PlanReassignmentOperator(task_id="plan", mode="migrate-pool")
    validate >> plan
    gated_execution(plan)
