"""The gated tail's operators: each one call into ``kafka_ops.workflow``.

Execution is deferrable: ``execute`` starts (or, on a retry or a cleared task, resumes) the
execution recorded in this run's state store and takes one step; then it defers to
``ExecutionProgressTrigger`` and takes the next step when the trigger says one is due. The
approval is re-checked at the start: the digest's content hash must still match the plan and
the live cluster, else execution refuses (no retry) and nothing moves.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from airflow.configuration import conf
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kafka_ops_provider.operators.base import KafkaOpsOperator
from kafka_ops_provider.triggers.progress import ExecutionProgressTrigger

RESUME_HINT = ("To resume once the cause is fixed (e.g. the broker is back): clear the "
               "'execute' task of this run in the Airflow UI (or POST .../clearTaskInstances); "
               "the execution continues from its state store, never redoing a finished move.")


def _approved(context: Any) -> bool:
    answer = context["ti"].xcom_pull(task_ids="approve") or {}
    return list(answer.get("chosen_options") or []) == ["Approve"]


class ExecuteReassignmentOperator(KafkaOpsOperator):
    """Start or resume the approved plan; deferred to the triggerer while replication runs."""

    ui_color = "#fde68a"

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow
        from kafka_ops.errors import BrokerNotAvailableError, ClusterStateError, ValidationError

        if not _approved(context):
            raise AirflowFailException("the plan was not approved: nothing executes")
        planned = self.planned(context)
        params = context["params"]
        concurrency = int(params["concurrency"])
        request = workflow.ExecutionRequest(
            throttle=int(params["throttle"]), max_incoming=concurrency,
            max_outgoing=concurrency, one_replica_at_a_time=bool(params["one_replica_at_a_time"]),
            poll_interval=float(params["poll_interval"]),
            elect_leaders=False,  # its own task, after verify
        )
        with self.cluster_hook(context).backend() as backend:
            try:
                status = workflow.start_execution(
                    backend, planned["plan"], self.store(context), request,
                    base=planned["rollback"], approved_hash=planned["digest"]["content_hash"])
            except (ValidationError, BrokerNotAvailableError, ClusterStateError) as e:
                # The plan changed since approval, a broker is offline, the cluster is unhealthy:
                # a retry cannot help; the message says what to do. Connection errors and a
                # lease still held by a killed worker (ReassignmentInProgressError) are retried.
                raise AirflowFailException(f"execution refused: {e}. {RESUME_HINT}") from None
        self.log.info("execution %s: %s %s", status.plan_id, status.status, status.message)
        return self._step(context)

    def resume(self, context: Any, event: dict[str, Any]) -> Any:
        if event.get("error"):
            self.log.warning("the progress trigger hit %s; stepping anyway", event["error"])
        return self._step(context)

    def _step(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            status = workflow.step_execution(backend, self.store(context))
        p = status.progress
        self.log.info("%s: %s/%s moves done, %s in flight, %s pending (%.0f%%)%s", status.status,
                      p.get("completed"), p.get("total"), p.get("in_flight"), p.get("pending"),
                      100 * p.get("fraction", 0), f"; ETA {p['eta_seconds']:.0f} s"
                      if p.get("eta_seconds") else "")
        if not status.ended:
            params = context["params"]
            poll = float(params["poll_interval"])
            self.defer(
                trigger=ExecutionProgressTrigger(
                    kafka_conn_id=params["kafka_conn_id"],
                    zookeeper_conn_id=params.get("zookeeper_conn_id"),
                    state_conn_id=self.state_conn_id, state_key=self.state_key(context),
                    poll_interval=poll, max_wait=max(30 * poll, 60.0),
                    min_wait=conf.getfloat("kafka_ops", "trigger_min_wait", fallback=5.0),
                    # The trigger waits for this process to end before it may fire.
                    task_pid=os.getpid(), hostname=socket.gethostname(),
                ),
                method_name="resume",
            )
        report = workflow.final_report(self.store(context)).report
        if report["status"] != "completed":
            # Paused (a broker died), cancelled or failed: a retry would not help. make_safe
            # runs and the report says what happened and how to resume.
            raise AirflowFailException(f"execution {report['status']}: {report['message']}. "
                                       + RESUME_HINT)
        return report


class VerifyReassignmentOperator(KafkaOpsOperator):
    """Kafka's verify of every partition of the plan (throttles stay until leaders moved)."""

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.verify_and_clear_throttles(
                backend, self.planned(context)["plan"], preserve_throttles=True)
        self.log.info("verify:\n%s", "\n".join(result.messages[:50]))
        if not result.complete:
            pending = [tp for tp, s in result.partitions.items() if s != "completed"]
            raise AirflowFailException(f"{len(pending)} partitions not at their targets, e.g. "
                                       f"{', '.join(pending[:5])}")
        return result.to_dict()


