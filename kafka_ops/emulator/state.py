"""The emulated cluster's records: brokers, partitions, events and ongoing reassignments."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_ops.model import TopicPartition

LOG_DIR = "/var/kafka-logs"  # a broker's one log directory when the snapshot names none


@dataclass
class EmulatedBroker:
    id: int
    rack: str | None
    host: str
    port: int  # the wire-face listener; 0 until bound
    alive: bool
    disk_capacity_bytes: int
    network_in_bytes_per_sec: float  # 0 = unlimited
    network_out_bytes_per_sec: float
    slow_factor: float = 1.0  # fault: replication bandwidth multiplied by this
    disk_full: bool = False  # fault: the log directory is offline
    epoch: int = 0  # broker epoch; bumps on restart (the ZooKeeper face sets its czxid)
    configured_port: int = 9092  # the snapshot's port, advertised until the wire face binds

    @property
    def advertised_port(self) -> int:
        return self.port or self.configured_port


@dataclass
class EmulatedPartition:
    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    log_end_bytes: float
    replica_bytes: dict[int, float]
    bytes_in_per_sec: float
    bytes_out_per_sec: float
    synced_at: float = 0.0  # time log_end_bytes was last brought up to date

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class Event:
    time: float
    kind: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    data: dict = field(default_factory=dict)


@dataclass
class Reassignment:
    target: list[int]
    source: str  # "api" or "zk": the ZooKeeper face keeps /admin/reassign_partitions in step
    cancel: bool = False


def distinct(xs: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(xs))


def partition_states(partitions: list[EmulatedPartition]) -> dict[int, dict]:
    return {
        p.partition: {"replicas": list(p.replicas), "leader": p.leader,
                      "leader_epoch": p.leader_epoch, "isr": list(p.isr)}
        for p in partitions
    }
