"""Kafka's znodes in ZooKeeper mode: paths, and JSON encoded and decoded like Kafka's ZkData.

Written from the schemas in Kafka's ``core/src/main/scala/kafka/zk/ZkData.scala`` (up to 3.9).
The one place for these paths and formats: the ZooKeeper backend reads and writes with them, and
the emulator's ZooKeeper face (the broker and controller side) writes with the encoders at the
end of this module (the emulator writes with the encoders, the backend reads with the strict
decoders, so every emulator-backed test exercises both). Decoding is strict where Kafka is
strict (types of ids and replica lists) and lenient where Kafka is lenient (missing
``adding_replicas``/``removing_replicas`` maps decode as empty, unknown fields are ignored). Any
znode we cannot understand raises ClusterStateError naming the znode: a backend must never crash
on, or silently misread, a cluster's metadata.
"""

from __future__ import annotations

import base64
import json
import time
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


# -- what Kafka's brokers and controller write, and read back leniently ----------------------
# The emulator plays the broker side of the znodes above with these (kafka_ops.emulator.zk_*):
# the JSON Kafka's brokers and controller write (dicts; ``encode`` makes the bytes), and the
# controller's lenient reading of the admin znodes (ValueError, logged and skipped there),
# which differs on purpose from the strict ``decode_*`` a tool needs.
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_CHANGES = "/config/changes"
LOG_DIR_EVENTS = "/log_dir_event_notification"
#: A broker's sequential notice that a log directory failed (LogDirEventNotificationSequenceZNode).
LOG_DIR_EVENT_PREFIX = LOG_DIR_EVENTS + "/log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1
CLUSTER_ID = "/cluster/id"
# ZkData.PersistentZkPaths, plus the parents Kafka creates on the way.
PERSISTENT_PATHS = (
    "/consumers", "/brokers", BROKER_IDS, TOPICS, "/brokers/seqid", "/config", CONFIG_CHANGES,
    "/admin", "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block",
    "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
    "/config/brokers", "/config/ips", "/cluster",
)
#: A partition's assignment as the topic znode holds it: replicas, adding, removing.
Assignment = tuple[list[int], list[int], list[int]]


def encode(data: Any) -> bytes:
    return _dumps(data)


def log_dir_event_json(broker_id: int) -> dict[str, int]:
    """What a broker writes when one of its log directories fails (LogDirEventNotificationZNode)."""
    return {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT}


def topic_id_string(topic_id: str) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).rstrip(b"=").decode()


def topic_id_from_string(text: str) -> str:
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))))


def broker_json(broker_id: int, host: str, port: int, rack: str | None,
                timestamp_ms: int, jmx_port: int = -1) -> dict:
    """BrokerInfo v5 (IBP >= 2.7): one PLAINTEXT listener; rack only when set."""
    data: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://{host}:{port}"],
        "jmx_port": jmx_port,
        "port": port,
        "host": host,
        "version": 5,
        "timestamp": str(timestamp_ms),
    }
    if rack is not None:
        data["rack"] = rack
    return data


def topic_json(topic_id: str | None, partitions: dict[int, Assignment]) -> dict:
    """TopicZNode (version 3; ``topic_id`` when known): adding/removing maps are always
    present and hold only non-empty lists, as ``TopicZNode.encode`` writes them."""
    data: dict[str, Any] = {
        "version": 3,
        "partitions": {str(p): a[0] for p, a in sorted(partitions.items())},
        "adding_replicas": {str(p): a[1] for p, a in sorted(partitions.items()) if a[1]},
        "removing_replicas": {str(p): a[2] for p, a in sorted(partitions.items()) if a[2]},
    }
    if topic_id is not None:
        data["topic_id"] = topic_id_string(topic_id)
    return data


def state_json(leader: int, leader_epoch: int, isr: list[int], controller_epoch: int) -> dict:
    """TopicPartitionStateZNode v1 (leader_recovery_state omitted: always RECOVERED here)."""
    return {"controller_epoch": controller_epoch, "leader": leader, "version": 1,
            "leader_epoch": leader_epoch, "isr": list(isr)}


def controller_json(broker_id: int, timestamp_ms: int) -> dict:
    return {"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": -1}


def config_json(config: dict[str, str]) -> dict:
    return {"version": 1, "config": dict(config)}


def _lenient_int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{what} must be a list of integers, got {value!r}")
    return list(value)


def parse_topic(raw: bytes) -> tuple[str | None, dict[int, Assignment]]:
    """A topic znode (v1-v3): topic id (None if absent) and per-partition RS/AR/RR."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), dict):
        raise ValueError("no partitions map")
    adding = data.get("adding_replicas") or {}
    removing = data.get("removing_replicas") or {}
    partitions = {
        int(p): (_lenient_int_list(reps, f"partition {p}"),
                 _lenient_int_list(adding.get(p, []), f"adding {p}"),
                 _lenient_int_list(removing.get(p, []), f"removing {p}"))
        for p, reps in data["partitions"].items()
    }
    topic_id = data.get("topic_id")
    return (topic_id_from_string(topic_id) if topic_id else None), partitions


def parse_reassignment(raw: bytes) -> dict[TopicPartition, list[int]]:
    """/admin/reassign_partitions with Jackson's strictness; ValueError when unparseable."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("partitions", []), list):
        raise ValueError("expected {\"version\":1,\"partitions\":[...]}")
    out = {}
    for entry in data.get("partitions", []):
        if not isinstance(entry, dict) or set(entry) - {"topic", "partition", "replicas"}:
            raise ValueError(f"bad entry {entry!r}")
        topic, partition = entry.get("topic"), entry.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(
                partition, bool):
            raise ValueError(f"bad entry {entry!r}")
        out[TopicPartition(topic, partition)] = _lenient_int_list(entry.get("replicas"), "replicas")
    return out


def reassignment_json(entries: dict[TopicPartition, list[int]]) -> dict:
    return {"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": reps}
        for tp, reps in entries.items()
    ]}


def now_ms() -> int:
    """The wall-clock timestamp Kafka writes into broker and controller znodes."""
    return int(time.time() * 1000)
