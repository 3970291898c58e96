"""Operators before the gate: snapshot metrics, decide whether to act, plan by mode.

Each is one call into ``kafka_ops`` (``kafka_ops.monitor`` for snapshots, ``kafka_ops.workflow``
for plans and digests); the Spark analysis between them is Airflow's own SparkSubmitOperator
running ``spark_jobs/balance_analysis.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from airflow.providers.standard.operators.python import ShortCircuitOperator
from airflow.configuration import conf
from airflow.sdk import Variable

from kafka_ops_provider.hooks.prometheus import PrometheusHook
from kafka_ops_provider.hooks.state import artifacts_dir
from kafka_ops_provider.operators.base import KafkaOpsOperator

LOOPBACK = "127.0.0.1"
REPO = Path(__file__).resolve().parents[3]
ANALYSIS_JOB = str(REPO / "spark_jobs" / "balance_analysis.py")
#: Where the Spark driver (the task running spark-submit, client mode) listens and what it
#: advertises to executors: loopback by default (the embedded default and CI run local[*]);
#: with a `spark://` master set `[kafka_ops] spark_driver_host` to the worker host's name
#: (and `spark_driver_bind_address`, e.g. 0.0.0.0) so the executors can connect back.
DRIVER_HOST = conf.get("kafka_ops", "spark_driver_host", fallback=LOOPBACK)
DRIVER_BIND_ADDRESS = conf.get("kafka_ops", "spark_driver_bind_address", fallback=DRIVER_HOST)
#: No UI, small shuffles, a quick JVM start; a connection's extra may override them.
SPARK_CONF = {
    "spark.driver.host": DRIVER_HOST,
    "spark.driver.bindAddress": DRIVER_BIND_ADDRESS,
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
        window_end = int(result.end)
        return {**result.to_dict(), "snapshots": str(dataset), "analysis": str(analysis),
                "window_start": window_end - 60 * int(params.get("window_minutes", 60)),
                "window_end": window_end}


def cluster_name(params: Any) -> str:
    """The cluster's name in the snapshot dataset: the connection that reaches it."""
    return str(params.get("cluster_name") or params.get("zookeeper_conn_id")
               or params["kafka_conn_id"])


class BalanceCheckOperator(ShortCircuitOperator):
    """Stop the run here when the analysis finds every resource within its threshold and no
    anomaly (unless the run forces a plan). Reads the analysis' JSON summary."""

    def __init__(self, *, snapshot_task_id: str = "snapshot", **kwargs: Any) -> None:
        super().__init__(python_callable=self._needs_rebalance, **kwargs)
        self.snapshot_task_id = snapshot_task_id

    def _needs_rebalance(self, **context: Any) -> bool:
        from kafka_ops.loads import AnalysisOutputSource

        analysis = context["ti"].xcom_pull(task_ids=self.snapshot_task_id)["analysis"]
        summary = AnalysisOutputSource(analysis).summary()
        verdict = needs_action(summary)
        for line in verdict["lines"]:
            self.log.info("%s", line)
        if context["params"].get("force"):
            self.log.info("force: planning regardless")
            return True
        return verdict["act"]


def needs_action(summary: dict[str, Any]) -> dict[str, Any]:
    """Act when a resource is out of balance or an anomaly the planner repairs is present;
    hot partitions and metric gaps are reported (a plan cannot fix them)."""
    imbalance = summary.get("imbalance") or {}
    out_of_balance = sorted(r for r, v in imbalance.items() if not v.get("balanced", True))
    anomalies = summary.get("anomalies") or {}
    repairable = {k: anomalies.get(k) for k in (
        "offline_partitions", "under_replicated_partitions", "dead_brokers",
        "brokers_without_load", "over_capacity") if anomalies.get(k)}
    lines = [f"{r}: max/mean {v.get('max_over_mean')} "
             f"({'ok' if v.get('balanced', True) else 'OUT OF BALANCE'})"
             for r, v in sorted(imbalance.items())]
    lines.append(f"anomalies to repair: {repairable or 'none'}")
    lines.append(f"reported only: hot partitions {anomalies.get('hot_partition_count', 0)}, "
                 f"metric gaps {anomalies.get('metric_gaps') or 'none'}")
    return {"act": bool(out_of_balance or repairable), "lines": lines}


