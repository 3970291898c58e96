"""Broker operations, triggered by hand: add, remove, demote or replace brokers — one DAG with a
`mode` param, because all four are "plan by mode, then the same gated tail"; one DAG keeps one
form, one approval flow and one history to search.

    validate -> plan -> approve -> execute -> verify -> elect_leaders -> clear_throttles -> report

- add: move load onto new (empty) `brokers`;   - remove: move every replica off `brokers`;
- demote: move leadership off `brokers` (replicas stay);   - replace: `brokers` = [old, new],
  every replica of old goes to new.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Param

from kafka_ops_provider.operators.planning import PlanReassignmentOperator, ValidateRequestOperator
from kafka_ops_provider.runbook import gate_params, gated_execution

MODES = {"add": "add-brokers", "remove": "remove-brokers", "demote": "demote",
         "replace": "replace-broker"}

with DAG(
    dag_id="kafka_broker_operation",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={
        "mode": Param("add", enum=sorted(MODES), description="what to do with the brokers"),
        "brokers": Param([], type="array", items={"type": "integer"}, minItems=1,
                         description="broker ids (replace: [old, new])"),
        **gate_params(),
    },
    tags=["kafka", "kafka-ops"],
    doc_md=__doc__,
) as dag:
    validate = ValidateRequestOperator(task_id="validate", mode="{{ params.mode }}")
    plan = PlanReassignmentOperator(task_id="plan", mode="{{ params.mode }}")
    validate >> plan
    gated_execution(plan)
