"""Operators before the gate: snapshot metrics, decide whether to act, plan by mode.

Each is one call into ``kafka_ops`` (``kafka_ops.monitor`` for snapshots, ``kafka_ops.workflow``
for plans and digests); the Spark analysis between them is Airflow's own SparkSubmitOperator
running ``spark_jobs/balance_analysis.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.exceptions import AirflowSkipException
from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.sdk import Variable

from kafka_ops_provider.hooks.prometheus import PrometheusHook
from kafka_ops_provider.hooks.state import artifacts_dir
from kafka_ops_provider.operators.base import KafkaOpsOperator

REPO = Path(__file__).resolve().parents[3]
ANALYSIS_JOB = str(REPO / "spark_jobs" / "balance_analysis.py")
#: Loopback-only, no UI, small shuffles: what the embedded default and CI need; a cluster
#: connection (`spark://...`) may override them in its extra.
SPARK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


def pools_file() -> str | None:
    """The pools file named by the `kafka_ops_pools` Variable, if any."""
    return Variable.get("kafka_ops_pools", default=None) or None


class SnapshotMetricsOperator(KafkaOpsOperator):
    """Cluster metadata plus the metrics since the last snapshot (Prometheus, or the backend's
    log sizes alone without a `prometheus_default` connection), appended to the snapshots."""

    def execute(self, context: Any) -> Any:
        from kafka_ops.monitor.snapshot import take_snapshot
        from kafka_ops.monitor.sources import BackendSource, PrometheusConfig, PrometheusSource

        params = context["params"]
        dataset = Path(artifacts_dir(), "snapshots")
        analysis = self.artifacts(context) / "analysis"
        prometheus = PrometheusHook(params["prometheus_conn_id"]).settings()
        source = (PrometheusSource(PrometheusConfig(**prometheus)) if prometheus
                  else BackendSource())
        cluster = cluster_name(params)
        with self.cluster_hook(context).backend() as backend:
            model = backend.describe_cluster()
        result = take_snapshot(model, source, dataset, cluster,
                               step=float(params["snapshot_step_seconds"]))
        self.log.info("snapshot of %s from %s: %d sample times, rows %s, issues %s", cluster,
                      source.__class__.__name__, result.samples, result.rows,
                      result.issues or "none")
        return {**result.to_dict(), "snapshots": str(dataset), "analysis": str(analysis)}


def cluster_name(params: Any) -> str:
    """The cluster's name in the snapshot dataset: the connection that reaches it."""
    return str(params.get("cluster_name") or params.get("zookeeper_conn_id")
               or params["kafka_conn_id"])


class BalanceCheckOperator(ShortCircuitOperator):
    """Stop the run here when the analysis finds every resource within its threshold and no
    anomaly (and the run does not force a plan)."""

    def __init__(self, *, snapshot_task_id: str = "snapshot", **kwargs: Any) -> None:
        super().__init__(python_callable=self._needs_rebalance, **kwargs)
        self.snapshot_task_id = snapshot_task_id

    def _needs_rebalance(self, **context: Any) -> bool:
        from kafka_ops import workflow

        analysis = context["ti"].xcom_pull(task_ids=self.snapshot_task_id)["analysis"]
        verdict = workflow.balance_verdict(analysis)
        self.log.info("%s", verdict.describe())
        return bool(verdict.act or context["params"].get("force"))


class ValidateRequestOperator(KafkaOpsOperator):
    """Check the trigger form against the live cluster and the pools before planning: a clear
    error naming what is wrong, and nothing changes."""

    template_fields = ("mode",)

    def __init__(self, *, mode: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = mode

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            request = workflow.plan_request(self.mode, dict(context["params"]),
                                            pools=pools_file())
            request.validate(backend)
        self.log.info("%s", request.describe())
        return request.to_dict()


class PlanReassignmentOperator(KafkaOpsOperator):
    """Plan by mode; push the approval digest and where the plan, rollback and chart are."""

    template_fields = ("mode",)

    def __init__(self, *, mode: str, analysis_task_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = mode
        self.analysis_task_id = analysis_task_id

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        params = dict(context["params"])
        loads = None
        if self.analysis_task_id:
            loads = context["ti"].xcom_pull(task_ids=self.analysis_task_id)["analysis"]
        out = self.artifacts(context)
        with self.cluster_hook(context).backend() as backend:
            request = workflow.plan_request(self.mode, params, pools=pools_file(), loads=loads)
            planned = workflow.plan_and_digest(backend, request, out,
                                               throttle=int(params["throttle"]))
        self.log.info("%s", planned.describe())
        if not planned.moves:
            raise AirflowSkipException("nothing to move: the cluster already meets its goals")
        return planned.to_dict()
