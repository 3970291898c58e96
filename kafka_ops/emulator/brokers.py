"""Broker faults and controller election: what happens when brokers and disks come and go.

A stopped broker loses its registration, its leaderships and its ISR places (Kafka's
onBrokerFailure order: partitions it led elect first, then its followers leave the ISRs); a
full disk or failed log directory takes replicas offline while the broker stays registered.
"""

from __future__ import annotations

from kafka_ops.emulator.replication import ReplicationModel
from kafka_ops.errors import ValidationError
from kafka_ops.model import NO_LEADER, TopicPartition


class BrokerFaults(ReplicationModel):
    """Stop, start, slow down or fill a broker; fail a log directory; elect a controller."""

    def stop_broker(self, broker_id: int) -> None:
        """The broker process dies: its registration goes, leaders move, ISRs shrink."""
        with self.lock:
            self.tick()
            b = self._broker(broker_id)
            if not b.alive:
                return
            b.alive = False
            self._dirty = True
            self._emit("broker_stopped", broker=broker_id, epoch=b.epoch)
            if broker_id == self.controller_id:
                self._elect_controller()
            self._replicas_offline(broker_id)

    def start_broker(self, broker_id: int) -> None:
        """The broker comes back with the data it had: it catches up and rejoins ISRs."""
        with self.lock:
            self.tick()
            b = self._broker(broker_id)
            if b.alive:
                return
            b.alive = True
            b.epoch += 1
            self._dirty = True
            self._emit("broker_started", broker=broker_id, epoch=b.epoch)
            if self.controller_id == NO_LEADER:
                self._elect_controller()
            self._replicas_online(broker_id)

    def slow_broker(self, broker_id: int, factor: float) -> None:
        with self.lock:
            self.tick()
            if not factor > 0:
                raise ValidationError(f"slow factor must be positive, got {factor}")
            b = self._broker(broker_id)
            b.slow_factor = float(factor)
            self._dirty = True
            self._emit("broker_fault", broker=broker_id, slow_factor=b.slow_factor,
                       disk_full=b.disk_full)

    def fill_disk(self, broker_id: int, full: bool = True) -> None:
        with self.lock:
            self.tick()
            b = self._broker(broker_id)
            if b.disk_full == full:
                return
            b.disk_full = full
            self._dirty = True
            self._emit("broker_fault", broker=broker_id, slow_factor=b.slow_factor,
                       disk_full=full)
            if not b.alive:
                return
            if full:
                self._replicas_offline(broker_id)
            else:
                self._replicas_online(broker_id)

    def _replicas_offline(self, broker_id: int, only: list[TopicPartition] | None = None) -> None:
        tps = sorted(self._by_broker.get(broker_id, ())) if only is None else only
        # Partitions it led elect first (OfflinePartition -> OnlinePartition), then its
        # follower replicas leave the ISRs (OfflineReplica), as onBrokerFailure orders them.
        for tp in tps:
            p = self.partitions[tp]
            if p.leader == broker_id:
                new = self._first_eligible(p, p.replicas)
                if new != NO_LEADER:
                    self._change(p, leader=new, isr=[r for r in p.isr if self._online(r, p.tp)])
                elif self.unclean_leader_election:
                    self._elect_offline(p)
        for tp in tps:
            self._remove_from_isr(self.partitions[tp], broker_id)
            self._refresh_lagging(self.partitions[tp])

    def _replicas_online(self, broker_id: int, only: list[TopicPartition] | None = None) -> None:
        for tp in sorted(self._by_broker.get(broker_id, ())) if only is None else only:
            p = self.partitions[tp]
            if p.leader == NO_LEADER:
                self._elect_offline(p)
            if broker_id in p.replica_bytes:
                p.replica_bytes[broker_id] = min(p.replica_bytes[broker_id], p.log_end_bytes)
            self._refresh_lagging(p)
            self._maybe_complete(tp)

    def fail_log_dir(self, broker_id: int, path: str, failed: bool = True) -> None:
        """A disk fails (KIP-112): the directory goes offline and its replicas go offline on
        that broker (they leave ISRs, lose leadership); the broker stays registered.
        ``failed=False`` brings it back (in Kafka: the broker restarted with the disk fixed)."""
        with self.lock:
            self.tick()
            dirs = self.log_dirs.dirs.get(broker_id, {})
            if path not in dirs:
                raise ValidationError(f"broker {broker_id} has no log directory {path!r}")
            if dirs[path].online != failed:
                return
            self._set_dir_online(broker_id, path, not failed, reason="failed" if failed else "repaired")

    def _set_dir_online(self, broker_id: int, path: str, online: bool, reason: str) -> None:
        """The directory fails or comes back. The broker stops serving a failed directory's
        replicas at once; the controller takes them offline (leaders elsewhere, out of the
        ISRs) now, or in ZooKeeper mode when the broker's log_dir_event_notification reaches
        it (``handle_log_dir_event``)."""
        tps = self.log_dirs.set_online(broker_id, path, online)
        self._dirty = True
        self._emit("log_dir_fault", broker=broker_id, path=path, failed=not online, reason=reason)
        if not self._online(broker_id):
            return
        if online:
            self._replicas_online(broker_id, tps)
        elif not self.log_dir_notifications:
            self._replicas_offline(broker_id, tps)

    def handle_log_dir_event(self, broker_id: int) -> None:
        """The controller's LogDirEventNotification handling: every replica of the broker in
        an offline directory becomes an OfflineReplica (leadership moves, ISR shrinks)."""
        with self.lock:
            self.tick()
            if broker_id not in self.brokers or not self._online(broker_id):
                return
            offline = sorted(tp for tp in self._by_broker.get(broker_id, ())
                             if not self.log_dirs.online(tp, broker_id))
            if offline:
                self._replicas_offline(broker_id, offline)

    def _elect_controller(self) -> None:
        live = sorted(b for b, broker in self.brokers.items() if broker.alive)
        self.controller_id = live[0] if live else NO_LEADER
        self.controller_epoch += 1
        self._emit("controller_changed", broker=self.controller_id, epoch=self.controller_epoch)

    def controller_failover(self) -> None:
        """A new controller election (e.g. /controller deleted): lowest live id wins, epoch+1."""
        with self.lock:
            self.tick()
            self._elect_controller()