def plan_request(mode: str, params: dict[str, Any]) -> dict[str, Any]:
    """The trigger form's fields as a workflow PlanRequest (validated by kafka_ops)."""
    brokers = [int(b) for b in params.get("brokers") or []]
    request: dict[str, Any] = {"mode": MODES.get(mode, mode)}
    if request["mode"] in ("add-brokers", "remove-brokers", "demote"):
        request["brokers"] = brokers
    elif request["mode"] == "replace-broker":
        if len(brokers) != 2:
            raise ValueError("replace needs brokers = [old, new]")
        request["from_broker"], request["to_broker"] = brokers
    elif request["mode"] == "migrate-pool":
        request["topics"] = list(params.get("topics") or []) or None
    return request


#: The broker-operation form's short mode names, as the planner names them.
MODES = {"add": "add-brokers", "remove": "remove-brokers", "replace": "replace-broker"}


class ValidateRequestOperator(KafkaOpsOperator):
    """Check the trigger form against the live cluster and the pools before planning: a clear
    error naming what is wrong (and no retry: it would be as wrong), and nothing changes."""

    template_fields = ("mode",)

    def __init__(self, *, mode: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = mode

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow
        from kafka_ops.errors import KafkaOpsError

        params = dict(context["params"])
        try:
            request = workflow.PlanRequest.from_dict(plan_request(self.mode, params))
            pools = load_pools_file()
            with self.cluster_hook(context).backend() as backend:
                model = backend.describe_cluster()
            topics = select_topics(model, params)
            problems = []
            if request.mode == "migrate-pool":
                problems += pool_problems(pools, model, params, topics)
            for b in request.brokers or [x for x in (request.from_broker, request.to_broker)
                                         if x is not None]:
                if b not in model.brokers and request.mode != "replace-broker":
                    problems.append(f"broker {b} is not registered in the cluster")
        except (KafkaOpsError, ValueError) as e:
            raise AirflowFailException(f"bad request: {e}") from None
        if problems:
            raise AirflowFailException("bad request: " + "; ".join(problems))
        self.log.info("request ok: %s (topics: %s)", request.to_dict(), topics or "all")
        return {"request": request.to_dict(), "topics": topics}


def pool_problems(pools: Any, model: Any, params: dict[str, Any], topics: list[str]) -> list[str]:
    """What is wrong with a pool migration request, in words (empty: nothing)."""
    if pools is None:
        return ["migrate-pool needs a pools file (Variable kafka_ops_pools)"]
    try:
        pools.pool(params["pool"])
    except Exception as e:  # the pools module names what is missing
        return [str(e)]
    if (params.get("topics") or params.get("topic_pattern")) and not topics:
        return ["no topic of the cluster matches the topics/pattern"]
    elsewhere = [t for t in topics if (p := pools.pool_for_topic(t)) is None
                 or p.name != params["pool"]]
    if elsewhere:
        return [f"topic(s) {', '.join(elsewhere[:5])} belong to another pool in the pools file "
                f"(a topic's pool is set there)"]
    return []


def migration_topics(pools: Any, model: Any, params: dict[str, Any]) -> list[str]:
    """The topics to move: those named or matching, else every topic of the target pool."""
    return select_topics(model, params) or pools.topics_of(params["pool"], model)


def load_pools_file() -> Any:
    from kafka_ops.pools import load_pools

    path = pools_file()
    return load_pools(path) if path else None


def select_topics(model: Any, params: dict[str, Any]) -> list[str]:
    """Topics named in the form, plus those matching its pattern (sorted, existing only)."""
    names = set(params.get("topics") or [])
    pattern = params.get("topic_pattern") or ""
    existing = {p.topic for p in model.partitions.values()}
    if pattern:
        regex = re.compile(pattern)
        names |= {t for t in existing if regex.fullmatch(t)}
    return sorted(names & existing)


class PlanReassignmentOperator(KafkaOpsOperator):
    """Plan by mode from the live cluster (with measured loads when the analysis ran); push the
    plan, its rollback and approval digest; write the plan pair and a before/after chart."""

    template_fields = ("mode",)

    def __init__(self, *, mode: str, analysis_task_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = mode
        self.analysis_task_id = analysis_task_id

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow
        from kafka_ops.charts import plot_broker_load
        from kafka_ops.errors import ValidationError
        from kafka_ops.loads import AnalysisOutputSource, with_loads
        from kafka_ops.snapshot import save_snapshot

        params = dict(context["params"])
        throttle = int(params["throttle"])
        out = self.artifacts(context)
        with self.cluster_hook(context).backend() as backend:
            snapshot = workflow.read_cluster(backend)
        model = snapshot.model()
        loads_from = None
        if self.analysis_task_id:
            analysis = context["ti"].xcom_pull(task_ids=self.analysis_task_id)["analysis"]
            if Path(analysis, "summary.json").exists():
                loads_from = AnalysisOutputSource(analysis)
        model, loads = with_loads(model, loads_from)
        try:
            request = self._request(params, model, loads_from is not None)
            proposal = workflow.make_plan(model, request, load_pools_file(), throttle=throttle)
        except ValidationError as e:
            raise AirflowFailException(f"cannot plan: {e}") from None
        plan, base = proposal.reassignment(), proposal.base()
        digest = workflow.approval_digest(plan, model, throttle=throttle,
                                          summary=proposal.summary,
                                          concurrency=int(params["concurrency"]))
        plan_path = out / "plan.json"
        rollback = workflow.write_plan_pair(plan, base, plan_path)
        save_snapshot(model, out / "cluster-before.json")
        chart = plot_broker_load(model, model.with_assignment(plan.replicas),
                                 out / "plan-broker-load.png",
                                 title=f"Broker load before/after the plan ({request['mode']})")
        self.log.info("plan %s: %s\n%s", request["mode"],
                      f"loads from {loads_from.describe()}" if loads_from else "loads from the "
                      "cluster (sizes; no rates)", digest.text())
        if proposal.empty:
            raise AirflowSkipException("nothing to move: the cluster already meets its goals")
        return {
            "mode": request["mode"], "cluster": cluster_name(params),
            "plan": proposal.plan, "rollback": proposal.rollback,
            "digest": {k: v for k, v in digest.to_dict().items() if k != "rollback"},
            "moves": digest.replica_moves,
            "plan_path": str(plan_path), "rollback_path": str(rollback), "chart_path": str(chart),
            "loads": loads_from.describe() if loads_from else None,
        }

    def _request(self, params: dict[str, Any], model: Any, analysed: bool) -> dict[str, Any]:
        mode = self.mode
        if mode == "auto":
            # The anomaly detector's repairs first, under the same gate: offline replicas,
            # then empty (new) brokers, else a rebalance.
            if any(not b.alive for b in model.brokers.values()) or any(
                    p.is_under_replicated for p in model.partitions.values()):
                mode = "fix-offline"
            elif any(not any(True for _ in model.partitions_on(b)) for b in model.brokers
                     if model.brokers[b].alive):
                mode = "add-brokers"
            else:
                mode = "rebalance"
        request = plan_request(mode, params)
        if request["mode"] == "add-brokers" and not request.get("brokers"):
            request["brokers"] = [b for b in sorted(model.brokers)
                                  if not any(True for _ in model.partitions_on(b))]
        if request["mode"] == "migrate-pool":
            pools = load_pools_file()
            problems = pool_problems(pools, model, params, select_topics(model, params))
            if problems:
                raise AirflowFailException("bad request: " + "; ".join(problems))
            request["topics"] = migration_topics(pools, model, params)
        return request
