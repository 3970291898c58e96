"""The KRaft controller: ReplicationControlManager's reassignments as single-record changes.

A reassignment writes replicas = target + removing with adding/removing in one record;
completion writes the target with the removed replicas dropped from the ISR; a cancel
(PartitionReassignmentRevert) goes back to the replicas before the reassignment, refusing when
that needs an unclean election.
"""

from __future__ import annotations

from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.replication import ReplicationModel
from kafka_ops.emulator.state import Reassignment
from kafka_ops.model import TopicPartition


class KraftController(ReplicationModel):
    """Reassignments in mode "kraft"."""

    def _reassign_kraft(self, tp: TopicPartition, target: list[int] | None) -> None:
        p = self.partitions.get(tp)
        if p is None:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION",
                             f"Unable to find partition {tp.topic}:{tp.partition}.")
        in_progress = bool(p.adding or p.removing)
        # PartitionReassignmentRevert: back to the replicas before any ongoing reassignment.
        origin = [r for r in p.replicas if r not in p.adding]
        isr = [r for r in p.isr if r not in p.adding]
        if target is None:
            if not in_progress:
                raise KafkaError("NO_REASSIGNMENT_IN_PROGRESS")
            if not isr:
                if not self.unclean_leader_election:
                    raise KafkaError(
                        "INVALID_REPLICA_ASSIGNMENT",
                        f"Unable to revert partition assignment for {tp.topic}:{tp.partition} "
                        "because it would require an unclean leader election.")
                isr = origin[:1]
            ra = self._reassignments.pop(tp, Reassignment(origin, "api"))
            ra.target, ra.cancel = origin, True
            dropped = [r for r in p.replicas if r not in origin]
            leader = p.leader if p.leader in isr else self._first_eligible_in(origin, isr)
            self._change(p, replicas=origin, adding=[], removing=[], isr=isr, leader=leader)
            for r in dropped:
                p.replica_bytes.pop(r, None)
            self._finish(tp, ra)
            return
        self._check_assignment(target)
        adding = sorted(set(target) - set(origin))
        removing = sorted(set(origin) - set(target))
        dropped = [r for r in p.replicas if r not in target and r not in removing]
        self._reassignments[tp] = Reassignment(target, "api")
        leader = p.leader if p.leader in isr else self._first_eligible_in(target + removing, isr)
        self._change(p, replicas=target + removing, adding=adding, removing=removing, isr=isr,
                     leader=leader)
        for r in dropped:
            p.replica_bytes.pop(r, None)
        self._emit("reassignment_started", tp, target=list(target), source="api",
                   replicas=list(p.replicas), adding=list(adding), removing=list(removing))
        for r in adding:
            if r not in p.replica_bytes:
                p.replica_bytes[r] = 0.0
                self._emit("replica_fetch_started", tp, broker=r)
        self._refresh_lagging(p)
        self._maybe_complete(tp)

    def _complete_kraft(self, tp: TopicPartition) -> None:
        p = self.partitions[tp]
        ra = self._reassignments.pop(tp)
        isr = [r for r in p.isr if r not in p.removing]
        removed = list(p.removing)
        leader = p.leader if p.leader in isr else self._first_eligible_in(ra.target, isr)
        self._change(p, replicas=ra.target, adding=[], removing=[], isr=isr, leader=leader)
        for r in removed:
            p.replica_bytes.pop(r, None)
        self._finish(tp, ra)
