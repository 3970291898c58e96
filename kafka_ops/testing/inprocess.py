"""A ClusterBackend over the emulator's core, in-process, for fast executor tests and benchmarks.

No sockets, no ZooKeeper: every call goes straight to an ``EmulatedCluster`` (the same
replication model the emulator's faces serve), so a test runs a whole execution on a manual
clock in milliseconds. It counts what the executor reads (``partitions_read``: partition
records returned by describe calls) so tests and benchmarks can check that a poll costs
O(moves in flight). The library never imports this module; tests and benchmarks do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafka_ops.backends.base import ConfigResource, OngoingReassignment
from kafka_ops.backends.log_dirs import BrokerLogDirs
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.errors import BackendError, ReassignmentInProgressError
from kafka_ops.model import Broker, ClusterModel, LogDir, Partition, TopicPartition

#: Kafka's names of the error codes the emulator's AlterReplicaLogDirs answers.
_LOG_DIR_ERRORS = {6: "NOT_LEADER_OR_FOLLOWER", 56: "KAFKA_STORAGE_ERROR", 57: "LOG_DIR_NOT_FOUND"}


class InProcessBackend:
    """ClusterBackend over an EmulatedCluster; ``incremental=False`` behaves like ZooKeeper
    mode (one reassignment batch at a time)."""

    def __init__(self, cluster: EmulatedCluster, incremental: bool = True) -> None:
        self.cluster = cluster
        self.supports_incremental_reassignment = incremental
        self.partitions_read = 0
        self.writes = 0  # reassignment submissions, config changes and elections sent

    @classmethod
    def for_model(cls, model: ClusterModel, *, incremental: bool = True,
                  clock: ManualClock | None = None) -> InProcessBackend:
        """A fresh emulated cluster in KRaft mode loaded from ``model``."""
        return cls(EmulatedCluster(model, mode="kraft", clock=clock or ManualClock()), incremental)

    def describe_cluster(self) -> ClusterModel:
        model = self.cluster.to_model()
        self.partitions_read += len(model.partitions)
        return model

    def describe_partitions(self, partitions: Iterable[TopicPartition]) -> ClusterModel:
        c = self.cluster
        with c.lock:
            c.tick()
            brokers = [Broker(b.id, b.rack, alive=b.alive) for b in c.brokers.values()]
            found = []
            for tp in set(partitions):
                p = c.partitions.get(tp)
                if p is None:
                    continue
                found.append(Partition(p.topic, p.partition, tuple(p.replicas), p.leader, tuple(p.isr),
                                       int(p.log_end_bytes)))
        self.partitions_read += len(found)
        return ClusterModel(brokers, found)

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        if not self.supports_incremental_reassignment and any(v is not None for v in targets.values()):
            ongoing = self.cluster.list_reassignments(None)
            if ongoing:
                raise ReassignmentInProgressError("a reassignment batch is still in progress")
        self.writes += 1
        results = self.cluster.alter_reassignments(
            {tp: (list(r) if r is not None else None) for tp, r in targets.items()}
        )
        errors = {tp: e for tp, e in results.items() if e is not None}
        if errors:
            raise BackendError(f"reassignment failed: {errors}")

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        return {
            tp: OngoingReassignment(tp, tuple(r), tuple(a), tuple(rm))
            for tp, (r, a, rm) in self.cluster.list_reassignments(partitions).items()
        }

    def describe_configs(self, resource: ConfigResource) -> dict[str, str]:
        if resource.type == "topic":
            return self.cluster.topic_config(resource.name)
        return self.cluster.broker_config(int(resource.name))

    def alter_configs(self, resource: ConfigResource, set_configs: Mapping[str, str] | None = None,
                      delete_configs: Iterable[str] = ()) -> None:
        self.writes += 1
        ops: list[tuple[str, int, str | None]] = [(k, 0, v) for k, v in (set_configs or {}).items()]
        ops += [(k, 1, None) for k in delete_configs]
        self.cluster.incremental_alter_configs(resource.type, resource.name, ops)

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        self.writes += 1
        results = self.cluster.elect_leaders(0, list(partitions))
        return {tp: (e.name if e is not None else None) for tp, e in results.items()}

    def describe_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, BrokerLogDirs]:
        """DescribeLogDirs of each live broker asked (a dead one answers nothing)."""
        c = self.cluster
        wanted = sorted(c.brokers) if brokers is None else list(brokers)
        out = {}
        for b in wanted:
            if b not in c.brokers or not c.brokers[b].alive:
                continue
            dirs, replicas, sizes, futures = [], {}, {}, {}
            for path, error, capacity, entries in c.describe_log_dirs_full(b):
                dirs.append(LogDir(path, capacity, error == 0))
                for tp, size, future in entries:
                    if future:
                        futures[tp] = path
                    else:
                        replicas[tp], sizes[tp] = path, size
            out[b] = BrokerLogDirs(b, tuple(dirs), replicas, sizes, futures)
        return out

    def alter_replica_log_dirs(self, moves: Mapping[tuple[TopicPartition, int], str]
                               ) -> dict[tuple[TopicPartition, int], str | None]:
        """AlterReplicaLogDirs sent to each replica's broker: Kafka's error name or None."""
        self.writes += 1
        by_broker: dict[int, dict[TopicPartition, str]] = {}
        for (tp, b), path in moves.items():
            by_broker.setdefault(b, {})[tp] = path
        out: dict[tuple[TopicPartition, int], str | None] = {}
        for b, asked in by_broker.items():
            if b not in self.cluster.brokers or not self.cluster.brokers[b].alive:
                raise BackendError(f"alter replica log dirs: broker {b} is not available")
            for tp, code in self.cluster.alter_replica_log_dirs(b, asked).items():
                out[tp, b] = None if code == 0 else _LOG_DIR_ERRORS.get(code, f"error {code}")
        return out

    def create_topic(self, topic: str, assignment: Mapping[int, Sequence[int]],
                     config: Mapping[str, str] | None = None) -> None:
        self.cluster.create_topic(topic, {p: list(r) for p, r in assignment.items()}, dict(config or {}))

    def create_partitions(self, topic: str, new_assignment: Mapping[int, Sequence[int]]) -> None:
        self.cluster.create_partitions(topic, {p: list(r) for p, r in new_assignment.items()})

    def close(self) -> None:
        pass
