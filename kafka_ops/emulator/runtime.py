"""An emulated Kafka cluster with its faces and a clock that keeps it moving.

``Emulator`` wires one ``EmulatedCluster`` to the ZooKeeper face (when given a ZooKeeper) and a
ticker thread that advances replication every ``tick_interval`` seconds of real time, so a
cluster driven by a ``ScaledClock`` makes progress on its own, as a real one does::

    with Emulator(generate_cluster("small"), zookeeper="127.0.0.1:2181/kafka", speed=60) as emu:
        ...  # operate on ZooKeeper; emu.cluster.stop_broker(3) injects a fault

Tests pass a ``ManualClock`` instead and call ``emu.cluster.tick()`` after advancing it.

With ``wire=True`` every broker also listens on 127.0.0.1 for the Kafka protocol (Admin API
clients, kcat; ``emu.bootstrap_servers``), optionally behind SASL/PLAIN (``sasl_plain_users``).
The wire face starts first so the brokers registered in ZooKeeper advertise its ports.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Literal

from kafka_ops.emulator.clock import Clock, ScaledClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.metrics import MetricsFace
from kafka_ops.emulator.wire_face import WireFace
from kafka_ops.emulator.zk_face import ZooKeeperFace
from kafka_ops.model import ClusterModel

log = logging.getLogger(__name__)


class Emulator:
    def __init__(
        self,
        model: ClusterModel,
        zookeeper: str | None = None,
        mode: Literal["zk", "kraft"] = "zk",
        speed: float = 1.0,
        clock: Clock | None = None,
        tick_interval: float = 0.05,
        cluster_id: str = "kafka-ops-emulator",
        wire: bool = False,
        sasl_plain_users: Mapping[str, str] | None = None,
        metrics_port_base: int | None = None,
    ) -> None:
        self.clock = clock or ScaledClock(speed)
        self.cluster = EmulatedCluster(model, mode=mode, clock=self.clock, cluster_id=cluster_id)
        self.zk_face = ZooKeeperFace(self.cluster, zookeeper) if zookeeper else None
        self.wire_face = (WireFace(self.cluster, sasl_plain_users=sasl_plain_users)
                          if wire else None)
        # Each broker's /metrics (JMX exporter names) on port_base + index; 0 = free ports.
        self.metrics_face = (MetricsFace(self.cluster, port_base=metrics_port_base)
                             if metrics_port_base is not None else None)
        self.tick_interval = tick_interval
        self._stopping = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def bootstrap_servers(self) -> str:
        """The wire face's listeners (host:port,...), for Admin API clients."""
        if self.wire_face is None:
            raise RuntimeError("the emulator runs without its Kafka wire face (wire=False)")
        return self.wire_face.bootstrap_servers

    def start(self) -> Emulator:
        if self.wire_face is not None:
            self.wire_face.start()
        if self.zk_face is not None:
            try:
                self.zk_face.start()
            except BaseException:
                if self.wire_face is not None:  # do not leave listeners behind
                    self.wire_face.stop()
                raise
        if self.metrics_face is not None:
            self.metrics_face.start()
        self._stopping.clear()
        self._ticker = threading.Thread(target=self._tick_forever, name="emulator-tick",
                                        daemon=True)
        self._ticker.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._ticker is not None:
            self._ticker.join(timeout=10)
            self._ticker = None
        if self.metrics_face is not None:
            self.metrics_face.stop()
        if self.zk_face is not None:
            self.zk_face.stop()
        if self.wire_face is not None:
            self.wire_face.stop()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tick_forever(self) -> None:
        while not self._stopping.wait(self.tick_interval):
            try:
                self.cluster.tick()
            except Exception:  # keep the cluster alive; the bug shows in the log
                log.exception("emulator tick failed")