class ElectPreferredLeadersOperator(KafkaOpsOperator):
    """Preferred leader election for the plan's partitions not led by their first replica."""

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            result = workflow.elect_leaders(backend, self.planned(context)["plan"])
        self.log.info("elected %d preferred leaders; still misplaced: %s", len(result.elected),
                      result.misplaced or "none")
        return result.to_dict()


class ClearThrottlesOperator(KafkaOpsOperator):
    """Remove every throttle the plan needed (Kafka's rule: once nothing moves anywhere)."""

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        planned = self.planned(context)
        with self.cluster_hook(context).backend() as backend:
            result = workflow.verify_and_clear_throttles(backend, planned["plan"],
                                                         base=planned["rollback"])
        if not result.throttles_cleared:
            raise AirflowFailException("another reassignment is running in the cluster: "
                                       "throttles stay until it ends (retry clears them)")
        if result.throttles_left_on:
            self.log.warning("throttles stay on down broker(s) %s: clear this task once they "
                             "are back", result.throttles_left_on)
        else:
            self.log.info("throttles removed from the plan's topics and brokers")
        return result.to_dict()


class MakeSafeOperator(KafkaOpsOperator):
    """Runs only when a task after the start of execution failed for good. A running
    execution is cancelled (Kafka reverts the moves in flight to their original replicas, so
    no partition drops below its replica count); a paused one keeps what it finished and
    stays resumable; then every throttle goes."""

    ui_color = "#fecaca"

    def execute(self, context: Any) -> Any:
        from kafka_ops import workflow

        store = self.store(context)
        state = store.load()
        if state is None:  # failed before anything was recorded, so before anything was sent
            self.log.info("no execution was started in this run: nothing to make safe")
            return {"execution": "never started"}
        done: dict[str, Any] = {"execution": state.status}
        hook = self.cluster_hook(context)
        if state is not None and state.status in ("running", "cancelling"):
            result = workflow.cancel_execution(store, hook.get_conn, wait=120.0)
            done["cancel"] = result.to_dict()
            self.log.warning("cancelled the execution: %s", result.status)
        with hook.backend() as backend:
            cleared = workflow.verify_and_clear_throttles(
                backend, self.planned(context)["plan"], base=self.planned(context)["rollback"])
        done["throttles_cleared"] = cleared.throttles_cleared
        done["throttles_left_on"] = cleared.throttles_left_on
        done["complete"] = cleared.complete
        self.log.warning("made safe: %s", done)
        if not cleared.throttles_cleared:
            raise AirflowFailException("a reassignment is still running: throttles stay; "
                                       "clear this task once it ends")
        return done


class ReassignmentReportOperator(KafkaOpsOperator):
    """What happened, for people: the run's report and a before/after chart of the live
    cluster, into the artifacts directory and the task log. It runs whatever happened after
    the plan, and fails (after writing) when the execution did not complete, so the run's
    state says so too."""

    def execute(self, context: Any) -> Any:
        from kafka_ops_provider.operators.report_text import write_report

        ti = context["ti"]
        if not ti.xcom_pull(task_ids=self.plan_task_id):
            raise AirflowSkipException("no plan was made in this run: nothing to report")
        out = self.artifacts(context)
        from kafka_ops import workflow

        with self.cluster_hook(context).backend() as backend:
            after = workflow.read_cluster(backend).model()  # with sizes in ZooKeeper mode too
        report = write_report(
            out, self.planned(context), after, self.store(context),
            states={t: ti.xcom_pull(task_ids=t) for t in
                    ("execute", "verify", "elect_leaders", "clear_throttles", "make_safe")},
            resume_hint=RESUME_HINT)
        self.log.info("report (%s):\n%s", out / "report.txt", report["text"])
        if report["status"] != "completed" or report["made_safe"]:
            # The report is written; the run itself must show it did not do its job.
            raise AirflowFailException(f"the run did not complete ({report['status']}): "
                                       f"see {out / 'report.txt'}")
        return {k: v for k, v in report.items() if k != "text"}
