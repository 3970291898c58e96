"""What every kafka-ops operator shares: the run's connections (from its Params), its execution
store and artifacts directory, and the plan the `plan` task pushed. Nothing else: each
operator's ``execute`` is one call into ``kafka_ops.workflow``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator

from kafka_ops_provider.hooks.cluster import KafkaClusterHook
from kafka_ops_provider.hooks.state import ExecutionStateHook, run_artifacts, run_key


class KafkaOpsOperator(BaseOperator):
    ui_color = "#e8f0fe"

    def __init__(self, *, plan_task_id: str = "plan", state_conn_id: str = "kafka_ops_state",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_task_id = plan_task_id
        self.state_conn_id = state_conn_id

    @staticmethod
    def cluster_hook(context: Any) -> KafkaClusterHook:
        params = context["params"]
        return KafkaClusterHook(params["kafka_conn_id"], params.get("zookeeper_conn_id"))

    def state_key(self, context: Any) -> str:
        return run_key(context["dag"].dag_id, context["run_id"])

    def store(self, context: Any) -> Any:
        return ExecutionStateHook(self.state_conn_id).store(self.state_key(context))

    @staticmethod
    def artifacts(context: Any) -> Path:
        return run_artifacts(context["dag"].dag_id, context["run_id"])

    def planned(self, context: Any) -> dict[str, Any]:
        """What the plan task pushed: the plan's digest and where the plan files are."""
        planned = context["ti"].xcom_pull(task_ids=self.plan_task_id)
        if not planned:
            raise ValueError(f"task {self.plan_task_id!r} pushed no plan")
        return planned
