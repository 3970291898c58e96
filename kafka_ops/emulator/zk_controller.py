"""The ZooKeeper-mode controller: KafkaController.onPartitionReassignment step by step.

U1 write RS/AR/RR, U3 stop superseded replicas, A1 leader-epoch bump, A2 start fetching; on
completion B3 leader move or epoch bump, B4 one ISR shrink per removed replica, B5 delete,
B6 RS = TRS. Each step is its own ``partition_changed`` event, so the ZooKeeper face mirrors
them in Kafka's order. ``load_assignments`` is what a new controller reads at failover.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_ops.backends.zk_paths import Assignment
from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.replication import ReplicationModel
from kafka_ops.emulator.state import Reassignment, distinct
from kafka_ops.kafka_rules import duplicate_replicas
from kafka_ops.model import NO_LEADER, TopicPartition


def _scala_seq(xs: Iterable[int]) -> str:
    return f"ArrayBuffer({', '.join(map(str, xs))})"


def _scala_set(xs: Iterable[int]) -> str:
    items = sorted(xs)
    return f"{'Set' if len(items) <= 4 else 'HashSet'}({', '.join(map(str, items))})"


class ZkController(ReplicationModel):
    """Reassignments in mode "zk" (and the failover read of topic znodes)."""

    def load_assignments(self, changed: dict[TopicPartition, tuple[Assignment, Assignment]]
                         ) -> None:
        """What a new ZooKeeper-mode controller reads from /brokers/topics at failover: per
        partition whose znode changed, (what the previous controller last wrote, the znode now).

        Kafka 2.4+ resumes a reassignment from adding/removing (TRS = RS - RR); a topic znode
        rewritten to plain replicas (no adding/removing) ends any reassignment there, which is
        how operators cancelled ZooKeeper-mode reassignments. Replicas no longer listed stop.

        A partition that is no longer what was last written changed in the old controller
        after that write (a completion whose write is still on its way). Kafka's controller
        handles that change and the failover on one event queue, so the change comes first
        and its write lands over the operator's edit: the partition keeps it. Loading the edit
        on top would bring back the replica the completion deleted, empty: under-replicated.
        """
        with self.lock:
            self.tick()
            for tp, (written, read) in sorted(changed.items()):
                p = self.partitions.get(tp)
                if p is not None and (p.replicas, p.adding, p.removing) == written:
                    self._load_assignment(tp, *read)

    def _load_assignment(self, tp: TopicPartition, replicas: list[int], adding: list[int],
                         removing: list[int]) -> None:
        p = self.partitions[tp]
        if not replicas or (replicas, adding, removing) == (p.replicas, p.adding, p.removing):
            return
        if adding or removing:
            target = [r for r in replicas if r not in removing]
            self._reassignments[tp] = Reassignment(target, "zk")
        else:
            self._reassignments.pop(tp, None)
        gone = [r for r in p.replicas if r not in replicas]
        self._change(p, replicas=replicas, adding=adding, removing=removing)
        for r in gone:
            self._stop_replica(p, r)
        for r in replicas:
            p.replica_bytes.setdefault(r, 0.0)
        if p.leader == NO_LEADER or p.leader not in replicas:
            leader = self._first_eligible(p, replicas)
            self._change(p, leader=leader, isr=[r for r in p.isr if r in replicas]
                         if leader != NO_LEADER else p.isr)
        self._refresh_lagging(p)
        self._maybe_complete(tp)

    def _validate_zk(self, tp: TopicPartition, target: list[int]) -> None:
        """KafkaController.validateReplicas (API path only)."""
        if not target:
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "Empty replica list specified in partition reassignment.")
        if duplicate_replicas(target):
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "Duplicate replica ids in partition reassignment replica list: "
                             f"{_scala_seq(target)}")
        if any(r < 0 for r in target):
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             f"Invalid broker id in replica list: {_scala_seq(target)}")
        p = self.partitions.get(tp)
        origin = [r for r in p.replicas if r not in p.adding] if p else []
        adding = [r for r in distinct(target + origin) if r not in origin]
        live = [b for b, broker in self.brokers.items() if broker.alive]
        if not set(adding) <= set(live):
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "Replica assignment has brokers that are not alive. Replica list: "
                             f"{_scala_seq(adding)}, live broker list: {_scala_set(live)}")

    def _reassign_zk(self, tp: TopicPartition, target: list[int] | None, source: str) -> None:
        if target is not None and source == "api":
            self._validate_zk(tp, target)
        p = self.partitions.get(tp)
        cancel = target is None
        if cancel and (p is None or not (p.adding or p.removing)):
            raise KafkaError("NO_REASSIGNMENT_IN_PROGRESS")
        if p is None:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist.")
        origin = [r for r in p.replicas if r not in p.adding]
        target = origin if target is None else target
        new_rs = distinct(target + origin)
        adding = [r for r in new_rs if r not in origin]
        removing = [r for r in new_rs if r not in target]
        superseded = [r for r in p.replicas if r not in new_rs]
        self._reassignments[tp] = Reassignment(target, source, cancel)
        self._change(p, replicas=new_rs, adding=adding, removing=removing)  # U1
        if not cancel:
            self._emit("reassignment_started", tp, target=list(target), source=source,
                       replicas=list(new_rs), adding=list(adding), removing=list(removing))
        for r in superseded:  # U3
            self._stop_replica(p, r)
        if set(target) <= set(p.isr):
            self._complete_zk(tp)
            return
        self._change(p, bump_leader_epoch=True)  # A1
        for r in adding:  # A2
            if r not in p.replica_bytes:
                p.replica_bytes[r] = 0.0
                self._emit("replica_fetch_started", tp, broker=r)
        self._refresh_lagging(p)

    def _complete_zk(self, tp: TopicPartition) -> None:
        p = self.partitions[tp]
        ra = self._reassignments.pop(tp)
        target = ra.target
        removing = [r for r in p.replicas if r not in target]
        if p.leader not in target or not self._online(p.leader, p.tp):  # B3
            self._change(p, leader=self._first_eligible(p, target), bump_leader_epoch=True)
        else:
            self._change(p, bump_leader_epoch=True)
        for r in removing:  # B4 (one ISR write per replica), B5
            if r in p.isr:
                self._change(p, isr=[x for x in p.isr if x != r], bump_leader_epoch=True)
        for r in removing:
            p.replica_bytes.pop(r, None)
        self._change(p, replicas=target, adding=[], removing=[])  # B6
        self._finish(tp, ra)
