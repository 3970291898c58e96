"""Tell on-call what needs them and how runs ended.

``OnCallNotifier`` (the approval task's notifier): an approval waits. ``RunOutcomeNotifier``
(the report task's callbacks): the run completed, failed, was cancelled, or paused (a broker
died; clear ``execute`` to resume). Each event goes to three places: a line in the task log, an
append-only inbox file in the artifacts directory (what tests and a log shipper read), and, when
the `kafka_ops_webhook` connection (http) exists, a Slack-compatible post (notifications/webhook).
Messages carry the run's figures and links only: no connection field, no config, no secret.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

from airflow.sdk import BaseNotifier

from kafka_ops.formatting import format_bytes, format_duration
from kafka_ops_provider.notifications.webhook import WEBHOOK_CONN, post, slack_payload


def _bytes(n: float | None) -> str:
    return "?" if n is None else format_bytes(n, decimal=True)


def _duration(s: float | None) -> str:
    return format_duration(s, words=True)


def airflow_links(dag_id: str, run_id: str, task_id: str | None = None) -> dict[str, str]:
    """Links into Airflow's UI and the rebalancing view (absolute when [api] base_url is set)."""
    from airflow.configuration import conf

    from kafka_ops_provider.hooks.state import run_key
    from kafka_ops_provider.ui.app import URL_PREFIX

    base = conf.get("api", "base_url", fallback="").rstrip("/")
    run = f"{base}/dags/{urllib.parse.quote(dag_id)}/runs/{urllib.parse.quote(run_id, safe='')}"
    links = {"run": run, "view": f"{base}{URL_PREFIX}/runs/{run_key(dag_id, run_id)}"}
    if task_id:
        links["required_actions"] = f"{run}/tasks/{urllib.parse.quote(task_id)}/required_actions"
    return links


class _Notifier(BaseNotifier):
    def __init__(self, conn_id: str = WEBHOOK_CONN) -> None:
        super().__init__()
        self.conn_id = conn_id

    def _send(self, context: Any, event: str, title: str, fields: list[tuple[str, str]],
              link: str | None) -> None:
        from kafka_ops_provider.hooks.state import artifacts_dir

        ti = context["ti"]
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "event": event,
                  "dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id,
                  "message": title, "fields": dict(fields), "link": link}
        self.log.info("on-call: %s %s", title, dict(fields))
        with open(Path(artifacts_dir(), "oncall-inbox.jsonl"), "a") as inbox:
            inbox.write(json.dumps(record) + "\n")
        post(slack_payload(title, fields, link, event), self.conn_id, self.log)


class OnCallNotifier(_Notifier):
    """An approval waits: what it is about (moves, bytes, durations) and where to answer."""

    template_fields = ("message",)

    def __init__(self, message: str, conn_id: str = WEBHOOK_CONN,
                 plan_task_id: str = "plan") -> None:
        super().__init__(conn_id)
        self.message = message
        self.plan_task_id = plan_task_id

    def notify(self, context: Any) -> None:
        ti = context["ti"]
        planned = ti.xcom_pull(task_ids=self.plan_task_id) or {}
        d = planned.get("digest") or {}
        fields = [("DAG", ti.dag_id), ("Run", ti.run_id)]
        if d:
            fields += [("Moves", str(d.get("replica_moves", "?"))),
                       ("Bytes", _bytes(d.get("bytes_to_move"))),
                       ("Estimated duration", _duration(d.get("estimated_seconds"))),
                       ("Digest", str(d.get("content_hash", "?")))]
        links = airflow_links(ti.dag_id, ti.run_id, ti.task_id)
        fields.append(("Details", links["view"]))
        self._send(context, "approval", self.message, fields, links["required_actions"])


class RunOutcomeNotifier(_Notifier):
    """How the run ended, from the execution the run recorded (not from task states alone: a
    paused execution says which broker died and how to resume)."""

    def notify(self, context: Any) -> None:
        from kafka_ops_provider.hooks.state import ExecutionStateHook, run_key

        ti = context["ti"]
        state = None
        try:
            state = ExecutionStateHook().store(run_key(ti.dag_id, ti.run_id)).load()
        except Exception as e:  # the notification still goes out, from the task's state
            self.log.warning("execution state unreadable for the notification: %s", e)
        fields = [("DAG", ti.dag_id), ("Run", ti.run_id)]
        if state is None:
            event = "failed" if ti.state == "failed" else "completed"
            title = f"kafka-ops: {ti.dag_id} run {event} before any execution"
        else:
            event = {"completed": "completed", "paused": "paused",
                     "cancelled": "cancelled"}.get(state.status, "failed")
            done = [t for t in state.tasks if t.state.value == "completed"]
            fields += [("Moves done", f"{len(done)} of {len(state.tasks)}"),
                       ("Bytes moved", _bytes(sum(t.moved_bytes for t in done)))]
            if state.skipped:
                fields.append(("Skipped", str(len(state.skipped))))
            if state.message:
                fields.append(("Why", state.message[:300]))
            if event == "paused":
                fields.append(("Resume", "bring the broker back, then clear the 'execute' task"))
            title = f"kafka-ops: reassignment {event} in {ti.dag_id}"
        links = airflow_links(ti.dag_id, ti.run_id)
        fields.append(("Report", links["view"] + "/report"))
        self._send(context, event, title, fields, links["run"])
