"""Prometheus' HTTP API behind the `prometheus_default` connection (http): host, port, schema;
login/password for basic auth or extra ``{"bearer_token": ...}``. The credentials go to the
metrics source and never into logs (the source's repr masks them)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException


class PrometheusHook(BaseHook):
    conn_name_attr = "prometheus_conn_id"
    default_conn_name = "prometheus_default"
    conn_type = "http"
    hook_name = "Prometheus"

    def __init__(self, prometheus_conn_id: str = "prometheus_default") -> None:
        super().__init__()
        self.prometheus_conn_id = prometheus_conn_id

    def settings(self) -> dict[str, Any] | None:
        """``{"url", "username", "password", "bearer_token"}``, or None without a connection."""
        try:
            conn = self.get_connection(self.prometheus_conn_id)
        except AirflowNotFoundException:
            return None
        if not conn.host:
            return None
        schema = conn.schema or "http"
        host = conn.host if "://" in conn.host else f"{schema}://{conn.host}"
        return {
            "url": f"{host}:{conn.port}" if conn.port else host,
            "username": conn.login or None,
            "password": conn.password or None,
            "bearer_token": conn.extra_dejson.get("bearer_token"),
        }
