"""The Kafka cluster behind Airflow connections: ZooKeeper mode when `zookeeper_default` is set,
else the Admin API through the apache-kafka provider's `kafka` connection (its hook builds the
client config, resolving allow-listed callbacks and MSK/Google OAuth, so we never re-parse it).

Secrets stay in the connection store: ``ClusterConnection``'s repr masks them, so a hook or its
connection can be logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

if TYPE_CHECKING:
    from kafka_ops.backends.base import ClusterBackend
    from kafka_ops.backends.connection import ClusterConnection


class KafkaClusterHook(BaseHook):
    """``backend()``: a started kafka-ops backend for ``with``; ``get_conn()`` one to close yourself."""

    conn_name_attr = "kafka_conn_id"
    default_conn_name = "kafka_default"
    conn_type = "kafka"
    hook_name = "kafka-ops cluster"

    def __init__(self, kafka_conn_id: str = "kafka_default",
                 zookeeper_conn_id: str | None = "zookeeper_default") -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self.zookeeper_conn_id = zookeeper_conn_id

    def cluster_connection(self) -> ClusterConnection:
        from kafka_ops.backends.connection import ClusterConnection, ZooKeeperAuth

        zk = self._zookeeper()
        if zk is not None:
            connect = f"{zk.host}:{zk.port or 2181}{zk.extra_dejson.get('chroot', '')}"
            auth = (ZooKeeperAuth(zk.login, zk.password or "",
                                  scheme=zk.extra_dejson.get("auth_scheme", "digest"))
                    if zk.login else None)
            return ClusterConnection(zookeeper=connect, zookeeper_auth=auth)
        # The provider's module imports confluent-kafka: only here, never at DAG parse time.
        from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

        config: dict[str, Any] = KafkaBaseHook(self.kafka_conn_id)._build_config()
        bootstrap = config.pop("bootstrap.servers")
        return ClusterConnection(bootstrap_servers=bootstrap, security=config)

    def _zookeeper(self) -> Any:
        if not self.zookeeper_conn_id:
            return None
        try:
            conn = self.get_connection(self.zookeeper_conn_id)
        except AirflowNotFoundException:
            return None
        return conn if conn.host else None

    def get_conn(self) -> ClusterBackend:
        from kafka_ops.backends.connection import connect

        return connect(self.cluster_connection())

    @contextmanager
    def backend(self) -> Iterator[ClusterBackend]:
        """``with hook.backend() as backend:`` a started backend, closed afterwards."""
        backend = self.get_conn()
        try:
            yield backend
        finally:
            backend.close()

    def describe(self) -> str:
        """Where the cluster is, secrets masked: for task logs and reports."""
        return repr(self.cluster_connection())
