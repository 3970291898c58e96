"""The cluster model: brokers and partitions as Kafka describes them, read-only.

Every other part of kafka_ops (assignment, pools, planner, executor, backends) speaks in these
types. The model is immutable so that a plan can be computed against one state and compared to a
later one (drift checks) without defensive copies; indexes by broker, topic and rack are built
lazily, once, because a 270,000-replica cluster is queried far more often than it is built.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

from kafka_ops.errors import ValidationError


class TopicPartition(NamedTuple):
    """A partition's identity; orders like Kafka's tool output (topic, then partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerCapacity:
    """What a broker can hold and carry. Zero means unknown (no limit enforced)."""

    disk_bytes: int = 0
    network_in_bytes_per_sec: float = 0.0
    network_out_bytes_per_sec: float = 0.0


@dataclass(frozen=True, slots=True)
class LogDir:
    """One of a broker's log directories (an entry of its ``log.dirs``; JBOD: one per disk).

    capacity_bytes 0 means unknown; offline is Kafka's log-dir failure (KIP-112): the broker
    stays up, the replicas in this directory are offline on it.
    """

    path: str
    capacity_bytes: int = 0
    online: bool = True


@dataclass(frozen=True, slots=True)
class Broker:
    """A Kafka broker as registered in the cluster metadata; log_dirs empty when unknown."""

    id: int
    rack: str | None = None
    host: str = "localhost"
    port: int = 9092
    alive: bool = True
    capacity: BrokerCapacity = field(default_factory=BrokerCapacity)
    log_dirs: tuple[LogDir, ...] = ()

    def log_dir(self, path: str) -> LogDir | None:
        return next((d for d in self.log_dirs if d.path == path), None)


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition: replicas in order (replicas[0] is the preferred leader), leader and ISR.

    size_bytes is the leader's log size; bytes_in/out are per-second rates on the leader.
    log_dirs, when known, is parallel to replicas: the directory each replica lives in on its
    broker (None where unknown); empty when no directory was read (one shared tuple keeps the
    270,000-replica model cheap). adding_replicas and removing_replicas are Kafka's AR and RR while a reassignment is in
    flight (KIP-455): replicas is then the union of the original and the target set, so anything
    that plans from this partition must plan from target_replicas, never from replicas.
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    size_bytes: int = 0
    bytes_in_per_sec: float = 0.0
    bytes_out_per_sec: float = 0.0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    log_dirs: tuple[str | None, ...] = ()

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def replication_factor(self) -> int:
        return len(self.replicas)

    @property
    def is_offline(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def reassignment_in_progress(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def log_dir_of(self, broker_id: int) -> str | None:
        """The directory of the replica on broker_id, None when unknown or not a replica."""
        if not self.log_dirs or broker_id not in self.replicas:
            return None
        return self.log_dirs[self.replicas.index(broker_id)]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas that remain once an in-flight reassignment completes (Kafka's TRS)."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


class ClusterModel:
    """An immutable snapshot of a cluster: brokers, partitions and optional topic configs.

    Partitions are kept in (topic, partition) order. Queries by broker, topic and rack use
    indexes built on first use.
    """

    def __init__(
        self,
        brokers: Iterable[Broker],
        partitions: Iterable[Partition],
        topic_configs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.brokers: dict[int, Broker] = {b.id: b for b in sorted(brokers, key=lambda b: b.id)}
        ordered = sorted(partitions, key=lambda p: (p.topic, p.partition))
        self.partitions: dict[TopicPartition, Partition] = {p.tp: p for p in ordered}
        if len(self.partitions) != len(ordered):
            raise ValidationError("cluster state lists the same partition twice")
        self.topic_configs: dict[str, dict[str, str]] = {
            t: dict(c) for t, c in (topic_configs or {}).items()
        }

    # -- queries -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"ClusterModel(brokers={len(self.brokers)}, partitions={len(self.partitions)}, "
            f"replicas={self.replica_count})"
        )

    def __iter__(self) -> Iterator[Partition]:
        return iter(self.partitions.values())

    def partition(self, topic: str, partition: int) -> Partition:
        try:
            return self.partitions[TopicPartition(topic, partition)]
        except KeyError:
            raise ValidationError(f"unknown partition {topic}-{partition}") from None

    def broker(self, broker_id: int) -> Broker:
        try:
            return self.brokers[broker_id]
        except KeyError:
            raise ValidationError(f"unknown broker {broker_id}") from None

    @property
    def broker_ids(self) -> list[int]:
        return list(self.brokers)

    @property
    def alive_broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers.values() if b.alive]

    @cached_property
    def replica_count(self) -> int:
        return sum(len(p.replicas) for p in self.partitions.values())

    @cached_property
    def topics(self) -> dict[str, list[Partition]]:
        """Partitions of each topic, in partition order."""
        by_topic: dict[str, list[Partition]] = defaultdict(list)
        for p in self.partitions.values():
            by_topic[p.topic].append(p)
        return dict(by_topic)

    def topic(self, name: str) -> list[Partition]:
        try:
            return self.topics[name]
        except KeyError:
            raise ValidationError(f"unknown topic {name!r}") from None

    @cached_property
    def _by_broker(self) -> dict[int, list[Partition]]:
        by_broker: dict[int, list[Partition]] = {b: [] for b in self.brokers}
        for p in self.partitions.values():
            for r in p.replicas:
                by_broker.setdefault(r, []).append(p)
        return by_broker

    def partitions_on(self, broker_id: int) -> list[Partition]:
        """Partitions with a replica on the broker (including brokers not registered)."""
        return self._by_broker.get(broker_id, [])

    def leaders_on(self, broker_id: int) -> list[Partition]:
        return [p for p in self.partitions_on(broker_id) if p.leader == broker_id]

    @cached_property
    def racks(self) -> dict[str | None, list[int]]:
        """Broker ids per rack (None for brokers without a rack)."""
        racks: dict[str | None, list[int]] = defaultdict(list)
        for b in self.brokers.values():
            racks[b.rack].append(b.id)
        return dict(racks)

    def brokers_in_rack(self, rack: str | None) -> list[int]:
        return self.racks.get(rack, [])

    def rack_of(self, broker_id: int) -> str | None:
        broker = self.brokers.get(broker_id)
        return broker.rack if broker else None

    @cached_property
    def assignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {tp: p.replicas for tp, p in self.partitions.items()}

    # -- derived models ------------------------------------------------------------------
    def with_assignment(
        self, replicas: Mapping[TopicPartition, Iterable[int]], move_leaders: bool = True
    ) -> ClusterModel:
        """The model after the given replica lists are in place (as after a reassignment).

        The leader becomes the new preferred leader when move_leaders (what a preferred leader
        election does), else it stays if still a replica; ISR becomes the full replica list.
        """
        parts = dict(self.partitions)
        for tp, new in replicas.items():
            old = parts.get(tp)
            if old is None:
                raise ValidationError(f"unknown partition {tp}")
            new_replicas = tuple(new)
            if move_leaders or old.leader not in new_replicas:
                leader = new_replicas[0]
            else:
                leader = old.leader
            dirs = (tuple(old.log_dir_of(b) for b in new_replicas) if old.log_dirs else ())
            parts[tp] = replace(old, replicas=new_replicas, leader=leader, isr=new_replicas,
                                log_dirs=dirs)
        return ClusterModel(self.brokers.values(), parts.values(), self.topic_configs)

    def with_log_dirs(
        self, moves: Mapping[TopicPartition, Mapping[int, str]]
    ) -> ClusterModel:
        """The model after replicas moved between directories of their broker."""
        parts = dict(self.partitions)
        for tp, by_broker in moves.items():
            old = parts[tp]
            dirs = list(old.log_dirs or (None,) * len(old.replicas))
            for broker, path in by_broker.items():
                dirs[old.replicas.index(broker)] = path
            parts[tp] = replace(old, log_dirs=tuple(dirs))
        return ClusterModel(self.brokers.values(), parts.values(), self.topic_configs)

    def with_brokers(self, brokers: Iterable[Broker]) -> ClusterModel:
        return ClusterModel(brokers, self.partitions.values(), self.topic_configs)
