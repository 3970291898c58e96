"""Where executions keep their state and runs keep their artifacts.

`kafka_ops_state` (generic): extra ``{"url": "file:///..." | "s3://bucket/prefix",
"storage_options": {...}}``; login/password become the S3 key/secret for ``s3://``. Every worker
and the triggerer must reach that URL: that is what lets a retry on another worker resume.
The Variable `kafka_ops_artifacts` says where plans, charts and reports go.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow.sdk import BaseHook, Variable
from airflow.sdk.exceptions import AirflowNotFoundException

#: How long a dead worker's claim on an execution outlives it (see ExecutionStateHook.store).
LEASE_SECONDS = 20.0
DEFAULT_ARTIFACTS = os.path.join(os.environ.get("AIRFLOW_HOME", "."), "kafka-ops-artifacts")


class ExecutionStateHook(BaseHook):
    conn_name_attr = "state_conn_id"
    default_conn_name = "kafka_ops_state"
    conn_type = "generic"
    hook_name = "kafka-ops execution state"

    def __init__(self, state_conn_id: str = "kafka_ops_state") -> None:
        super().__init__()
        self.state_conn_id = state_conn_id

    def location(self) -> tuple[str, dict[str, Any]]:
        """(URL, fsspec storage options) of the state store; a local directory by default."""
        try:
            conn = self.get_connection(self.state_conn_id)
        except AirflowNotFoundException:
            return Path(artifacts_dir(), "state").resolve().as_uri(), {}
        extra = conn.extra_dejson
        url = extra.get("url") or Path(artifacts_dir(), "state").resolve().as_uri()
        options = dict(extra.get("storage_options") or {})
        if url.startswith("s3://") and conn.login:
            options.setdefault("key", conn.login)
            options.setdefault("secret", conn.password)
        return url, options

    def store(self, key: str) -> Any:
        """The kafka-ops state store of one execution (``key`` from ``run_key``).

        Its lock is a lease: a task holds it for one step (seconds, renewed every step), so a
        short lease lets the retry of a killed worker take over soon after the kill.
        """
        from kafka_ops.executor.store import FsspecStateStore

        url, options = self.location()
        return FsspecStateStore(f"{url.rstrip('/')}/{key}", options, lease_seconds=LEASE_SECONDS)


def artifacts_dir() -> str:
    """The `kafka_ops_artifacts` Variable, or a directory under AIRFLOW_HOME; created."""
    path = Variable.get("kafka_ops_artifacts", default=DEFAULT_ARTIFACTS)
    Path(path).mkdir(parents=True, exist_ok=True)
    return path


def run_key(dag_id: str, run_id: str) -> str:
    """One execution store per DAG run: its retries (on any worker) find their execution."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return f"{dag_id}/{safe}"


def run_artifacts(dag_id: str, run_id: str) -> Path:
    """Where this run's plan, rollback, chart and report go."""
    path = Path(artifacts_dir(), run_key(dag_id, run_id))
    path.mkdir(parents=True, exist_ok=True)
    return path
