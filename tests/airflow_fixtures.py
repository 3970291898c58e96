"""One real Airflow per test session, and a fresh emulated cluster per test: a pytest plugin
(tests/conftest.py loads it), so tests/airflow and tests/ui share the same session Airflow.

``airflow_stack``: Airflow 3.3.2 (api-server, scheduler, dag-processor, triggerer, SQLite) on
loopback with the project's dags/ and plugins/, its artifacts in a temporary directory and the
DAGs parsed and unpaused, tuned for tests (``TEST_TUNING``). ``cluster``: the small example
cluster (9 brokers on 3 racks, 37 partitions, unbalanced: brokers 7-9 carry three times the
replicas of brokers 1-3) emulated on its own ZooKeeper chroot with per-broker /metrics and its
own Prometheus, reached by the DAGs through connections of its own (``cluster.conf``), so tests
never share cluster state. Every test drives Airflow the way on-call does: over the REST API.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported in the fixtures: every test session loads this plugin
    from kafka_ops.model import ClusterModel
    from kafka_ops.testing.airflow import AirflowStack
    from kafka_ops.testing.embedded import EmbeddedCluster
    from kafka_ops.testing.zookeeper import ZooKeeperServer

DAG_IDS = ("kafka_rebalance", "kafka_pool_migration", "kafka_broker_operation")


@pytest.fixture(scope="session")
def airflow_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowStack]:
    from kafka_ops.testing.airflow import TEST_TUNING, AirflowStack

    home = tmp_path_factory.mktemp("airflow")
    artifacts = tmp_path_factory.mktemp("artifacts")
    stack = AirflowStack(home=home, env={
        **TEST_TUNING,
        "AIRFLOW_VAR_KAFKA_OPS_ARTIFACTS": str(artifacts),
        # Tests trigger every run themselves, each against its own cluster.
        "AIRFLOW__KAFKA_OPS__REBALANCE_SCHEDULE": "none",
        "AIRFLOW__KAFKA_OPS__SNAPSHOT_SCHEDULE": "none",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "AIRFLOW_CONN_KAFKA_OPS_STATE": json.dumps({
            "conn_type": "generic", "extra": {"url": (artifacts / "state").as_uri()}}),
    })
    stack.artifacts = artifacts  # type: ignore[attr-defined]
    try:
        stack.start()
        stack.wait_dags(DAG_IDS)
        yield stack
    except BaseException:
        for name in ("scheduler", "dag-processor", "triggerer", "api-server"):
            print(f"--- {name} log (tail) ---\n{stack.logs(name)[-4000:]}")
        raise
    finally:
        stack.stop()


@dataclass
class ClusterUnderTest:
    """What a test gets: the embedded cluster (the emulator's own record, faults, Prometheus)
    and the Params that point a DAG run at it through connections of its own."""

    embedded: EmbeddedCluster
    conf: dict

    @property
    def emulated(self):  # kafka_ops.emulator.cluster.EmulatedCluster
        assert self.embedded.emulator is not None
        return self.embedded.emulator.cluster

    def model(self) -> ClusterModel:
        return self.emulated.to_model()

    def replicas(self) -> dict[tuple[str, int], tuple[int, ...]]:
        return {(tp.topic, tp.partition): p.replicas
                for tp, p in self.model().partitions.items()}


@pytest.fixture
def cluster(airflow_stack: AirflowStack, zookeeper_server: ZooKeeperServer
            ) -> Iterator[ClusterUnderTest]:
    from kafka_ops.testing.embedded import EmbeddedCluster, small_example

    tag = uuid.uuid4().hex[:10]
    with EmbeddedCluster(small_example(), zookeeper=zookeeper_server) as embedded:
        assert embedded.prometheus is not None
        zk, prom = f"zk_{tag}", f"prom_{tag}"
        airflow_stack.set_connection(zk, "generic", host=embedded.zookeeper_host,
                                     port=embedded.zookeeper_port,
                                     extra={"chroot": embedded.chroot})
        airflow_stack.set_connection(prom, "http", host="127.0.0.1", schema="http",
                                     port=int(embedded.prometheus.url.rsplit(":", 1)[1]))
        yield ClusterUnderTest(embedded, {"zookeeper_conn_id": zk, "prometheus_conn_id": prom})
        for conn_id in (zk, prom):
            airflow_stack.api("DELETE", f"/connections/{conn_id}", ok=(404,))
