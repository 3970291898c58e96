"""The ZooKeeper face's state and primitives, shared by its parts (bootstrap, mirror, reactions).

``ZooKeeperFace`` (zk_face) combines the parts; each part is a class over this one so that its
use of the face's state and primitives is type-checked.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.states import EventType, WatchedEvent

from kafka_ops.backends.zk_paths import BROKER_IDS, Assignment
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.zk_writer import ZkWriter
from kafka_ops.errors import KafkaOpsError, ValidationError
from kafka_ops.model import TopicPartition


class FaceBase:
    """What the face knows (as last written or read by it) and how it writes and watches."""

    def __init__(self, cluster: EmulatedCluster, zookeeper: str, *, timeout: float = 15.0) -> None:
        if cluster.mode != "zk":
            raise ValidationError("the ZooKeeper face needs an emulated cluster in mode 'zk'")
        self.cluster = cluster
        self.zookeeper = zookeeper
        self.timeout = timeout
        self._client: KazooClient | None = None
        self._queue: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._writer = ZkWriter(lambda: self.client, timeout)
        self._connected = threading.Event()
        self._stopping = threading.Event()
        self._resync_needed = False
        self._session_id: int | None = None
        self._seen: dict[str, int] = {}  # admin znode -> czxid of the one acted on
        self._oldest_unwritten: float | None = None  # when the oldest unwritten event came
        self._max_lag = 0.0
        self._removals: dict[TopicPartition, list[int] | None] = {}
        # What the znodes hold, as last written or read by us.
        self._assignments: dict[str, dict[int, Assignment]] = {}
        self._topic_ids: dict[str, str] = {}
        self._state_versions: dict[TopicPartition, int] = {}
        self._configs: dict[tuple[str, str], dict[str, str]] = {}
        self._bad_topics: set[str] = set()
        self._last_notice = -1
        self._deleting_controller = False
        self._watches: dict[str, Any] = {}


    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise KafkaOpsError("ZooKeeper face is not started")
        return self._client



    def _sync_broker_epochs(self, broker_ids: Iterable[int]) -> None:
        """Kafka's broker epoch is the czxid of its registration znode."""
        stats = {b: self.client.exists_async(f"{BROKER_IDS}/{b}") for b in broker_ids}
        for broker_id, result in stats.items():
            stat = result.get(timeout=self.timeout)
            if stat is not None:
                with self.cluster.lock:
                    self.cluster.brokers[broker_id].epoch = stat.czxid


    def _watch(self, name: str):
        """One callback object per znode: kazoo keeps a set, so re-arming never doubles it."""
        if name not in self._watches:
            def callback(event: WatchedEvent) -> None:
                self._queue.put(("zk", name, event.type))
            self._watches[name] = callback
        return self._watches[name]

    def _topic_watch(self, topic: str):
        key = f"topic:{topic}"
        if key not in self._watches:
            def callback(event: WatchedEvent) -> None:
                if event.type == EventType.CHANGED:
                    self._queue.put(("zk", "topic", topic))
            self._watches[key] = callback
        return self._watches[key]


    def _write(self, path: str, data) -> None:
        self._writer.set(path, data)

    def _create(self, path: str, data: bytes = b"", ephemeral: bool = False,
                sequence: bool = False) -> None:
        self._writer.create(path, data, ephemeral=ephemeral, sequence=sequence)

    def _write_or_create(self, path: str, data: bytes, ephemeral: bool = False) -> None:
        self._flush()
        if self.client.exists(path):
            self._write(path, data)
        else:
            self._create(path, data, ephemeral=ephemeral)

    def _flush(self, give_up_after: float | None = None) -> None:
        """Write everything buffered (``ZooKeeperFace._flush``: across reconnects)."""
        raise NotImplementedError
