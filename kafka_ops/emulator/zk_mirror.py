"""The ZooKeeper face's mirror: each cluster event written as the znodes Kafka would write.

Handlers are named ``_on_<event kind>``; writes go through the face's ``ZkWriter`` in event
order. Completed reassignments leave ``/admin/reassign_partitions`` in one rewrite per burst.
"""

from __future__ import annotations

import logging

from kazoo.exceptions import NoNodeError

from kafka_ops.backends.zk_paths import (
    BROKER_IDS,
    CONFIG_CHANGE_PREFIX,
    CONTROLLER,
    CONTROLLER_EPOCH,
    LOG_DIR_EVENT_PREFIX,
    REASSIGN_PARTITIONS,
    TOPICS,
    broker_json,
    config_json,
    controller_json,
    encode,
    log_dir_event_json,
    now_ms,
    parse_reassignment,
    reassignment_json,
    state_json,
    topic_json,
)
from kafka_ops.emulator.state import Event
from kafka_ops.emulator.zk_face_base import FaceBase
from kafka_ops.model import TopicPartition

log = logging.getLogger("kafka_ops.emulator.zk_face")


def _tp(event: Event) -> TopicPartition:
    assert event.topic is not None and event.partition is not None, event  # a partition's event
    return TopicPartition(event.topic, event.partition)


def _topic(event: Event) -> str:
    assert event.topic is not None, event  # a topic's event
    return event.topic


def _broker(event: Event) -> int:
    assert event.broker is not None, event  # a broker's event
    return event.broker


