"""The emulator's ZooKeeper face: ZooKeeper-mode Kafka brokers and controller on a real ZooKeeper.

Our ZooKeeper backend talks to this exactly as it would to Kafka <= 3.9 (IBP >= 2.7): the face
registers every live broker (ephemeral ``/brokers/ids/N``, JSON v5), writes ``/controller`` (v2)
and ``/controller_epoch``, each topic's ``/brokers/topics/<t>`` (v3) and partition state znodes
(v1; the znode version is the partition epoch), and topic configs; it then acts as the
controller: it watches ``/admin/reassign_partitions``, ``/admin/preferred_replica_election``,
``/config/changes``, ``/brokers/topics`` and ``/controller`` and hands what it reads to the
shared ``EmulatedCluster``, whose controller steps come back as events and are mirrored into
znodes in order (see kafka-reassignment-protocol.md, section A).

Kafka fidelity worth knowing:

* Watches follow Kafka's controller: whatever event wakes it (created, changed, deleted, or a
  reconnect), the face re-arms the watch and checks existence in the same call
  (``registerZNodeChangeHandlerAndCheckExistence``), so an admin znode deleted and created
  again before the watch was re-armed is still seen. ``/admin/reassign_partitions`` and
  ``/admin/preferred_replica_election`` are acted on once per znode (its czxid), when it is
  created or found at start, failover or reconnect, like ``handleCreation``; data written while
  it exists is ignored until the next creation. An election's new leaders are written before
  its znode is deleted, so whoever waits for the deletion reads them. Unparseable data is logged and read as empty
  (``KafkaZkClient.getPartitionReassignment``): nothing starts, and the znode is deleted at the
  next rewrite (a completion finds nothing left in it). Entries that fail (unknown partitions)
  are removed from the znode; dead target brokers are accepted and stay pending.
* Partitions added by rewriting a topic znode are created; while that topic is being reassigned
  they are refused with Kafka's message and the znode is restored. Other edits of existing
  partitions in a topic znode are ignored by the running controller but read at failover: when
  ``/controller`` is deleted a new controller is elected (lowest live id, epoch + 1) and re-reads
  every topic znode, resuming reassignments from adding/removing replicas or dropping them when
  the znode lists plain replicas (how operators cancelled ZooKeeper-mode reassignments). A
  change the old controller made but had not yet written (a completion) wins over the edit, as
  on Kafka's single controller event queue.

Threading: one kazoo session owns every ephemeral znode. Kazoo watch callbacks and the cluster's
event listener only enqueue; a single worker thread (like Kafka's ControllerEventManager) reacts
to ZooKeeper and writes znodes, so writes keep the order of the cluster's events. Writes go
through ``ZkWriter`` (coalesced, batched in ``multi`` transactions, flushed before each
ZooKeeper read and whenever the queue empties) and are never dropped: across ConnectionLoss they
are kept and resent. After a reconnect every watch is re-armed (kazoo forgets them); after a new
session the brokers re-register their ephemeral znodes and a new controller is elected (epoch + 1)
as Kafka's brokers do. The face recognises its own writes by comparing what it reads with what
it last wrote.

The face is split by job: ``zk_bootstrap`` (start-up writes), ``zk_mirror`` (cluster events ->
znodes), ``zk_reactions`` (znodes -> controller calls), ``zk_writer`` (batched, coalesced writes);
this module holds the session, the watches and the worker thread. Paths and JSON formats are
``kafka_ops.backends.zk_paths``, shared with the ZooKeeper backend.
"""

from __future__ import annotations

import logging
import threading
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from kafka_ops.backends.zk_paths import (
    BROKER_IDS,
    CONFIG_CHANGES,
    CONTROLLER,
    LOG_DIR_EVENTS,
    PREFERRED_REPLICA_ELECTION,
    REASSIGN_PARTITIONS,
    TOPICS,
    broker_json,
    encode,
    now_ms,
)
from kafka_ops.emulator.cluster import Event
from kafka_ops.emulator.zk_bootstrap import ZkBootstrap
from kafka_ops.emulator.zk_reactions import ZkReactions, notice_sequence
from kafka_ops.emulator.zk_writer import CONNECTION_ERRORS, Disconnected
from kafka_ops.errors import KafkaOpsError
from kafka_ops.model import TopicPartition

