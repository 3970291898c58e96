"""The one cluster interface kafka_ops talks to; ZooKeeper and Admin API backends implement it.

Like httpx's transport seam, everything above this line (planner, executor, CLI, DAGs) is
written against ``ClusterBackend`` only, so the same workflow runs on ZooKeeper-mode Kafka
(kazoo, znodes) and on KRaft / modern Kafka (the Admin API), and never knows whether the other
side is real Kafka or the project's emulator.

Semantics follow Kafka's ``ReassignPartitionsCommand`` and the Admin API (KIP-455):
a reassignment is submitted per partition with its target replicas; ``None`` cancels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from kafka_ops.model import ClusterModel, TopicPartition

ConfigResourceType = Literal["topic", "broker"]


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A topic or broker whose dynamic configs are read or changed (Kafka's ConfigResource)."""

    type: ConfigResourceType
    name: str  # topic name, or broker id as a string

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls("topic", name)

    @classmethod
    def broker(cls, broker_id: int) -> ConfigResource:
        return cls("broker", str(broker_id))


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition being reassigned, as ListPartitionReassignments reports it.

    replicas is the full current replica set (target plus those still to be removed);
    adding and removing are Kafka's AR and RR.
    """

    tp: TopicPartition
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """The target replica set (TRS): the replicas that will remain."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment (ORS), in current order."""
        return tuple(r for r in self.replicas if r not in self.adding)


@runtime_checkable
class ClusterBackend(Protocol):
    """Reads a cluster's state and changes it the way Kafka's own tools do.

    Errors: bad requests raise kafka_ops.errors.ValidationError (unknown broker, duplicate
    replicas, empty list...) before anything is sent; a reassignment refused because another
    one runs raises ReassignmentInProgressError; failures reported by the cluster raise
    BackendError naming the partitions and Kafka's error. Secrets never appear in messages.
    """

    #: True when new reassignments can be submitted while others are in flight (the Admin
    #: API). False for ZooKeeper mode, where the controller only reads
    #: /admin/reassign_partitions when the znode is created, so the next batch must wait
    #: until the znode is gone.
    supports_incremental_reassignment: bool

    def describe_cluster(self) -> ClusterModel:
        """Brokers (with liveness and racks) and every partition's replicas, leader, ISR.

        Partition sizes are filled where the backend can read them (log dirs), else 0.
        """
        ...

    def describe_partitions(self, partitions: Iterable[TopicPartition]) -> ClusterModel:
        """Brokers (with liveness) and only the given partitions: what a poll of moves in
        flight needs, at a cost proportional to their number. Unknown partitions are left out.
        Sizes are filled where the backend can read them, as in describe_cluster."""
        ...

    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic with an explicit replica assignment (partition id -> replicas)."""
        ...

    def create_partitions(self, topic: str, new_assignment: Mapping[int, Sequence[int]]) -> None:
        """Add partitions; keys are the new partition ids, continuing the existing count."""
        ...

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        """Submit target replica lists (None cancels that partition's reassignment)."""
        ...

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        """Partitions whose reassignment is still in progress (all when partitions is None)."""
        ...

    def describe_configs(self, resource: ConfigResource) -> dict[str, str]:
        """Dynamic config overrides of a topic or broker (not defaults)."""
        ...

    def alter_configs(
        self,
        resource: ConfigResource,
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
    ) -> None:
        """Incrementally SET and DELETE dynamic configs (IncrementalAlterConfigs semantics)."""
        ...

    def elect_preferred_leaders(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """Preferred leader election; per partition None on success or when not needed,
        else Kafka's error name (e.g. PREFERRED_LEADER_NOT_AVAILABLE)."""
        ...

    def close(self) -> None: ...
