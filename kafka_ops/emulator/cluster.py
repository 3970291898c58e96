"""The emulated Kafka cluster: one model of brokers, partitions, replication and controller.

No Kafka broker can run on our machines, so this model is the test double for every backend,
the executor and the demo. It is shared by two faces (ZooKeeper-mode znodes and the Kafka wire
protocol); neither face holds state of its own beyond what it needs to mirror this model.

Fidelity choices (each follows a named Kafka class; see kafka-reassignment-protocol.md):

* Reassignments in mode "zk" run ``KafkaController.onPartitionReassignment`` step by step
  (U1 write RS/AR/RR, U3 stop superseded replicas, A1 leader-epoch bump, A2 start fetching; on
  completion B3 leader move or epoch bump, B4 one ISR shrink per removed replica, B5 delete,
  B6 RS = TRS); in mode "kraft" ``ReplicationControlManager``'s single-record changes.
  Each step is its own ``partition_changed`` event, so a face mirrors them in Kafka's order.
* ``partition_epoch`` is the state znode's version in mode "zk": it moves only when leader,
  ISR or leader epoch are written; in mode "kraft" every partition change bumps it.
* When the last ISR member dies the ISR keeps it and the leader becomes -1 (Kafka's
  ``removeReplicasFromIsr``), so it can lead again when it comes back; unclean election is off
  unless enabled.
* A full disk takes the broker's log directory offline, as Kafka does on a log-dir failure:
  its replicas leave the ISR and lose leadership, though the broker stays registered.
* JBOD (``log_dirs``): a failed directory, or one whose replicas and future replicas outgrow
  its capacity (a write Kafka cannot make), goes offline with its replicas on that broker; in
  mode "zk" with a ZooKeeper face the controller acts on the broker's
  ``/log_dir_event_notification`` znode (``handle_log_dir_event``), elsewhere at once.

Replication (``tick``) is computed in closed form: fetch rates are piecewise constant, each
fetch's catch-up moment is known in advance (a heap), and time stops exactly there, so results
do not depend on how often ``tick`` runs. Rates are max-min fair over the limits a fetch is
subject to: destination network-in and leader network-out (times ``slow_factor``; capacity 0 =
unlimited), and the follower/leader throttled rates where the topic's throttled-replica lists
name the replica. Any change re-rates every fetch at once, except that bandwidth freed by a
replica that caught up is handed out at most ``REDISTRIBUTE_INTERVAL`` (5 simulated seconds)
later; re-rating 20,000 fetches at each of 20,000 catch-ups would not scale. Steady-state
traffic of in-sync followers is not charged against the limits. Logs of partitions without a
lagging replica grow lazily (``to_model`` and ``describe_log_dirs`` bring them up to date), so
a tick costs O(lagging partitions) on a 270,000-replica cluster.

The model is split by job, one module each, combined here by inheritance over one shared state
(``core.ClusterCore``): ``replication`` (time, fetch rates, throttles), ``brokers`` (faults,
controller election), ``topics``, ``configs``, ``zk_controller`` and ``kraft_controller``;
``kafka_errors`` and ``state`` hold the error table and the records. This module keeps what
reads the whole model and what dispatches by mode (reassignments, elections).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kafka_ops.emulator.brokers import BrokerFaults
from kafka_ops.emulator.configs import ClusterConfigs, validate_config
from kafka_ops.emulator.kafka_errors import KafkaError, error_names, errors
from kafka_ops.emulator.kraft_controller import KraftController
from kafka_ops.emulator.replication import REDISTRIBUTE_INTERVAL
from kafka_ops.emulator.state import LOG_DIR, EmulatedBroker, EmulatedPartition, Event
from kafka_ops.emulator.topics import Topics
from kafka_ops.emulator.zk_controller import ZkController
from kafka_ops.kafka_rules import parse_throttled_replicas
from kafka_ops.model import NO_LEADER, Broker, BrokerCapacity, ClusterModel, LogDir, Partition, TopicPartition

__all__ = [
    "LOG_DIR", "REDISTRIBUTE_INTERVAL", "EmulatedBroker", "EmulatedCluster", "EmulatedPartition",
    "Event", "KafkaError", "error_names", "errors", "parse_throttled_replicas", "validate_config",
]


class EmulatedCluster(ZkController, KraftController, BrokerFaults, Topics, ClusterConfigs):
    """The cluster state and Kafka's controller over it. Thread-safe: every method locks."""

    # -- reading ---------------------------------------------------------------------------
    def to_model(self) -> ClusterModel:
        with self.lock:
            self.tick()
            brokers = [
                Broker(
                    id=b.id, rack=b.rack, host=b.host, port=b.advertised_port, alive=b.alive,
                    capacity=BrokerCapacity(
                        b.disk_capacity_bytes, b.network_in_bytes_per_sec,
                        b.network_out_bytes_per_sec),
                    log_dirs=tuple(LogDir(d.path, d.capacity_bytes, d.online)
                                   for d in self.log_dirs.dirs[b.id].values()),
                )
                for b in self.brokers.values()
            ]
            partitions = []
            for p in self.partitions.values():
                self._sync(p, self._time)
                partitions.append(Partition(
                    topic=p.topic, partition=p.partition, replicas=tuple(p.replicas),
                    leader=p.leader, isr=tuple(p.isr), size_bytes=int(p.log_end_bytes),
                    bytes_in_per_sec=p.bytes_in_per_sec, bytes_out_per_sec=p.bytes_out_per_sec,
                    log_dirs=tuple(self.log_dirs.placement.get((p.tp, r)) for r in p.replicas),
                ))
            configs = {t: dict(c) for t, c in self._topic_configs.items() if c}
            return ClusterModel(brokers, partitions, configs)

    def reassignment_target(self, tp: TopicPartition) -> list[int] | None:
        """TRS of an ongoing reassignment, None when none runs (RS alone cannot tell it)."""
        with self.lock:
            ra = self._reassignments.get(tp)
            return list(ra.target) if ra else None

    def describe_log_dirs(self, broker_id: int) -> dict[str, dict[TopicPartition, int]]:
        """Replica sizes per online directory of the broker (current replicas only)."""
        return {path: {tp: size for tp, size, future in entries if not future}
                for path, error, _, entries in self.describe_log_dirs_full(broker_id)
                if not error}

    def describe_log_dirs_full(
        self, broker_id: int
    ) -> list[tuple[str, int, int, list[tuple[TopicPartition, int, bool]]]]:
        """What DescribeLogDirs answers: per directory its path, error code, capacity and
        (partition, size, is_future) entries."""
        with self.lock:
            self.tick()
            sizes = {}
            for tp in sorted(self._by_broker.get(broker_id, ())):
                p = self.partitions[tp]
                self._sync(p, self._time)
                if broker_id in p.replica_bytes:
                    sizes[tp] = int(p.replica_bytes[broker_id])
            return self.log_dirs.describe(broker_id, sizes)

    def alter_replica_log_dirs(self, broker_id: int, moves: dict[TopicPartition, str]
                               ) -> dict[TopicPartition, int]:
        """AlterReplicaLogDirs received by broker_id: an error code per partition."""
        with self.lock:
            self.tick()
            out = {}
            for tp, path in moves.items():
                hosted = tp in self.partitions and broker_id in self.partitions[tp].replicas
                if not hosted:
                    self.log_dirs.preferred[(tp, broker_id)] = path
                code = self.log_dirs.alter(tp, broker_id, path)
                out[tp] = code
                if code == 0:
                    self._emit("log_dir_move", tp, broker=broker_id, target=path)
            return out

    # -- reassignments ---------------------------------------------------------------------
    def alter_reassignments(
        self,
        targets: dict[TopicPartition, list[int] | None],
        *,
        source: Literal["api", "zk"] = "api",
    ) -> dict[TopicPartition, KafkaError | None]:
        """Start, replace or cancel (None) reassignments; per-partition error or None.

        ``source="zk"`` is the ZooKeeper face's /admin/reassign_partitions path, which Kafka
        does not validate (a dead target broker just leaves the reassignment pending).
        """
        with self.lock:
            self.tick()
            results: dict[TopicPartition, KafkaError | None] = {}
            for tp, target in targets.items():
                try:
                    if self.mode == "zk":
                        self._reassign_zk(tp, None if target is None else list(target), source)
                    else:
                        self._reassign_kraft(tp, None if target is None else list(target))
                    results[tp] = None
                except KafkaError as e:
                    results[tp] = e
            return results

    def _maybe_complete(self, tp: TopicPartition) -> None:
        ra = self._reassignments.get(tp)
        if ra is None:
            return
        p = self.partitions[tp]
        if self.mode == "zk":
            if set(ra.target) <= set(p.isr):
                self._complete_zk(tp)
        else:
            isr = [r for r in p.isr if r not in p.removing]
            if isr and set(ra.target) <= set(isr):
                self._complete_kraft(tp)

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        """Partitions being reassigned (adding or removing non-empty): replicas, adding, removing."""
        with self.lock:
            self.tick()
            wanted = sorted(self._reassignments) if partitions is None else partitions
            out = {}
            for tp in wanted:
                p = self.partitions.get(TopicPartition(*tp))
                if p is not None and (p.adding or p.removing):
                    out[p.tp] = (list(p.replicas), list(p.adding), list(p.removing))
            return out

    # -- leader election -------------------------------------------------------------------
    def elect_leaders(
        self, election_type: int, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, KafkaError | None]:
        """ElectLeaders: 0 = preferred, 1 = unclean. None = every partition."""
        with self.lock:
            self.tick()
            if election_type not in (0, 1):
                raise KafkaError("INVALID_REQUEST", f"Unknown election type {election_type}")
            results: dict[TopicPartition, KafkaError | None] = {}
            wanted = sorted(self.partitions) if partitions is None else partitions
            for tp in wanted:
                tp = TopicPartition(*tp)
                try:
                    self._elect(tp, election_type)
                    results[tp] = None
                except KafkaError as e:
                    results[tp] = e
            if partitions is None and self.mode == "kraft":
                results = {tp: e for tp, e in results.items()
                           if e is None or e.name != "ELECTION_NOT_NEEDED"}
            return results

    def _elect(self, tp: TopicPartition, election_type: int) -> None:
        p = self.partitions.get(tp)
        if p is None:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist.")
        if election_type == 0:
            preferred = p.replicas[0]
            if p.leader == preferred:
                raise KafkaError("ELECTION_NOT_NEEDED")
            if not (self._online(preferred, p.tp) and preferred in p.isr):
                raise KafkaError(
                    "PREFERRED_LEADER_NOT_AVAILABLE",
                    f"Failed to elect leader for partition {tp} under strategy "
                    "PreferredReplicaPartitionLeaderElectionStrategy")
            self._change(p, leader=preferred)
        else:
            if p.leader != NO_LEADER and self._online(p.leader, p.tp):
                raise KafkaError("ELECTION_NOT_NEEDED")
            leader = self._first_eligible(p, p.replicas)
            isr = [r for r in p.isr if self._online(r, p.tp)]
            if leader == NO_LEADER:
                leader = next((r for r in p.replicas if self._online(r, p.tp)), NO_LEADER)
                isr = [leader]
            if leader == NO_LEADER:
                raise KafkaError(
                    "ELIGIBLE_LEADERS_NOT_AVAILABLE",
                    f"Failed to elect leader for partition {tp} under strategy "
                    "OfflinePartitionLeaderElectionStrategy(true)")
            self._change(p, leader=leader, isr=isr)
        self._emit("leader_elected", tp, leader=p.leader,
                   election="preferred" if election_type == 0 else "unclean")
        self._maybe_complete(tp)
