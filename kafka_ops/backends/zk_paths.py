"""Kafka's znodes in ZooKeeper mode: paths, and JSON encoded and decoded like Kafka's ZkData.

Written from the schemas in Kafka's ``core/src/main/scala/kafka/zk/ZkData.scala`` (up to 3.9),
independently of the emulator, so the two cross-check each other. Decoding is strict where Kafka
is strict (types of ids and replica lists) and lenient where Kafka is lenient (missing
``adding_replicas``/``removing_replicas`` maps decode as empty, unknown fields are ignored). Any
znode we cannot understand raises ClusterStateError naming the znode: a backend must never
crash on, or silently misread, a cluster's metadata.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.errors import ClusterStateError
from kafka_ops.model import Broker, TopicPartition

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CONTROLLER = "/controller"
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
DEFAULT_BROKER = "<default>"

#: ZooKeeper config entity types as Kafka names them under /config (ConfigType).
CONFIG_TOPICS = "topics"
CONFIG_BROKERS = "brokers"


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def config_path(entity_type: str, name: str) -> str:
    return f"/config/{entity_type}/{name}"


# -- decoding ------------------------------------------------------------------------------
def _load(path: str, data: bytes | None) -> dict[str, Any]:
    if not data:
        raise ClusterStateError(f"znode {path} is empty")
    try:
        value = json.loads(data.decode())  # Kafka writes UTF-8; skips json's encoding sniffing
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ClusterStateError(f"znode {path} holds malformed JSON: {e}") from None
    if not isinstance(value, dict):
        raise ClusterStateError(
            f"znode {path} holds {type(value).__name__}, expected a JSON object"
        )
    return value


def _int(path: str, what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ClusterStateError(f"znode {path}: {what} must be an integer, got {json.dumps(value)}")
    return value


def _int_list(path: str, what: str, value: Any) -> tuple[int, ...]:
    if type(value) is list and set(map(type, value)) <= {int}:  # the fast path: 270,000 lists
        return tuple(value)
    if not isinstance(value, list):
        raise ClusterStateError(f"znode {path}: {what} must be a list, got {json.dumps(value)}")
    return tuple(_int(path, what, v) for v in value)


def _partition_map(path: str, what: str, value: Any) -> dict[int, tuple[int, ...]]:
    """A ``{"0":[1,2]}`` map of partition id -> broker ids; missing (None) decodes as empty."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClusterStateError(f"znode {path}: {what} must be an object, got {json.dumps(value)}")
    out = {}
    for key, replicas in value.items():
        try:
            partition = int(key)
        except ValueError:
            raise ClusterStateError(
                f"znode {path}: {what} has a non-numeric partition {key!r}"
            ) from None
        out[partition] = _int_list(path, f"{what}[{key}]", replicas)
    return out


def decode_broker(path: str, data: bytes | None) -> Broker:
    """/brokers/ids/<id>, v2 to v5: host/port, else the first endpoint (SSL-only brokers)."""
    value = _load(path, data)
    broker_id = path.rsplit("/", 1)[-1]
    try:
        bid = int(broker_id)
    except ValueError:
        raise ClusterStateError(
            f"znode {path}: broker id {broker_id!r} is not an integer"
        ) from None
    host, port = value.get("host"), value.get("port", -1)
    endpoints = value.get("endpoints") or []
    if (not host or port == -1) and endpoints:
        if not isinstance(endpoints[0], str) or "://" not in endpoints[0]:
            raise ClusterStateError(f"znode {path}: malformed endpoint {json.dumps(endpoints[0])}")
        host, _, port_text = endpoints[0].split("://", 1)[1].rpartition(":")
        try:
            port = int(port_text)
        except ValueError:
            raise ClusterStateError(f"znode {path}: malformed endpoint {endpoints[0]!r}") from None
    rack = value.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ClusterStateError(f"znode {path}: rack must be a string, got {json.dumps(rack)}")
    return Broker(
        id=bid, rack=rack, host=str(host or ""), port=_int(path, "port", port), alive=True
    )


