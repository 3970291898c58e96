"""Scheduled rebalance: the runbook an operator follows, run by Airflow.

    snapshot -> analyse (Spark) -> needs_rebalance? -> plan -> approve -> execute -> verify
             -> elect_leaders -> clear_throttles -> report          (+ make_safe on failure)

- snapshot: cluster metadata from the cluster's connection plus a window of broker metrics from
  Prometheus (`prometheus_default`), appended to the Parquet snapshots under the artifacts dir.
- analyse: `spark_jobs/balance_analysis.py` through SparkSubmitOperator; `spark_default` decides
  the master (`local[*]` by default, `spark://host:port` for a cluster).
- needs_rebalance: short-circuits the run when every resource is within its threshold and there
  is no anomaly (offline or under-replicated partitions, dead or empty brokers, goal violations);
  when there is one, the plan's mode repairs it (fix-offline, add-brokers) under the same gate.
- approve: on-call sees the digest (moves, bytes, duration at the throttle, goals before/after,
  risks, where the plan and chart are) and answers; Reject or no answer: nothing changes.
- execute: deferred; the triggerer polls progress, no worker slot waits for replication.

Schedule: `[kafka_ops] rebalance_schedule` (AIRFLOW__KAFKA_OPS__REBALANCE_SCHEDULE; daily by
default; "none" turns it off); the snapshot alone runs more often in `kafka_metrics_snapshot`
(`[kafka_ops] snapshot_schedule`, hourly). Trigger it by hand with the same Params.
"""

from __future__ import annotations

from datetime import datetime

from airflow.configuration import conf
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param

from kafka_ops_provider.operators.planning import (
    ANALYSIS_JOB,
    DRIVER_BIND_ADDRESS,
    SPARK_CONF,
    BalanceCheckOperator,
    PlanReassignmentOperator,
    SnapshotMetricsOperator,
)
from kafka_ops_provider.runbook import gate_params, gated_execution

PARAMS = {
    **gate_params(),
    "prometheus_conn_id": Param("prometheus_default", type="string"),
    "window_minutes": Param(60, type="integer", minimum=1,
                            description="metrics window the Spark analysis reads"),
    "snapshot_step_seconds": Param(60, type="integer", minimum=1,
                                   description="one sample every this many seconds"),
    "mode": Param("auto", enum=["auto", "rebalance", "fix-offline", "add-brokers"],
                  description="auto: repair anomalies first, else rebalance"),
    "force": Param(False, type="boolean",
                   description="plan even when the analysis finds the cluster balanced"),
}



def schedule(option: str, default: str) -> str | None:
    """A cron expression or preset from ``[kafka_ops] <option>``; "none" turns it off."""
    value = conf.get("kafka_ops", option, fallback=default).strip()
    return None if value.lower() in ("", "none", "off") else value


with DAG(
    dag_id="kafka_rebalance",
    schedule=schedule("rebalance_schedule", "@daily"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params=PARAMS,
    tags=["kafka", "kafka-ops"],
    doc_md=__doc__,
) as dag:
    snapshot = SnapshotMetricsOperator(task_id="snapshot")
    analyse = SparkSubmitOperator(
        task_id="analyse",
        conn_id="spark_default",
        application=ANALYSIS_JOB,
        application_args=[
            "--snapshots", "{{ ti.xcom_pull(task_ids='snapshot')['snapshots'] }}",
            "--cluster", "{{ ti.xcom_pull(task_ids='snapshot')['cluster'] }}",
            "--start", "{{ ti.xcom_pull(task_ids='snapshot')['window_start'] }}",
            "--end", "{{ ti.xcom_pull(task_ids='snapshot')['window_end'] }}",
            "--output", "{{ ti.xcom_pull(task_ids='snapshot')['analysis'] }}",
        ],
        conf=SPARK_CONF,
        env_vars={"SPARK_LOCAL_IP": DRIVER_BIND_ADDRESS},
        name="kafka-ops-balance-analysis",
    )
    check = BalanceCheckOperator(task_id="needs_rebalance")
    plan = PlanReassignmentOperator(task_id="plan", mode="{{ params.mode }}",
                                    analysis_task_id="snapshot")
    snapshot >> analyse >> check >> plan
    gated_execution(plan)

with DAG(
    dag_id="kafka_metrics_snapshot",
    schedule=schedule("snapshot_schedule", "@hourly"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={k: PARAMS[k] for k in ("kafka_conn_id", "zookeeper_conn_id", "prometheus_conn_id",
                                   "snapshot_step_seconds")},
    tags=["kafka", "kafka-ops"],
    doc_md="Appends the metric samples since the last run to the Parquet snapshots "
           "(what the daily rebalance analyses).",
) as snapshot_dag:
    SnapshotMetricsOperator(task_id="snapshot")
