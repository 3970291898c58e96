"""The on-call gate: Airflow's ApprovalOperator showing the plan's approval digest.

The approver sees, in the Airflow UI (the task's "Required actions" page), what Approve means:
moves, bytes, estimated duration at the throttle, per-goal before/after, risks, and where the
full plan, rollback and chart are. The answer is bound to the digest's hash: the execute task
re-checks it against the plan and the live cluster and refuses when either changed.

Who may answer: ``[kafka_ops] approvers`` (``AIRFLOW__KAFKA_OPS__APPROVERS``, comma-separated
user ids, ``id:Display Name`` allowed); empty means any user with the right to answer. No answer
within ``approval_timeout_minutes`` (a DAG param) answers Reject by itself: nothing executes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.configuration import conf
from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk.exceptions import AirflowSkipException


def approvers() -> list[dict[str, str]]:
    """HITL assigned users from ``[kafka_ops] approvers``."""
    users = []
    for item in conf.get("kafka_ops", "approvers", fallback="").split(","):
        if item.strip():
            uid, _, name = item.strip().partition(":")
            users.append({"id": uid, "name": name or uid})
    return users


def view_link(context: Any) -> str:
    """The run's page in the Kafka rebalancing view (full diff, chart, predicted timeline)."""
    from kafka_ops_provider.hooks.state import run_key
    from kafka_ops_provider.ui.app import URL_PREFIX

    base = conf.get("api", "base_url", fallback="").rstrip("/")
    url = f"{base}{URL_PREFIX}/runs/{run_key(context['dag'].dag_id, context['run_id'])}"
    return (f"\n\n**[Open this plan in the Kafka rebalancing view]({url})**: the full diff, "
            "the before/after chart and the predicted timeline.")


class PlanApprovalOperator(ApprovalOperator):
    """Approve or Reject the plan pushed by ``plan_task_id``; skipped when there is nothing to
    approve (no moves, or a dry run), which skips execution too."""

    def __init__(self, *, plan_task_id: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "Approve a Kafka reassignment")
        kwargs.setdefault("defaults", "Reject")
        kwargs.setdefault("assigned_users", approvers() or None)
        super().__init__(ignore_downstream_trigger_rules=True, **kwargs)
        self.plan_task_id = plan_task_id

    def execute(self, context: Any) -> Any:
        from kafka_ops_provider.operators.digest_text import digest_markdown, digest_subject

        planned = context["ti"].xcom_pull(task_ids=self.plan_task_id)
        digest = planned["digest"]
        params = context["params"]
        if not planned.get("moves"):
            raise AirflowSkipException("the plan moves nothing: no approval needed")
        if params.get("dry_run"):
            raise AirflowSkipException("dry run: the plan and its digest are the result")
        self.subject = digest_subject(planned, context["dag"].dag_id)
        self.body = digest_markdown(planned) + view_link(context)
        self.response_timeout = timedelta(minutes=float(params["approval_timeout_minutes"]))
        self.log.info("Approval requested for digest %s:\n%s", digest["content_hash"], self.body)
        return super().execute(context)