log = logging.getLogger(__name__)

_MAX_PENDING_WRITES = 2000  # mirrored writes in flight before the worker waits for them


class ZooKeeperFace(ZkBootstrap, ZkReactions):
    """Runs ZooKeeper-mode Kafka's side of ZooKeeper for an ``EmulatedCluster`` (mode "zk").

    ``zookeeper`` is a connect string, optionally with a chroot (created if missing, as Kafka
    does). The chroot must not hold another cluster; what a stopped emulator with the same
    cluster id left there is cleared first.
    """

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> ZooKeeperFace:
        hosts, _, chroot = self.zookeeper.partition("/")
        if chroot:
            root = self._connect(hosts)
            try:
                root.ensure_path("/" + chroot)
            finally:
                root.stop()
                root.close()
        self._client = self._connect(self.zookeeper)
        self._session_id = self._client.client_id[0]
        self._connected.set()
        self._stopping.clear()
        self._client.add_listener(self._on_state)
        try:
            self._clear_previous_run()
            with self.cluster.lock:
                ops = self._bootstrap_ops()
                self.cluster.add_listener(self._on_cluster_event)
                self.cluster.log_dir_notifications = True
            self._bulk(ops)
            self._sync_broker_epochs(
                [b.id for b in self.cluster.brokers.values() if b.alive])
            self._arm_watches()
        except BaseException:
            self.cluster.remove_listener(self._on_cluster_event)
            self.cluster.log_dir_notifications = False
            self._client.stop()
            self._client.close()
            self._client = None
            raise
        self._worker = threading.Thread(target=self._run, name="emulator-zk", daemon=True)
        self._worker.start()
        return self


    def _connect(self, hosts: str) -> KazooClient:
        client = KazooClient(hosts=hosts, timeout=self.timeout)
        try:
            client.start(timeout=self.timeout)
        except KazooTimeoutError:
            client.close()
            raise KafkaOpsError(
                f"cannot connect to ZooKeeper {hosts} within {self.timeout:g}s") from None
        return client

    def stop(self) -> None:
        self.cluster.remove_listener(self._on_cluster_event)
        self.cluster.log_dir_notifications = False
        self._stopping.set()
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=30)
            self._worker = None
        if self._client is not None:
            self._client.stop()  # the session ends: every broker's ephemeral znode goes
            self._client.close()
            self._client = None

    def __enter__(self) -> ZooKeeperFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every queued cluster event and ZooKeeper notification is handled."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("ZooKeeper face did not catch up in time")
                self._queue.all_tasks_done.wait(remaining)

    def mirror_stats(self) -> dict[str, float]:
        """The mirror's worst lag (a model event to its znode writes acknowledged, seconds) and
        what it sent, for benchmarks and logs."""
        return {"max_lag_s": round(self._max_lag, 3), "writes": self._writer.sent_ops,
                "transactions": self._writer.transactions,
                "max_flush_s": round(self._writer.max_flush_seconds, 3)}

    def _arm_watches(self, initial: bool = True) -> None:
        """Arm every watch (at start, and again after a reconnect: kazoo forgets them)."""
        self.client.exists(REASSIGN_PARTITIONS, watch=self._watch("reassign"))
        self.client.exists(PREFERRED_REPLICA_ELECTION, watch=self._watch("preferred"))
        self.client.exists(CONTROLLER, watch=self._watch("controller"))
        self.client.get_children(TOPICS, watch=self._watch("topics"))
        self.client.get_children(LOG_DIR_EVENTS, watch=self._watch("log_dir_events"))
        notices = self.client.get_children(CONFIG_CHANGES, watch=self._watch("notices"))
        if initial:
            self._last_notice = max((notice_sequence(n) for n in notices), default=-1)
        results = [self.client.get_async(f"{TOPICS}/{t}", watch=self._topic_watch(t))
                   for t in self._assignments]
        for r in results:
            r.get(timeout=self.timeout)
        # Present at start or created while unwatched: checked as any event would be.
        self._queue.put(("zk", "reassign", None))
        self._queue.put(("zk", "preferred", None))
        self._queue.put(("zk", "log_dir_events", None))
        if not initial:  # partitions an operator added while we were away
            for topic in self._assignments:
                self._queue.put(("zk", "topic", topic))

    def _on_cluster_event(self, event: Event) -> None:
        # Called under the cluster lock: never block. The time measures the mirror's lag.
        self._queue.put(("event", event, time.monotonic()))

    # -- the worker ------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    self._flush(give_up_after=self.timeout)
                    return
                if self._resync_needed:
                    self._flush()
                if item[0] == "event":
                    self._mirror(item[1])
                    if self._oldest_unwritten is None:
                        self._oldest_unwritten = item[2]
                elif item[0] == "call":
                    item[1]()
                elif item[0] == "zk":
                    self._flush()
                    self._react(item[1], item[2])
                if self._queue.empty() or len(self._writer) >= _MAX_PENDING_WRITES:
                    self._flush()
            except Disconnected:
                log.warning("ZooKeeper unreachable while handling %r; retrying after reconnect",
                            item[0] if item else item)
            except CONNECTION_ERRORS as e:  # a read: redone by the resync after reconnecting
                log.warning("ZooKeeper unreachable while handling %r: %r", item, e)
                self._resync_needed = True
            except Exception:
                log.exception("ZooKeeper face failed on %r", item)
            finally:
                self._queue.task_done()

    def _flush(self, give_up_after: float | None = None) -> None:
        """Write everything buffered; across a lost connection wait for the next one (or
        ``give_up_after`` seconds), then resynchronise: a new session re-registers the
        brokers' ephemeral znodes and elects a controller, as Kafka's brokers do."""
        deadline = None if give_up_after is None else time.monotonic() + give_up_after
        while True:
            try:
                if (self._resync_needed or len(self._writer)) and not self._connected.is_set():
                    raise Disconnected()
                self._writer.flush()
                if self._oldest_unwritten is not None:
                    self._max_lag = max(self._max_lag, time.monotonic() - self._oldest_unwritten)
                    self._oldest_unwritten = None
                if self._resync_needed:
                    self._resync()
                return
            except (Disconnected, *CONNECTION_ERRORS):
                self._resync_needed = True
                while not self._connected.wait(0.1):
                    if (self._stopping.is_set() and deadline is None) or (
                            deadline is not None and time.monotonic() > deadline):
                        log.error("ZooKeeper unreachable: %d writes not mirrored",
                                  len(self._writer))
                        return

    def _on_state(self, state: KazooState) -> None:
        """Kazoo's connection listener (its event thread: only flags and enqueues). Kazoo
        forgets every watch when the connection drops, so any reconnect re-arms them."""
        if state == KazooState.CONNECTED:
            self._connected.set()
            self._queue.put(("resync",))
        else:
            self._connected.clear()
            self._resync_needed = True

    def _resync(self) -> None:
        """After a reconnect: re-register what a new session lost, re-arm every watch and act
        on whatever was created meanwhile (Kafka's controller re-registers its handlers and
        checks existence in the same step)."""
        self._resync_needed = False
        try:
            session_id = self.client.client_id[0]
            if session_id != self._session_id:
                log.warning("new ZooKeeper session 0x%x: brokers re-register", session_id)
                self._session_id = session_id
                for b in self.cluster.brokers.values():
                    if b.alive:
                        self._writer.create(f"{BROKER_IDS}/{b.id}", encode(broker_json(
                            b.id, b.host, b.advertised_port, b.rack, now_ms())),
                            ephemeral=True)
                self._writer.flush()
                self._sync_broker_epochs(
                    [b.id for b in self.cluster.brokers.values() if b.alive])
                self._failover()  # the controller's session went too: a new one is elected
            self._arm_watches(initial=False)
            self._process_topic_children()
            self._process_notices()
            self._remove_from_reassign_znode(self._reassignment_done)
        except BaseException:
            self._resync_needed = True
            raise

    def _reassignment_done(self, tp: TopicPartition, replicas: list[int]) -> bool:
        p = self.cluster.partitions.get(tp)
        return p is not None and self.cluster.reassignment_target(tp) is None and list(
            p.replicas) == list(replicas)