@dataclass(frozen=True)
class TopicZnode:
    """/brokers/topics/<t>: RS per partition plus Kafka 2.4+'s AR and RR, and 2.8+'s topic id."""

    partitions: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))


def decode_topic(path: str, data: bytes | None) -> TopicZnode:
    value = _load(path, data)
    if "partitions" not in value:
        raise ClusterStateError(f"znode {path}: no 'partitions' field")
    topic_id = value.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise ClusterStateError(f"znode {path}: topic_id must be a string")
    return TopicZnode(
        partitions=_partition_map(path, "partitions", value["partitions"]),
        adding=_partition_map(path, "adding_replicas", value.get("adding_replicas")),
        removing=_partition_map(path, "removing_replicas", value.get("removing_replicas")),
        topic_id=topic_id,
    )


@dataclass(frozen=True)
class PartitionState:
    """/brokers/topics/<t>/partitions/<p>/state (LeaderAndIsr)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


def decode_partition_state(path: str, data: bytes | None) -> PartitionState:
    value = _load(path, data)
    for key in ("leader", "leader_epoch", "isr"):
        if key not in value:
            raise ClusterStateError(f"znode {path}: no '{key}' field")
    return PartitionState(
        leader=_int(path, "leader", value["leader"]),
        leader_epoch=_int(path, "leader_epoch", value["leader_epoch"]),
        isr=_int_list(path, "isr", value["isr"]),
    )


def decode_reassignment(path: str, data: bytes | None) -> dict[TopicPartition, tuple[int, ...]]:
    """/admin/reassign_partitions. Kafka's controller logs and ignores unparseable data; a
    tool must not act on a znode it cannot read, so we report it instead."""
    value = _load(path, data)
    entries = value.get("partitions", [])
    if not isinstance(entries, list):
        raise ClusterStateError(f"znode {path}: 'partitions' must be a list")
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ClusterStateError(f"znode {path}: malformed entry {json.dumps(entry)}")
        tp = TopicPartition(entry["topic"], _int(path, "partition", entry.get("partition")))
        out[tp] = _int_list(path, f"replicas of {tp}", entry.get("replicas"))
    return out


def decode_preferred_election(path: str, data: bytes | None) -> list[TopicPartition]:
    entries = _load(path, data).get("partitions", [])
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("topic"), str) for e in entries
    ):
        raise ClusterStateError(
            f"znode {path}: 'partitions' must be a list of topic/partition objects"
        )
    return [
        TopicPartition(e["topic"], _int(path, "partition", e.get("partition"))) for e in entries
    ]


def decode_config(path: str, data: bytes | None) -> dict[str, str]:
    value = _load(path, data)
    config = value.get("config", {})
    if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
        raise ClusterStateError(f"znode {path}: 'config' must be an object of strings")
    return dict(config)


# -- encoding ------------------------------------------------------------------------------
def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _partition_json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(assignment.items()) if r}


def encode_topic(znode: TopicZnode) -> bytes:
    """TopicZNode.encode: v3 with a topic id (2.8+), else v2; AR/RR maps hold non-empty lists."""
    value: dict[str, Any] = {"version": 3 if znode.topic_id else 2}
    if znode.topic_id:
        value["topic_id"] = znode.topic_id
    value["partitions"] = {str(p): list(r) for p, r in sorted(znode.partitions.items())}
    value["adding_replicas"] = _partition_json(znode.adding)
    value["removing_replicas"] = _partition_json(znode.removing)
    return _dumps(value)


def new_topic_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 without padding, never led by '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def encode_reassignment(targets: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
                for tp, r in targets.items()
            ],
        }
    )


def encode_preferred_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions],
        }
    )


def encode_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(sorted(config.items()))})


def encode_config_change(entity_type: str, name: str) -> bytes:
    """ConfigEntityChangeNotificationSequenceZNode, version 2."""
    return _dumps({"version": 2, "entity_path": f"{entity_type}/{name}"})