class ZkMirror(FaceBase):
    """Cluster events -> znodes, for ``ZooKeeperFace`` (a mixin over the face's state)."""

    def _mirror(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    def _on_broker_started(self, event: Event) -> None:
        b = self.cluster.brokers[_broker(event)]
        path = f"{BROKER_IDS}/{b.id}"
        data = encode(broker_json(b.id, b.host, b.advertised_port, b.rack, now_ms()))
        self._writer.create(path, data, ephemeral=True)  # sets it if it exists
        self._flush()
        self._sync_broker_epochs([b.id])

    def _on_broker_stopped(self, event: Event) -> None:
        self._writer.delete(f"{BROKER_IDS}/{event.broker}")

    def _on_log_dir_fault(self, event: Event) -> None:
        """A failed directory: the broker's LogDirFailureHandler writes a sequential
        notification, which the controller's watch picks up (``_process_log_dir_events``)."""
        if event.data["failed"]:
            self._writer.create(LOG_DIR_EVENT_PREFIX, encode(log_dir_event_json(_broker(event))),
                                sequence=True)

    def _on_controller_changed(self, event: Event) -> None:
        self._write(CONTROLLER_EPOCH, str(event.data["epoch"]).encode())
        if _broker(event) < 0:
            self._deleting_controller = True
            self._writer.delete(CONTROLLER)
        else:
            self._write_or_create(CONTROLLER, encode(controller_json(_broker(event), now_ms())),
                                  ephemeral=True)

    def _write_topic(self, topic: str) -> None:
        # Encoded when sent: a topic changed by many events is written once per flush.
        self._write(f"{TOPICS}/{topic}", lambda: encode(topic_json(
            self._topic_ids.get(topic), self._assignments[topic])))

    def _create_partitions(self, topic: str, states: dict[int, dict], parent: bool) -> None:
        if parent:
            self._create(f"{TOPICS}/{topic}/partitions")
        for p, s in sorted(states.items()):
            base = f"{TOPICS}/{topic}/partitions/{p}"
            self._create(base)
            self._create(f"{base}/state", encode(state_json(
                s["leader"], s["leader_epoch"], s["isr"], self.cluster.controller_epoch)))
            self._state_versions[TopicPartition(topic, p)] = 0

    def _on_topic_created(self, event: Event) -> None:
        topic, data = _topic(event), event.data
        self._topic_ids[topic] = data["topic_id"]
        self._assignments[topic] = {
            p: (list(s["replicas"]), [], []) for p, s in data["partitions"].items()}
        self._write_or_create(f"{TOPICS}/{topic}", encode(topic_json(
            data["topic_id"], self._assignments[topic])))
        if self._configs.get(("topics", topic)) != data["configs"] or not self.client.exists(
                f"/config/topics/{topic}"):
            self._configs[("topics", topic)] = dict(data["configs"])
            self._write_or_create(f"/config/topics/{topic}", encode(config_json(data["configs"])))
        self._create_partitions(topic, data["partitions"], parent=True)
        self._flush()
        self.client.get_async(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))

    def _on_partitions_created(self, event: Event) -> None:
        topic = _topic(event)
        for p, s in event.data["partitions"].items():
            self._assignments[topic][p] = (list(s["replicas"]), [], [])
        self._write_topic(topic)
        self._create_partitions(topic, event.data["partitions"], parent=False)

    def _on_partition_changed(self, event: Event) -> None:
        d = event.data
        tp = _tp(event)
        assignment = (d["replicas"], d["adding"], d["removing"])
        if self._assignments[tp.topic].get(tp.partition) != assignment:
            self._assignments[tp.topic][tp.partition] = assignment
            self._write_topic(tp.topic)
        if self._state_versions.get(tp) != d["partition_epoch"]:
            self._state_versions[tp] = d["partition_epoch"]
            self._writer.set(  # every write: the znode version is the partition epoch
                f"{TOPICS}/{tp.topic}/partitions/{tp.partition}/state", encode(state_json(
                    d["leader"], d["leader_epoch"], d["isr"], d["controller_epoch"])),
                coalesce=False)

    def _on_reassignment_started(self, event: Event) -> None:
        if event.data["source"] == "api":  # the latest reassignment wins over a ZK one
            self._remove_later(_tp(event), None)

    def _on_reassignment_completed(self, event: Event) -> None:
        tp = _tp(event)
        self._remove_later(tp, list(event.data["replicas"]))  # B7

    def _remove_later(self, tp: TopicPartition, replicas: list[int] | None) -> None:
        """Drop ``tp`` from /admin/reassign_partitions (any entry when ``replicas`` is None,
        else only one asking for them). Kafka reads and rewrites the znode per completion;
        removals queued together are applied in one rewrite, so a plan of thousands of
        partitions costs one read and write per burst of completions, not one per partition.
        """
        if not self._removals:
            self._queue.put(("call", self._apply_removals))
        self._removals[tp] = replicas

    def _apply_removals(self) -> None:
        removals, self._removals = self._removals, {}
        self._remove_from_reassign_znode(
            lambda t, reps: t in removals and removals[t] in (None, reps))

    _on_reassignment_cancelled = _on_reassignment_completed

    def _on_config_changed(self, event: Event) -> None:
        key = (event.data["entity_type"], event.data["entity_name"])
        config = event.data["config"]
        if self._configs.get(key) == config:
            return  # read from ZooKeeper by us, or written already
        self._configs[key] = dict(config)
        self._write_or_create(f"/config/{key[0]}/{key[1]}", encode(config_json(config)))
        self._create(CONFIG_CHANGE_PREFIX, encode({"version": 2, "entity_path": f"{key[0]}/{key[1]}"}),
                     sequence=True)

    def _remove_from_reassign_znode(self, remove) -> None:
        """KafkaController.maybeRemoveFromZkReassignment: rewrite, or delete when empty."""
        self._flush()
        try:
            raw, stat = self.client.get(REASSIGN_PARTITIONS)
        except NoNodeError:
            return
        entries = self._read_reassignment(raw)
        kept = {tp: reps for tp, reps in entries.items() if not remove(tp, reps)}
        if kept == entries and entries:
            return
        if kept:
            self._write(REASSIGN_PARTITIONS, encode(reassignment_json(kept)))
        else:
            self._writer.delete(REASSIGN_PARTITIONS)

    @staticmethod
    def _read_reassignment(raw: bytes) -> dict[TopicPartition, list[int]]:
        try:
            return parse_reassignment(raw)
        except (ValueError, TypeError) as e:
            log.warning("Ignoring partition reassignment due to invalid json in %s: %s",
                        REASSIGN_PARTITIONS, e)
            return {}
