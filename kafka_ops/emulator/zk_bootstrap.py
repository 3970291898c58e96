"""The ZooKeeper face's start-up: the whole cluster written in batched transactions.

What a stopped emulator with our cluster id left in the chroot is cleared first (anything else
is refused); then every persistent path, broker registration, topic, partition state and
config is created in pipelined ``multi`` transactions, each well under jute.maxbuffer.
"""

from __future__ import annotations

import json
import logging
from collections import deque

from kazoo.exceptions import NoNodeError

from kafka_ops.backends.zk_paths import (
    BROKER_IDS,
    CLUSTER_ID,
    CONTROLLER,
    CONTROLLER_EPOCH,
    PERSISTENT_PATHS,
    TOPICS,
    broker_json,
    config_json,
    controller_json,
    encode,
    now_ms,
    state_json,
    topic_json,
)
from kafka_ops.emulator.zk_face_base import FaceBase
from kafka_ops.errors import ClusterStateError, KafkaOpsError

log = logging.getLogger("kafka_ops.emulator.zk_face")

_BATCH_OPS = 500  # operations per transaction
_BATCH_BYTES = 256 * 1024  # data per transaction, far below the default 1 MB jute.maxbuffer
_MAX_IN_FLIGHT = 16


class ZkBootstrap(FaceBase):
    """Start-up writes of ``ZooKeeperFace`` (a mixin: it uses the face's client and state)."""

    def _clear_previous_run(self) -> None:
        """A chroot left by an emulator with our cluster id is cleared; any other Kafka
        metadata (a real cluster's, or a running one) is never touched."""
        topics = self.client.exists(TOPICS) and self.client.get_children(TOPICS)
        if not topics:
            return
        live = self.client.exists(BROKER_IDS) and self.client.get_children(BROKER_IDS)
        try:
            owner = json.loads(self.client.get(CLUSTER_ID)[0]).get("id")
        except (NoNodeError, ValueError, AttributeError):
            owner = None
        if live or owner != self.cluster.cluster_id:
            raise KafkaOpsError(
                f"ZooKeeper {self.zookeeper} already holds a Kafka cluster ({len(topics)} "
                f"topics, {len(live or [])} live brokers, cluster id {owner!r}); give the "
                "emulator an empty chroot")
        log.info("clearing the metadata a previous emulator left in %s", self.zookeeper)
        paths = []
        level = [p for p in (*PERSISTENT_PATHS, CONTROLLER_EPOCH, CLUSTER_ID)
                 if p.count("/") == 1 and self.client.exists(p)]
        while level:
            paths.extend(level)
            children = [(p, self.client.get_children_async(p)) for p in level]
            level = [f"{p}/{c}" for p, r in children for c in r.get(timeout=self.timeout)]
        ops = [(path, b"", False) for path in reversed(paths)]  # children before parents
        self._bulk(ops, delete=True)

    def _bootstrap_ops(self) -> list[tuple[str, bytes, bool]]:
        """(path, data, ephemeral) creates, parents first. Called under the cluster lock."""
        c = self.cluster
        ops: list[tuple[str, bytes, bool]] = [
            (path, b"", False) for path in PERSISTENT_PATHS if not self.client.exists(path)]
        if not self.client.exists(CLUSTER_ID):
            ops.append((CLUSTER_ID, encode({"version": "1", "id": c.cluster_id}), False))
        if self.client.exists(CONTROLLER_EPOCH):
            self.client.set(CONTROLLER_EPOCH, str(c.controller_epoch).encode())
        else:
            ops.append((CONTROLLER_EPOCH, str(c.controller_epoch).encode(), False))
        now = now_ms()
        for b in c.brokers.values():
            if b.alive:
                ops.append((f"{BROKER_IDS}/{b.id}", encode(broker_json(
                    b.id, b.host, b.advertised_port, b.rack, now)), True))
        by_topic: dict[str, list] = {}
        for tp, p in c.partitions.items():
            by_topic.setdefault(tp.topic, []).append(p)
        for topic, parts in by_topic.items():
            self._topic_ids[topic] = c.topic_ids[topic]
            self._assignments[topic] = {
                p.partition: (list(p.replicas), list(p.adding), list(p.removing)) for p in parts}
            config = c.topic_config(topic)
            self._configs[("topics", topic)] = config
            ops.append((f"{TOPICS}/{topic}", encode(topic_json(
                c.topic_ids[topic], self._assignments[topic])), False))
            ops.append((f"/config/topics/{topic}", encode(config_json(config)), False))
            ops.append((f"{TOPICS}/{topic}/partitions", b"", False))
            for p in parts:
                base = f"{TOPICS}/{topic}/partitions/{p.partition}"
                ops.append((base, b"", False))
                ops.append((f"{base}/state", encode(state_json(
                    p.leader, p.leader_epoch, p.isr, c.controller_epoch)), False))
                self._state_versions[p.tp] = p.partition_epoch
        for broker_id in [None, *c.brokers]:
            config = c.broker_config(broker_id)
            if config:
                name = "<default>" if broker_id is None else str(broker_id)
                self._configs[("brokers", name)] = config
                ops.append((f"/config/brokers/{name}", encode(config_json(config)), False))
        if c.controller_id >= 0:
            ops.append((CONTROLLER, encode(controller_json(c.controller_id, now)), True))
        return ops

    def _bulk(self, ops: list[tuple[str, bytes, bool]], delete: bool = False) -> None:
        """Create (or delete) everything in pipelined transactions, each well under
        ZooKeeper's default 1 MB request limit (jute.maxbuffer); one session keeps them in
        order."""
        in_flight: deque = deque()
        start = 0
        while start < len(ops):
            end, size = start, 0
            while end < len(ops) and end - start < _BATCH_OPS:
                item = len(ops[end][0]) + len(ops[end][1])
                if end > start and size + item > _BATCH_BYTES:
                    break
                size += item
                end += 1
            txn = self.client.transaction()
            for path, data, ephemeral in ops[start:end]:
                if delete:
                    txn.delete(path)
                else:
                    txn.create(path, data, ephemeral=ephemeral)
            in_flight.append((start, txn.commit_async()))
            while len(in_flight) > _MAX_IN_FLIGHT:
                self._check_batch(ops, *in_flight.popleft())
            start = end
        while in_flight:
            self._check_batch(ops, *in_flight.popleft())

    def _check_batch(self, ops, start: int, result) -> None:
        outcomes = result.get(timeout=self.timeout * 4)
        for offset, outcome in enumerate(outcomes):
            if isinstance(outcome, Exception) and type(outcome).__name__ != "RolledBackError":
                path = ops[start + offset][0]
                raise ClusterStateError(f"cannot write {path} to ZooKeeper: {outcome!r}")
