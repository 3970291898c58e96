"""Cluster snapshot files: the cluster model as JSON, so state can be saved, shared and replayed.

Format (version 1)::

    {"version": 1,
     "brokers": [{"id": 0, "rack": "r1", "host": "h", "port": 9092, "alive": true,
                  "capacity": {"disk_bytes": 0, "network_in_bytes_per_sec": 0,
                               "network_out_bytes_per_sec": 0}}],
     "topics": [{"name": "t", "config": {"retention.ms": "..."},
                 "partitions": [{"partition": 0, "replicas": [0, 1], "leader": 0, "isr": [0, 1],
                                 "size_bytes": 0, "bytes_in_per_sec": 0, "bytes_out_per_sec": 0}]}]}

Only "id", topic "name", "partition" and "replicas" are required; leader defaults to the
preferred replica and ISR to all replicas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_ops import inputs
from kafka_ops.errors import ValidationError
from kafka_ops.model import NO_LEADER, Broker, BrokerCapacity, ClusterModel, LogDir, Partition

SNAPSHOT_VERSION = 1


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer, got {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a list of broker ids, got {value!r}")
    return tuple(_int(v, what) for v in value)


def broker_from_dict(d: Mapping[str, Any]) -> Broker:
    if "id" not in d:
        raise ValidationError(f"broker entry without 'id': {dict(d)!r}")
    cap = d.get("capacity") or {}
    return Broker(
        id=_int(d["id"], "broker id"),
        rack=d.get("rack") or None,
        host=str(d.get("host", "localhost")),
        port=_int(d.get("port", 9092), "broker port"),
        alive=bool(d.get("alive", True)),
        capacity=BrokerCapacity(
            disk_bytes=int(cap.get("disk_bytes", 0)),
            network_in_bytes_per_sec=float(cap.get("network_in_bytes_per_sec", 0)),
            network_out_bytes_per_sec=float(cap.get("network_out_bytes_per_sec", 0)),
        ),
        log_dirs=tuple(_log_dir(x, d["id"]) for x in d.get("log_dirs") or ()),
    )


def _log_dir(d: Any, broker: Any) -> LogDir:
    if isinstance(d, str):
        return LogDir(d)
    if not isinstance(d, Mapping) or not isinstance(d.get("path"), str) or not d["path"]:
        raise ValidationError(f"broker {broker} log_dirs entry needs a 'path' string: {d!r}"[:200])
    return LogDir(d["path"], _int(d.get("capacity_bytes", 0), f"broker {broker} log dir capacity"),
                  bool(d.get("online", True)))


def _partition_log_dirs(value: Any, replicas: tuple[int, ...], where: str) -> tuple[str | None, ...]:
    if value is None:
        return ()
    if (not isinstance(value, list) or len(value) != len(replicas)
            or not all(v is None or isinstance(v, str) for v in value)):
        raise ValidationError(f"{where} log_dirs must be a list of paths parallel to replicas")
    return tuple(value)


def partition_from_dict(topic: str, d: Mapping[str, Any]) -> Partition:
    where = f"topic {topic!r} partition {d.get('partition')!r}"
    if "partition" not in d or "replicas" not in d:
        raise ValidationError(f"{where}: 'partition' and 'replicas' are required")
    replicas = _int_list(d["replicas"], f"{where} replicas")
    leader = d.get("leader", replicas[0] if replicas else NO_LEADER)
    return Partition(
        topic=topic,
        partition=_int(d["partition"], f"topic {topic!r} partition"),
        replicas=replicas,
        leader=_int(leader, f"{where} leader"),
        isr=_int_list(d["isr"], f"{where} isr") if "isr" in d else replicas,
        size_bytes=int(d.get("size_bytes", 0)),
        bytes_in_per_sec=float(d.get("bytes_in_per_sec", 0.0)),
        bytes_out_per_sec=float(d.get("bytes_out_per_sec", 0.0)),
        adding_replicas=_int_list(d.get("adding_replicas", []), f"{where} adding_replicas"),
        removing_replicas=_int_list(d.get("removing_replicas", []), f"{where} removing_replicas"),
        log_dirs=_partition_log_dirs(d.get("log_dirs"), replicas, where),
    )


def model_from_dict(data: Mapping[str, Any]) -> ClusterModel:
    if not isinstance(data, Mapping):
        raise ValidationError("cluster snapshot must be a JSON object")
    version = data.get("version", SNAPSHOT_VERSION)
    if version != SNAPSHOT_VERSION:
        raise ValidationError(f"unsupported cluster snapshot version {version!r}")
    brokers = [broker_from_dict(b) for b in data.get("brokers", [])]
    partitions: list[Partition] = []
    configs = {}
    for t in data.get("topics", []):
        name = t.get("name")
        if not isinstance(name, str) or not name:
            raise ValidationError(f"topic entry without a name: {t!r}"[:200])
        if t.get("config"):
            configs[name] = {str(k): str(v) for k, v in t["config"].items()}
        partitions.extend(partition_from_dict(name, p) for p in t.get("partitions", []))
    return ClusterModel(brokers, partitions, configs)


def model_to_dict(model: ClusterModel) -> dict[str, Any]:
    brokers = [
        {
            "id": b.id,
            **({"rack": b.rack} if b.rack is not None else {}),
            "host": b.host,
            "port": b.port,
            "alive": b.alive,
            "capacity": {
                "disk_bytes": b.capacity.disk_bytes,
                "network_in_bytes_per_sec": b.capacity.network_in_bytes_per_sec,
                "network_out_bytes_per_sec": b.capacity.network_out_bytes_per_sec,
            },
            **({"log_dirs": [{"path": d.path, "capacity_bytes": d.capacity_bytes,
                              "online": d.online} for d in b.log_dirs]} if b.log_dirs else {}),
        }
        for b in model.brokers.values()
    ]
    topics = []
    for name, parts in model.topics.items():
        entry: dict[str, Any] = {"name": name}
        if model.topic_configs.get(name):
            entry["config"] = model.topic_configs[name]
        entry["partitions"] = [
            {
                "partition": p.partition,
                "replicas": list(p.replicas),
                "leader": p.leader,
                "isr": list(p.isr),
                "size_bytes": p.size_bytes,
                "bytes_in_per_sec": p.bytes_in_per_sec,
                "bytes_out_per_sec": p.bytes_out_per_sec,
                **({"log_dirs": list(p.log_dirs)} if p.log_dirs else {}),
                **(
                    {"adding_replicas": list(p.adding_replicas),
                     "removing_replicas": list(p.removing_replicas)}
                    if p.reassignment_in_progress else {}
                ),
            }
            for p in parts
        ]
        topics.append(entry)
    return {"version": SNAPSHOT_VERSION, "brokers": brokers, "topics": topics}


def load_snapshot(path: str | Path) -> ClusterModel:
    """Read a snapshot file; a clear ValidationError on anything malformed."""
    data = inputs.read_json(path, "cluster snapshot")
    try:
        return model_from_dict(data)
    except (TypeError, ValueError, AttributeError, OverflowError) as e:
        if isinstance(e, ValidationError):
            raise
        # A field of the wrong JSON type deep inside (a string capacity, a list for a config):
        # named with the file rather than left to a traceback.
        raise ValidationError(f"cluster snapshot {path}: a field has the wrong type ({e})") from None


def save_snapshot(model: ClusterModel, path: str | Path) -> None:
    Path(path).write_text(json.dumps(model_to_dict(model), separators=(",", ":")))
