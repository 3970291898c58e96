"""The gated tail's operators: each one call into ``kafka_ops.workflow``.

Execution is deferrable: ``execute`` starts (or, on a retry or a cleared task, resumes) the
execution recorded in this run's state store and takes one step; then it defers to
``ExecutionProgressTrigger`` and takes the next step when the trigger says one is due. The
approval is re-checked at the start: the digest the approver saw must still match the plan and
the live cluster, else execution refuses and nothing moves.
"""

from __future__ import annotations

from typing import Any

from airflow.exceptions import AirflowFailException

from kafka_ops_provider.operators.base import KafkaOpsOperator
from kafka_ops_provider.triggers.progress import ExecutionProgressTrigger


def _approved(context: Any) -> bool:
    answer = context["ti"].xcom_pull(task_ids="approve") or {}
    return list(answer.get("chosen_options") or []) == ["Approve"]


class ExecuteReassignmentOperator(KafkaOpsOperator):
    """Start or resume the approved plan; deferred while replication runs."""

    ui_color = "#fde68a"

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        if not _approved(context):
            raise AirflowFailException("the plan was not approved: nothing executes")
        planned = self.planned(context)
        params = context["params"]
        with self.cluster_hook(context).backend() as backend:
            started = workflow.start_execution(
                backend, self.store(context), planned["digest"], options={
                    "throttle": params["throttle"], "concurrency": params["concurrency"],
                    "one_replica_at_a_time": params["one_replica_at_a_time"],
                    "poll_interval": params["poll_interval"], "elect_leaders": False,
                })
            self.log.info("%s", started.describe())
        return self._step(context)

    def resume(self, context: Any, event: dict[str, Any]) -> Any:
        if event.get("error"):
            self.log.warning("the progress trigger hit %s; stepping anyway", event["error"])
        return self._step(context)

    def _step(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            outcome = workflow.step_execution(backend, self.store(context))
        self.log.info("%s", outcome.describe())
        if not outcome.finished:
            params = context["params"]
            self.defer(
                trigger=ExecutionProgressTrigger(
                    kafka_conn_id=params["kafka_conn_id"],
                    zookeeper_conn_id=params.get("zookeeper_conn_id"),
                    state_conn_id=self.state_conn_id, state_key=self.state_key(context),
                    poll_interval=float(params["poll_interval"]),
                ),
                method_name="resume",
            )
        report = outcome.report
        if report.status != "completed":
            # Paused (a broker died), cancelled or failed: no retry would help; make_safe runs
            # and the report says how to resume (clear this task once the broker is back).
            raise AirflowFailException(f"execution {report.status}: {report.message}")
        return report.to_dict()


class VerifyReassignmentOperator(KafkaOpsOperator):
    """Every partition of the plan at its target replicas, in sync (kafka-reassign --verify)."""

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.verify(backend, self.planned(context)["plan"])
        self.log.info("%s", result.describe())
        if not result.ok:
            raise AirflowFailException(result.describe())
        return result.to_dict()


class ElectPreferredLeadersOperator(KafkaOpsOperator):
    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.elect_preferred_leaders(backend, self.planned(context)["plan"])
        self.log.info("%s", result.describe())
        return result.to_dict()


class ClearThrottlesOperator(KafkaOpsOperator):
    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.clear_throttles(backend, self.store(context))
        self.log.info("%s", result.describe())
        return result.to_dict()


class MakeSafeOperator(KafkaOpsOperator):
    """Runs only when a task after the start of execution failed for good: cancel what is in
    flight (Kafka reverts those partitions to their original replicas), remove every
    throttle, and record what happened for the report."""

    ui_color = "#fecaca"

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.make_safe(backend, self.store(context))
        self.log.warning("%s", result.describe())
        return result.to_dict()


class ReassignmentReportOperator(KafkaOpsOperator):
    """The run's report (summary, before/after load chart) into the artifacts directory."""

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        out = self.artifacts(context)
        with self.cluster_hook(context).backend() as backend:
            report = workflow.final_report(backend, self.store(context), self.planned(context),
                                           out)
        text = report.text()
        (out / "report.txt").write_text(text)
        self.log.info("report (also in %s):\n%s", out, text)
        return {**report.to_dict(), "report_path": str(out / "report.txt")}

