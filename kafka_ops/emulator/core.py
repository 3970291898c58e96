"""The core of the emulated cluster: its state, events, and the partition state changes.

``ClusterCore`` holds what every job of the emulator shares (brokers, partitions, configs,
listeners) and the primitive controller writes (``_change``: one znode write in mode "zk", one
metadata record in mode "kraft"), ISR removal and offline election. See ``cluster.py`` for the
fidelity choices and how the jobs are combined.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Literal

from kafka_ops.emulator.clock import Clock, ScaledClock
from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.log_dirs import LogDirs
from kafka_ops.emulator.state import LOG_DIR, EmulatedBroker, EmulatedPartition, Event, Reassignment
from kafka_ops.errors import ValidationError
from kafka_ops.kafka_rules import FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS
from kafka_ops.model import NO_LEADER, ClusterModel, LogDir, Partition, TopicPartition

log = logging.getLogger("kafka_ops.emulator.cluster")


class ClusterCore:
    """The cluster's state and the partition state changes every controller step is made of.

    The jobs built on it are separate modules, combined into ``EmulatedCluster``:
    replication (``replication.ReplicationModel``), broker faults, topics, configs and the two
    controllers (``zk_controller``, ``kraft_controller``). Thread-safe: every public method
    locks ``self.lock``.
    """

    def __init__(
        self,
        model: ClusterModel,
        *,
        mode: Literal["zk", "kraft"] = "zk",
        clock: Clock | None = None,
        cluster_id: str = "kafka-ops-emulator",
        unclean_leader_election: bool = False,
        record_events: bool = True,
    ) -> None:
        """``record_events=False`` keeps ``events`` empty (listeners still hear everything):
        a long run at production size records millions of events."""
        if mode not in ("zk", "kraft"):
            raise ValidationError(f"emulator mode must be 'zk' or 'kraft', got {mode!r}")
        self.lock = threading.RLock()
        self.clock: Clock = clock or ScaledClock()
        self.mode = mode
        self.cluster_id = cluster_id
        self.unclean_leader_election = unclean_leader_election
        self.events: list[Event] = []
        self._record_events = record_events
        self._listeners: list[Callable[[Event], None]] = []
        self._time = self.clock.now()
        self.brokers: dict[int, EmulatedBroker] = {
            b.id: EmulatedBroker(
                id=b.id, rack=b.rack, host=b.host, port=0, alive=b.alive,
                disk_capacity_bytes=b.capacity.disk_bytes,
                network_in_bytes_per_sec=b.capacity.network_in_bytes_per_sec,
                network_out_bytes_per_sec=b.capacity.network_out_bytes_per_sec,
                configured_port=b.port,
            )
            for b in model.brokers.values()
        }
        self.partitions: dict[TopicPartition, EmulatedPartition] = {}
        self.topic_ids: dict[str, str] = {}
        self._topic_configs: dict[str, dict[str, str]] = {
            t: dict(c) for t, c in model.topic_configs.items()
        }
        self._broker_configs: dict[int | None, dict[str, str]] = {}
        self._throttle_cache: dict[tuple[str, str], str | frozenset[tuple[int, int]]] = {}
        self._reassignments: dict[TopicPartition, Reassignment] = {}
        self._lagging: dict[TopicPartition, None] = {}  # insertion-ordered: deterministic
        self._rates: dict[tuple[TopicPartition, int], float] = {}
        self._catchups: list[tuple] = []  # heap of (due, seq, tp, dest, leader, allocation)
        self._allocation = 0
        self._allocated_at = self._time
        self._dirty = True  # fetch rates must be recomputed before time moves on
        self._redistribute = False  # a fetch finished: its bandwidth is free for others
        self._by_broker: dict[int, set[TopicPartition]] = defaultdict(set)
        self.log_dirs = LogDirs()
        for b in model.brokers.values():  # a broker without known directories has one
            self.log_dirs.add_broker(b.id, b.log_dirs or (LogDir(LOG_DIR, b.capacity.disk_bytes),),
                                     enforce=bool(b.log_dirs))
        self._log_dirs_at = self._time
        self._capacity_checked_at = -math.inf
        #: Set by the ZooKeeper face: a failed directory reaches the controller through
        #: /log_dir_event_notification (``handle_log_dir_event``), as in Kafka's ZooKeeper mode.
        self.log_dir_notifications = False
        for p in model:
            self._load(p)
        live = sorted(b for b, broker in self.brokers.items() if broker.alive)
        self.controller_id = live[0] if live else NO_LEADER
        self.controller_epoch = 1

    def _load(self, p: Partition) -> None:
        """A partition from a snapshot. Replicas out of the snapshot's ISR rejoin at the first
        tick (their lag is unknown, so they are taken as caught up)."""
        if p.topic not in self.topic_ids:
            self.topic_ids[p.topic] = str(uuid.uuid4())
        for i, r in enumerate(p.replicas):
            self.log_dirs.place(p.tp, r, p.log_dirs[i] if p.log_dirs else None)
        live_isr = [r for r in p.isr if r in p.replicas and self._online(r, p.tp)]
        if live_isr:
            isr = live_isr
            leader = p.leader if p.leader in live_isr else next(
                r for r in p.replicas if r in live_isr)
        else:
            isr = [r for r in p.isr if r in p.replicas][-1:]
            leader = NO_LEADER
        ep = EmulatedPartition(
            topic=p.topic, partition=p.partition, replicas=list(p.replicas), adding=[],
            removing=[], leader=leader, leader_epoch=0, partition_epoch=0, isr=isr,
            log_end_bytes=float(p.size_bytes),
            replica_bytes={r: float(p.size_bytes) for r in p.replicas},
            bytes_in_per_sec=p.bytes_in_per_sec, bytes_out_per_sec=p.bytes_out_per_sec,
            synced_at=self._time,
        )
        self.partitions[p.tp] = ep
        for r in ep.replicas:
            self._by_broker[r].add(p.tp)
        self._refresh_lagging(ep)

    # -- observation -----------------------------------------------------------------------
    def add_listener(self, callback: Callable[[Event], None]) -> None:
        with self.lock:
            self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[Event], None]) -> None:
        with self.lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def _emit(self, kind: str, tp: TopicPartition | None = None, broker: int | None = None,
              topic: str | None = None, **data: object) -> None:
        event = Event(
            time=self._time, kind=kind, topic=tp.topic if tp else topic,
            partition=tp.partition if tp else None, broker=broker, data=data,
        )
        if self._record_events:
            self.events.append(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a face's bug must not corrupt the controller's state
                log.exception("emulator event listener failed on %s", kind)

    @property
    def now(self) -> float:
        """The simulation time the state reflects (clock time at the last tick)."""
        return self._time

    def _online(self, broker_id: int, tp: TopicPartition | None = None) -> bool:
        """The broker is up, and (given a partition) its replica's directory is online."""
        b = self.brokers.get(broker_id)
        return (b is not None and b.alive and not b.disk_full
                and (tp is None or self.log_dirs.online(tp, broker_id)))

    def _sync(self, p: EmulatedPartition, t: float) -> None:
        """Bring the partition to time t: the leader's log grows, in-sync replicas keep up,
        lagging replicas fetch at their allocated rate."""
        dt = t - p.synced_at
        if dt <= 0:
            return
        p.synced_at = t
        if p.leader == NO_LEADER:
            return
        p.log_end_bytes += p.bytes_in_per_sec * dt
        for r in p.replicas:
            if not self._online(r, p.tp):
                continue
            if r in p.isr:
                p.replica_bytes[r] = p.log_end_bytes
            elif p.tp in self._lagging:
                rate = self._rates.get((p.tp, r), 0.0)
                fetched = p.replica_bytes.get(r, 0.0) + (rate * dt if rate else 0.0)
                p.replica_bytes[r] = min(fetched, p.log_end_bytes)

    def _refresh_lagging(self, p: EmulatedPartition) -> None:
        lagging = p.leader != NO_LEADER and self._online(p.leader, p.tp) and any(
            r not in p.isr and self._online(r, p.tp) for r in p.replicas)
        if lagging:
            self._lagging[p.tp] = None
        else:
            self._lagging.pop(p.tp, None)

    # -- partition state changes -------------------------------------------------------------
    def _change(
        self,
        p: EmulatedPartition,
        *,
        replicas: list[int] | None = None,
        adding: list[int] | None = None,
        removing: list[int] | None = None,
        leader: int | None = None,
        isr: list[int] | None = None,
        bump_leader_epoch: bool = False,
    ) -> None:
        """One write of the partition's metadata (a znode write in mode zk, a record in kraft)."""
        self._sync(p, self._time)
        self._dirty = True
        state_written = leader is not None or isr is not None or bump_leader_epoch
        if replicas is not None:
            for r in set(p.replicas) - set(replicas):
                self._by_broker[r].discard(p.tp)
                self.log_dirs.remove(p.tp, r)
            for r in replicas:
                self._by_broker[r].add(p.tp)
                self.log_dirs.place(p.tp, r)
            p.replicas = list(replicas)
        if adding is not None:
            p.adding = list(adding)
        if removing is not None:
            p.removing = list(removing)
        if leader is not None and leader != p.leader:
            p.leader = leader
            bump_leader_epoch = True
            if leader != NO_LEADER:
                # The new leader's log is the partition's log; others truncate to it.
                p.log_end_bytes = p.replica_bytes.get(leader, 0.0)
                for r, size in p.replica_bytes.items():
                    p.replica_bytes[r] = min(size, p.log_end_bytes)
        if isr is not None:
            p.isr = list(isr)
        if bump_leader_epoch:
            p.leader_epoch += 1
        if state_written or self.mode == "kraft":
            p.partition_epoch += 1
        self._refresh_lagging(p)
        self._emit(
            "partition_changed", p.tp, replicas=list(p.replicas), adding=list(p.adding),
            removing=list(p.removing), leader=p.leader, leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch, isr=list(p.isr),
            controller_epoch=self.controller_epoch,
        )

    def _first_eligible(self, p: EmulatedPartition, candidates: Iterable[int]) -> int:
        return next((r for r in candidates if self._online(r, p.tp) and r in p.isr), NO_LEADER)

    def _remove_from_isr(self, p: EmulatedPartition, broker_id: int) -> None:
        """Kafka's removeReplicasFromIsr: leader -1 if it was the leader; the last ISR member
        stays in the ISR so that it can lead again when it comes back."""
        if broker_id not in p.isr:
            return
        isr = p.isr if p.isr == [broker_id] else [r for r in p.isr if r != broker_id]
        leader = NO_LEADER if p.leader == broker_id else p.leader
        self._change(p, leader=leader, isr=isr, bump_leader_epoch=self.mode == "zk")

    def _elect_offline(self, p: EmulatedPartition) -> None:
        """OfflinePartitionLeaderElectionStrategy: first live ISR replica in replica order;
        with unclean election enabled, else the first live replica (which may lose data)."""
        leader = self._first_eligible(p, p.replicas)
        if leader != NO_LEADER:
            self._change(p, leader=leader, isr=[r for r in p.isr if self._online(r, p.tp)])
        elif self.unclean_leader_election:
            leader = next((r for r in p.replicas if self._online(r, p.tp)), NO_LEADER)
            if leader != NO_LEADER:
                self._change(p, leader=leader, isr=[leader])

    def _stop_replica(self, p: EmulatedPartition, broker_id: int) -> None:
        """OfflineReplica then NonExistentReplica: leave the ISR, delete the data.

        ZooKeeper mode keeps an ISR of one as it is (KafkaController.doRemoveReplicasFromIsr):
        a cancel that stops every ISR member leaves the last one stopped in the ISR, leaderless,
        though no longer a replica."""
        if broker_id in p.isr:
            isr = [r for r in p.isr if r != broker_id]
            if self.mode == "zk" and not isr:
                isr = list(p.isr)
            if p.leader == broker_id:
                leader = self._first_eligible(p, [r for r in p.replicas if r in isr])
                keep = isr if leader != NO_LEADER or self.mode == "zk" else p.isr
                self._change(p, leader=leader, isr=keep)
            else:
                self._change(p, isr=isr, bump_leader_epoch=self.mode == "zk")
        p.replica_bytes.pop(broker_id, None)

    def _first_eligible_in(self, order: list[int], isr: list[int]) -> int:
        return next((r for r in order if r in isr and self._online(r)), NO_LEADER)

    def _broker(self, broker_id: int) -> EmulatedBroker:
        b = self.brokers.get(broker_id)
        if b is None:
            raise ValidationError(f"unknown broker {broker_id}")
        return b

    def _check_assignment(self, replicas: list[int]) -> None:
        if not replicas:
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "The manual partition assignment includes an empty replica list.")
        previous = None
        for b in sorted(replicas):
            if b not in self.brokers:
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 f"The manual partition assignment includes broker {b}, "
                                 "but no such broker is registered.")
            if b == previous:
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 f"The manual partition assignment includes the broker {b} "
                                 "more than once.")
            previous = b

    def _topic_exists(self, topic: str) -> bool:
        return topic in self.topic_ids

    def _finish(self, tp: TopicPartition, ra: Reassignment) -> None:
        kind = "reassignment_cancelled" if ra.cancel else "reassignment_completed"
        self._emit(kind, tp, replicas=list(ra.target), source=ra.source)

    def _invalidate_throttles(self, topic: str) -> None:
        self._throttle_cache.pop((topic, LEADER_THROTTLED_REPLICAS), None)
        self._throttle_cache.pop((topic, FOLLOWER_THROTTLED_REPLICAS), None)

    # -- hooks the composed cluster supplies ------------------------------------------------
    def tick(self) -> None:
        """Advance the simulation to the clock (``replication.ReplicationModel``)."""
        raise NotImplementedError

    def _maybe_complete(self, tp: TopicPartition) -> None:
        """Complete the partition's reassignment if its target is in sync: the ZooKeeper or
        KRaft controller's rule, by mode (``EmulatedCluster``)."""
        raise NotImplementedError
