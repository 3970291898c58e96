"""Tell on-call that an approval waits: a line in the task log, an append-only inbox file in the
artifacts directory (what tests and a log shipper read), and, when the `kafka_ops_oncall`
connection (http) exists, a JSON POST to it (a chat or paging webhook)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk import BaseHook, BaseNotifier


class OnCallNotifier(BaseNotifier):
    template_fields = ("message",)

    def __init__(self, message: str, conn_id: str = "kafka_ops_oncall") -> None:
        super().__init__()
        self.message = message
        self.conn_id = conn_id

    def notify(self, context: Any) -> None:
        from kafka_ops_provider.hooks.state import artifacts_dir

        ti = context["ti"]
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id,
            "message": self.message,
        }
        self.log.info("on-call: %s", self.message)
        with open(Path(artifacts_dir(), "oncall-inbox.jsonl"), "a") as inbox:
            inbox.write(json.dumps(record) + "\n")
        try:
            conn = BaseHook.get_connection(self.conn_id)
        except AirflowNotFoundException:
            return
        url = conn.host if "://" in (conn.host or "") else f"{conn.schema or 'https'}://{conn.host}"
        if conn.port:
            url = f"{url}:{conn.port}"
        request = urllib.request.Request(
            url, data=json.dumps({"text": self.message, **record}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass
