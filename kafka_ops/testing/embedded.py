"""The embedded default cluster: what the demo and the Airflow tests run the DAGs against.

A private ZooKeeper (or a chroot on a shared one), the emulator on it (ZooKeeper-mode Kafka,
reached only through Kafka's interfaces), every emulated broker serving ``/metrics`` as the JMX
exporter would, and a real Prometheus scraping them with a backfilled history (so the analysis
has a window to read without waiting for it). ``stop()`` ends everything it started.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path

from kafka_ops.emulator.metrics import MetricsFace, scrape_config
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.model import ClusterModel
from kafka_ops.snapshot import model_from_dict
from kafka_ops.testing.prometheus import PrometheusServer
from kafka_ops.testing.zookeeper import ZooKeeperServer

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster.json"
#: The example's topics the small cluster keeps: the payments pool's (so a pool migration has
#: something to move) and a few others, 37 partitions in all; brokers 7-9 carry three times
#: the replicas of brokers 1-3, as in the example.
SMALL_TOPICS = ("ledger", "payments.orders", "payments.refunds", "logs.audit",
                "search.index-updates", "users.profile-changes")


def small_example(scale: float = 0.05, topics: tuple[str, ...] = SMALL_TOPICS) -> ClusterModel:
    """The bundled example cluster (9 brokers, 3 racks, its pools) cut down to ``topics``, with
    partition sizes and rates times ``scale``: still unbalanced, but its rebalance is ~60 moves
    of at most 1.6 GB each, which the emulator replicates in seconds at a 200 MB/s throttle.
    What the Airflow tests and the demo run the DAGs against: the full example's 150 moves
    made a run take many deferral rounds, minutes on a loaded 2-core machine."""
    data = json.loads(EXAMPLE.read_text())
    data["topics"] = [t for t in data["topics"] if t["name"] in topics]
    for topic in data["topics"]:
        for p in topic["partitions"]:
            p["size_bytes"] = int(p["size_bytes"] * scale)
            for rate in ("bytes_in_per_sec", "bytes_out_per_sec"):
                if rate in p:
                    p[rate] = p[rate] * scale
    return model_from_dict(data)


class EmbeddedCluster:
    """``start()``; then ``zookeeper_host``/``zookeeper_port``/``chroot`` (for an Airflow
    connection), ``prometheus.url``, ``emulator`` (faults, its own record); ``stop()``."""

    def __init__(self, model: ClusterModel, zookeeper: ZooKeeperServer | None = None,
                 speed: float = 600.0, history_seconds: float = 2 * 3600,
                 history_step: float = 60.0, scrape_interval: str = "5s") -> None:
        self.model = model
        self._own_zookeeper = zookeeper is None
        self.zookeeper = zookeeper
        self.chroot = f"/kafka-{uuid.uuid4().hex[:10]}"
        self.speed = speed
        self.history_seconds = history_seconds
        self.history_step = history_step
        self.scrape_interval = scrape_interval
        self.emulator: Emulator | None = None
        self.metrics: MetricsFace | None = None
        self.prometheus: PrometheusServer | None = None

    @property
    def zookeeper_host(self) -> str:
        return "127.0.0.1"

    @property
    def zookeeper_port(self) -> int:
        assert self.zookeeper is not None
        return self.zookeeper.port

    @property
    def connect(self) -> str:
        assert self.zookeeper is not None
        return self.zookeeper.connect_string + self.chroot

    def start(self) -> EmbeddedCluster:
        try:
            if self.zookeeper is None:
                self.zookeeper = ZooKeeperServer().start()
            # The wire face too: the brokers registered in ZooKeeper answer the Admin API
            # (log-dir sizes, which ZooKeeper does not hold), as real brokers do.
            self.emulator = Emulator(self.model, zookeeper=self.connect, speed=self.speed,
                                     wire=True).start()
            self.metrics = MetricsFace(self.emulator.cluster).start()
            self.prometheus = PrometheusServer(
                [scrape_config(self.metrics.targets, interval=self.scrape_interval)],
                scrape_interval=self.scrape_interval)
            if self.history_seconds > 0:
                self._backfill()
            self.prometheus.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _backfill(self) -> None:
        assert self.metrics is not None and self.prometheus is not None
        now = time.time()
        with tempfile.TemporaryDirectory(prefix="kafka-ops-history-") as tmp:
            history = Path(tmp) / "history.om"
            with open(history, "w") as out:
                self.metrics.metrics.history(out, now - self.history_seconds, now - 1,
                                             self.history_step, instances=self.metrics.targets)
            self.prometheus.backfill(history)

    def stop(self) -> None:
        if self.prometheus is not None:
            self.prometheus.cleanup()
        if self.metrics is not None:
            self.metrics.stop()
        if self.emulator is not None:
            self.emulator.stop()
        if self.zookeeper is not None and self._own_zookeeper:
            self.zookeeper.cleanup()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
