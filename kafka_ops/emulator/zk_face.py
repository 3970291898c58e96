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
  the znode lists plain replicas (how operators cancelled ZooKeeper-mode reassignments).

Threading: one kazoo session owns every ephemeral znode. Kazoo watch callbacks and the cluster's
event listener only enqueue; a single worker thread (like Kafka's ControllerEventManager) reacts
to ZooKeeper and writes znodes, so writes keep the order of the cluster's events. Writes go
through ``ZkWriter`` (coalesced, batched in ``multi`` transactions, flushed before each
ZooKeeper read and whenever the queue empties) and are never dropped: across ConnectionLoss they
are kept and resent. After a reconnect every watch is re-armed (kazoo forgets them); after a new
session the brokers re-register their ephemeral znodes and a new controller is elected (epoch + 1)
as Kafka's brokers do. The face recognises its own writes by comparing what it reads with what
it last wrote.
"""

from __future__ import annotations

import base64
import json
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from kafka_ops.emulator.cluster import EmulatedCluster, Event, KafkaError
from kafka_ops.emulator.zk_writer import CONNECTION_ERRORS, Disconnected, ZkWriter
from kafka_ops.errors import ClusterStateError, KafkaOpsError, ValidationError
from kafka_ops.model import TopicPartition

log = logging.getLogger(__name__)

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
REASSIGN = "/admin/reassign_partitions"
PREFERRED_ELECTION = "/admin/preferred_replica_election"
CONFIG_CHANGES = "/config/changes"
NOTICE_PREFIX = f"{CONFIG_CHANGES}/config_change_"
# ZkData.PersistentZkPaths, plus the parents Kafka creates on the way.
PERSISTENT_PATHS = (
    "/consumers", "/brokers", BROKER_IDS, TOPICS, "/brokers/seqid", "/config", CONFIG_CHANGES,
    "/admin", "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block",
    "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
    "/config/brokers", "/config/ips", "/cluster",
)
_BATCH_OPS = 500  # operations per transaction
_BATCH_BYTES = 256 * 1024  # data per transaction, far below the default 1 MB jute.maxbuffer
_MAX_IN_FLIGHT = 16
_MAX_PENDING_WRITES = 2000  # mirrored writes in flight before the worker waits for them
Assignment = tuple[list[int], list[int], list[int]]  # replicas, adding, removing


# -- znode formats (Kafka's ZkData encoders) ---------------------------------------------------
def encode(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def topic_id_string(topic_id: str) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).rstrip(b"=").decode()


def topic_id_from_string(text: str) -> str:
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))))


def broker_json(broker_id: int, host: str, port: int, rack: str | None,
                timestamp_ms: int, jmx_port: int = -1) -> dict:
    """BrokerInfo v5 (IBP >= 2.7): one PLAINTEXT listener; rack only when set."""
    data: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://{host}:{port}"],
        "jmx_port": jmx_port,
        "port": port,
        "host": host,
        "version": 5,
        "timestamp": str(timestamp_ms),
    }
    if rack is not None:
        data["rack"] = rack
    return data


def topic_json(topic_id: str | None, partitions: dict[int, Assignment]) -> dict:
    """TopicZNode (version 3; ``topic_id`` when known): adding/removing maps are always
    present and hold only non-empty lists, as ``TopicZNode.encode`` writes them."""
    data: dict[str, Any] = {
        "version": 3,
        "partitions": {str(p): a[0] for p, a in sorted(partitions.items())},
        "adding_replicas": {str(p): a[1] for p, a in sorted(partitions.items()) if a[1]},
        "removing_replicas": {str(p): a[2] for p, a in sorted(partitions.items()) if a[2]},
    }
    if topic_id is not None:
        data["topic_id"] = topic_id_string(topic_id)
    return data


def state_json(leader: int, leader_epoch: int, isr: list[int], controller_epoch: int) -> dict:
    """TopicPartitionStateZNode v1 (leader_recovery_state omitted: always RECOVERED here)."""
    return {"controller_epoch": controller_epoch, "leader": leader, "version": 1,
            "leader_epoch": leader_epoch, "isr": list(isr)}


def controller_json(broker_id: int, timestamp_ms: int) -> dict:
    return {"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": -1}


def config_json(config: dict[str, str]) -> dict:
    return {"version": 1, "config": dict(config)}


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{what} must be a list of integers, got {value!r}")
    return list(value)


def parse_topic(raw: bytes) -> tuple[str | None, dict[int, Assignment]]:
    """A topic znode (v1-v3): topic id (None if absent) and per-partition RS/AR/RR."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), dict):
        raise ValueError("no partitions map")
    adding = data.get("adding_replicas") or {}
    removing = data.get("removing_replicas") or {}
    partitions = {
        int(p): (_int_list(reps, f"partition {p}"),
                 _int_list(adding.get(p, []), f"adding {p}"),
                 _int_list(removing.get(p, []), f"removing {p}"))
        for p, reps in data["partitions"].items()
    }
    topic_id = data.get("topic_id")
    return (topic_id_from_string(topic_id) if topic_id else None), partitions


def parse_reassignment(raw: bytes) -> dict[TopicPartition, list[int]]:
    """/admin/reassign_partitions with Jackson's strictness; ValueError when unparseable."""
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("partitions", []), list):
        raise ValueError("expected {\"version\":1,\"partitions\":[...]}")
    out = {}
    for entry in data.get("partitions", []):
        if not isinstance(entry, dict) or set(entry) - {"topic", "partition", "replicas"}:
            raise ValueError(f"bad entry {entry!r}")
        topic, partition = entry.get("topic"), entry.get("partition")
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(
                partition, bool):
            raise ValueError(f"bad entry {entry!r}")
        out[TopicPartition(topic, partition)] = _int_list(entry.get("replicas"), "replicas")
    return out


def reassignment_json(entries: dict[TopicPartition, list[int]]) -> dict:
    return {"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": reps}
        for tp, reps in entries.items()
    ]}


def _now_ms() -> int:
    return int(time.time() * 1000)


class ZooKeeperFace:
    """Runs ZooKeeper-mode Kafka's side of ZooKeeper for an ``EmulatedCluster`` (mode "zk").

    ``zookeeper`` is a connect string, optionally with a chroot (created if missing, as Kafka
    does). The chroot must not hold another cluster; what a stopped emulator with the same
    cluster id left there is cleared first.
    """

    def __init__(self, cluster: EmulatedCluster, zookeeper: str, *, timeout: float = 15.0) -> None:
        if cluster.mode != "zk":
            raise ValidationError("the ZooKeeper face needs an emulated cluster in mode 'zk'")
        self.cluster = cluster
        self.zookeeper = zookeeper
        self.timeout = timeout
        self._client: KazooClient | None = None
        self._queue: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._writer = ZkWriter(lambda: self.client, timeout)
        self._connected = threading.Event()
        self._stopping = threading.Event()
        self._resync_needed = False
        self._session_id: int | None = None
        self._seen: dict[str, int] = {}  # admin znode -> czxid of the one acted on
        self._oldest_unwritten: float | None = None  # when the oldest unwritten event came
        self._max_lag = 0.0
        self._removals: dict[TopicPartition, list[int] | None] = {}
        # What the znodes hold, as last written or read by us.
        self._assignments: dict[str, dict[int, Assignment]] = {}
        self._topic_ids: dict[str, str] = {}
        self._state_versions: dict[TopicPartition, int] = {}
        self._configs: dict[tuple[str, str], dict[str, str]] = {}
        self._bad_topics: set[str] = set()
        self._last_notice = -1
        self._deleting_controller = False
        self._watches: dict[str, Any] = {}

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
            self._bulk(ops)
            self._sync_broker_epochs(
                [b.id for b in self.cluster.brokers.values() if b.alive])
            self._arm_watches()
        except BaseException:
            self.cluster.remove_listener(self._on_cluster_event)
            self._client.stop()
            self._client.close()
            self._client = None
            raise
        self._worker = threading.Thread(target=self._run, name="emulator-zk", daemon=True)
        self._worker.start()
        return self

    def _clear_previous_run(self) -> None:
        """A chroot left by an emulator with our cluster id is cleared; any other Kafka
        metadata (a real cluster's, or a running one) is never touched."""
        topics = self.client.exists(TOPICS) and self.client.get_children(TOPICS)
        if not topics:
            return
        live = self.client.exists(BROKER_IDS) and self.client.get_children(BROKER_IDS)
        try:
            owner = json.loads(self.client.get("/cluster/id")[0]).get("id")
        except (NoNodeError, ValueError, AttributeError):
            owner = None
        if live or owner != self.cluster.cluster_id:
            raise KafkaOpsError(
                f"ZooKeeper {self.zookeeper} already holds a Kafka cluster ({len(topics)} "
                f"topics, {len(live or [])} live brokers, cluster id {owner!r}); give the "
                "emulator an empty chroot")
        log.info("clearing the metadata a previous emulator left in %s", self.zookeeper)
        paths = []
        level = [p for p in (*PERSISTENT_PATHS, CONTROLLER_EPOCH, "/cluster/id")
                 if p.count("/") == 1 and self.client.exists(p)]
        while level:
            paths.extend(level)
            children = [(p, self.client.get_children_async(p)) for p in level]
            level = [f"{p}/{c}" for p, r in children for c in r.get(timeout=self.timeout)]
        ops = [(path, b"", False) for path in reversed(paths)]  # children before parents
        self._bulk(ops, delete=True)

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

    @property
    def client(self) -> KazooClient:
        if self._client is None:
            raise KafkaOpsError("ZooKeeper face is not started")
        return self._client

    # -- start-up: the whole cluster in batched transactions -------------------------------
    def _bootstrap_ops(self) -> list[tuple[str, bytes, bool]]:
        """(path, data, ephemeral) creates, parents first. Called under the cluster lock."""
        c = self.cluster
        ops: list[tuple[str, bytes, bool]] = [
            (path, b"", False) for path in PERSISTENT_PATHS if not self.client.exists(path)]
        if not self.client.exists("/cluster/id"):
            ops.append(("/cluster/id", encode({"version": "1", "id": c.cluster_id}), False))
        if self.client.exists(CONTROLLER_EPOCH):
            self.client.set(CONTROLLER_EPOCH, str(c.controller_epoch).encode())
        else:
            ops.append((CONTROLLER_EPOCH, str(c.controller_epoch).encode(), False))
        now = _now_ms()
        for b in c.brokers.values():
            if b.alive:
                ops.append((f"{BROKER_IDS}/{b.id}", encode(broker_json(
                    b.id, b.host, b.advertised_port, b.rack, now)), True))
        by_topic: dict[str, list] = {}
        for tp, p in c.partitions.items():
            by_topic.setdefault(tp.topic, []).append(p)
        for topic, parts in by_topic.items():
            self._topic_ids[topic] = c.topic_ids[topic]
            self._assignments[topic] = {
                p.partition: (list(p.replicas), list(p.adding), list(p.removing)) for p in parts}
            config = c.topic_config(topic)
            self._configs[("topics", topic)] = config
            ops.append((f"{TOPICS}/{topic}", encode(topic_json(
                c.topic_ids[topic], self._assignments[topic])), False))
            ops.append((f"/config/topics/{topic}", encode(config_json(config)), False))
            ops.append((f"{TOPICS}/{topic}/partitions", b"", False))
            for p in parts:
                base = f"{TOPICS}/{topic}/partitions/{p.partition}"
                ops.append((base, b"", False))
                ops.append((f"{base}/state", encode(state_json(
                    p.leader, p.leader_epoch, p.isr, c.controller_epoch)), False))
                self._state_versions[p.tp] = p.partition_epoch
        for broker_id in [None, *c.brokers]:
            config = c.broker_config(broker_id)
            if config:
                name = "<default>" if broker_id is None else str(broker_id)
                self._configs[("brokers", name)] = config
                ops.append((f"/config/brokers/{name}", encode(config_json(config)), False))
        if c.controller_id >= 0:
            ops.append((CONTROLLER, encode(controller_json(c.controller_id, now)), True))
        return ops

    def _bulk(self, ops: list[tuple[str, bytes, bool]], delete: bool = False) -> None:
        """Create (or delete) everything in pipelined transactions, each well under
        ZooKeeper's default 1 MB request limit (jute.maxbuffer); one session keeps them in
        order."""
        in_flight: deque = deque()
        start = 0
        while start < len(ops):
            end, size = start, 0
            while end < len(ops) and end - start < _BATCH_OPS:
                item = len(ops[end][0]) + len(ops[end][1])
                if end > start and size + item > _BATCH_BYTES:
                    break
                size += item
                end += 1
            txn = self.client.transaction()
            for path, data, ephemeral in ops[start:end]:
                if delete:
                    txn.delete(path)
                else:
                    txn.create(path, data, ephemeral=ephemeral)
            in_flight.append((start, txn.commit_async()))
            while len(in_flight) > _MAX_IN_FLIGHT:
                self._check_batch(ops, *in_flight.popleft())
            start = end
        while in_flight:
            self._check_batch(ops, *in_flight.popleft())

    def _check_batch(self, ops, start: int, result) -> None:
        outcomes = result.get(timeout=self.timeout * 4)
        for offset, outcome in enumerate(outcomes):
            if isinstance(outcome, Exception) and type(outcome).__name__ != "RolledBackError":
                path = ops[start + offset][0]
                raise ClusterStateError(f"cannot write {path} to ZooKeeper: {outcome!r}")

    def _sync_broker_epochs(self, broker_ids: Iterable[int]) -> None:
        """Kafka's broker epoch is the czxid of its registration znode."""
        stats = {b: self.client.exists_async(f"{BROKER_IDS}/{b}") for b in broker_ids}
        for broker_id, result in stats.items():
            stat = result.get(timeout=self.timeout)
            if stat is not None:
                with self.cluster.lock:
                    self.cluster.brokers[broker_id].epoch = stat.czxid

    def _arm_watches(self, initial: bool = True) -> None:
        """Arm every watch (at start, and again after a reconnect: kazoo forgets them)."""
        self.client.exists(REASSIGN, watch=self._watch("reassign"))
        self.client.exists(PREFERRED_ELECTION, watch=self._watch("preferred"))
        self.client.exists(CONTROLLER, watch=self._watch("controller"))
        self.client.get_children(TOPICS, watch=self._watch("topics"))
        notices = self.client.get_children(CONFIG_CHANGES, watch=self._watch("notices"))
        if initial:
            self._last_notice = max((_sequence(n) for n in notices), default=-1)
        results = [self.client.get_async(f"{TOPICS}/{t}", watch=self._topic_watch(t))
                   for t in self._assignments]
        for r in results:
            r.get(timeout=self.timeout)
        # Present at start or created while unwatched: checked as any event would be.
        self._queue.put(("zk", "reassign", None))
        self._queue.put(("zk", "preferred", None))
        if not initial:  # partitions an operator added while we were away
            for topic in self._assignments:
                self._queue.put(("zk", "topic", topic))

    def _watch(self, name: str):
        """One callback object per znode: kazoo keeps a set, so re-arming never doubles it."""
        if name not in self._watches:
            def callback(event: WatchedEvent) -> None:
                self._queue.put(("zk", name, event.type))
            self._watches[name] = callback
        return self._watches[name]

    def _topic_watch(self, topic: str):
        key = f"topic:{topic}"
        if key not in self._watches:
            def callback(event: WatchedEvent) -> None:
                if event.type == EventType.CHANGED:
                    self._queue.put(("zk", "topic", topic))
            self._watches[key] = callback
        return self._watches[key]

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
                            b.id, b.host, b.advertised_port, b.rack, _now_ms())),
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

    def _write(self, path: str, data) -> None:
        self._writer.set(path, data)

    def _create(self, path: str, data: bytes = b"", ephemeral: bool = False,
                sequence: bool = False) -> None:
        self._writer.create(path, data, ephemeral=ephemeral, sequence=sequence)

    def _write_or_create(self, path: str, data: bytes, ephemeral: bool = False) -> None:
        self._flush()
        if self.client.exists(path):
            self._write(path, data)
        else:
            self._create(path, data, ephemeral=ephemeral)

    # -- cluster events -> znodes ----------------------------------------------------------
    def _mirror(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    def _on_broker_started(self, event: Event) -> None:
        b = self.cluster.brokers[event.broker]
        path = f"{BROKER_IDS}/{b.id}"
        data = encode(broker_json(b.id, b.host, b.advertised_port, b.rack, _now_ms()))
        self._writer.create(path, data, ephemeral=True)  # sets it if it exists
        self._flush()
        self._sync_broker_epochs([b.id])

    def _on_broker_stopped(self, event: Event) -> None:
        self._writer.delete(f"{BROKER_IDS}/{event.broker}")

    def _on_controller_changed(self, event: Event) -> None:
        self._write(CONTROLLER_EPOCH, str(event.data["epoch"]).encode())
        if event.broker < 0:
            self._deleting_controller = True
            self._writer.delete(CONTROLLER)
        else:
            self._write_or_create(CONTROLLER, encode(controller_json(event.broker, _now_ms())),
                                  ephemeral=True)

    def _write_topic(self, topic: str) -> None:
        # Encoded when sent: a topic changed by many events is written once per flush.
        self._write(f"{TOPICS}/{topic}", lambda: encode(topic_json(
            self._topic_ids.get(topic), self._assignments[topic])))

    def _create_partitions(self, topic: str, states: dict[int, dict], parent: bool) -> None:
        if parent:
            self._create(f"{TOPICS}/{topic}/partitions")
        for p, s in sorted(states.items()):
            base = f"{TOPICS}/{topic}/partitions/{p}"
            self._create(base)
            self._create(f"{base}/state", encode(state_json(
                s["leader"], s["leader_epoch"], s["isr"], self.cluster.controller_epoch)))
            self._state_versions[TopicPartition(topic, p)] = 0

    def _on_topic_created(self, event: Event) -> None:
        topic, data = event.topic, event.data
        self._topic_ids[topic] = data["topic_id"]
        self._assignments[topic] = {
            p: (list(s["replicas"]), [], []) for p, s in data["partitions"].items()}
        self._write_or_create(f"{TOPICS}/{topic}", encode(topic_json(
            data["topic_id"], self._assignments[topic])))
        if self._configs.get(("topics", topic)) != data["configs"] or not self.client.exists(
                f"/config/topics/{topic}"):
            self._configs[("topics", topic)] = dict(data["configs"])
            self._write_or_create(f"/config/topics/{topic}", encode(config_json(data["configs"])))
        self._create_partitions(topic, data["partitions"], parent=True)
        self._flush()
        self.client.get_async(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))

    def _on_partitions_created(self, event: Event) -> None:
        topic = event.topic
        for p, s in event.data["partitions"].items():
            self._assignments[topic][p] = (list(s["replicas"]), [], [])
        self._write_topic(topic)
        self._create_partitions(topic, event.data["partitions"], parent=False)

    def _on_partition_changed(self, event: Event) -> None:
        d = event.data
        tp = TopicPartition(event.topic, event.partition)
        assignment = (d["replicas"], d["adding"], d["removing"])
        if self._assignments[tp.topic].get(tp.partition) != assignment:
            self._assignments[tp.topic][tp.partition] = assignment
            self._write_topic(tp.topic)
        if self._state_versions.get(tp) != d["partition_epoch"]:
            self._state_versions[tp] = d["partition_epoch"]
            self._writer.set(  # every write: the znode version is the partition epoch
                f"{TOPICS}/{tp.topic}/partitions/{tp.partition}/state", encode(state_json(
                    d["leader"], d["leader_epoch"], d["isr"], d["controller_epoch"])),
                coalesce=False)

    def _on_reassignment_started(self, event: Event) -> None:
        if event.data["source"] == "api":  # the latest reassignment wins over a ZK one
            self._remove_later(TopicPartition(event.topic, event.partition), None)

    def _on_reassignment_completed(self, event: Event) -> None:
        tp = TopicPartition(event.topic, event.partition)
        self._remove_later(tp, list(event.data["replicas"]))  # B7

    def _remove_later(self, tp: TopicPartition, replicas: list[int] | None) -> None:
        """Drop ``tp`` from /admin/reassign_partitions (any entry when ``replicas`` is None,
        else only one asking for them). Kafka reads and rewrites the znode per completion;
        removals queued together are applied in one rewrite, so a plan of thousands of
        partitions costs one read and write per burst of completions, not one per partition.
        """
        if not self._removals:
            self._queue.put(("call", self._apply_removals))
        self._removals[tp] = replicas

    def _apply_removals(self) -> None:
        removals, self._removals = self._removals, {}
        self._remove_from_reassign_znode(
            lambda t, reps: t in removals and removals[t] in (None, reps))

    _on_reassignment_cancelled = _on_reassignment_completed

    def _on_config_changed(self, event: Event) -> None:
        key = (event.data["entity_type"], event.data["entity_name"])
        config = event.data["config"]
        if self._configs.get(key) == config:
            return  # read from ZooKeeper by us, or written already
        self._configs[key] = dict(config)
        self._write_or_create(f"/config/{key[0]}/{key[1]}", encode(config_json(config)))
        self._create(NOTICE_PREFIX, encode({"version": 2, "entity_path": f"{key[0]}/{key[1]}"}),
                     sequence=True)

    def _remove_from_reassign_znode(self, remove) -> None:
        """KafkaController.maybeRemoveFromZkReassignment: rewrite, or delete when empty."""
        self._flush()
        try:
            raw, stat = self.client.get(REASSIGN)
        except NoNodeError:
            return
        entries = self._read_reassignment(raw)
        kept = {tp: reps for tp, reps in entries.items() if not remove(tp, reps)}
        if kept == entries and entries:
            return
        if kept:
            self._write(REASSIGN, encode(reassignment_json(kept)))
        else:
            self._writer.delete(REASSIGN)

    @staticmethod
    def _read_reassignment(raw: bytes) -> dict[TopicPartition, list[int]]:
        try:
            return parse_reassignment(raw)
        except (ValueError, TypeError) as e:
            log.warning("Ignoring partition reassignment due to invalid json in %s: %s",
                        REASSIGN, e)
            return {}

    # -- ZooKeeper notifications -> controller actions -------------------------------------
    def _react(self, name: str, detail: Any) -> None:
        if name == "reassign":
            if self._register_and_check(REASSIGN, "reassign"):
                self._process_reassign_znode()
        elif name == "preferred":
            if self._register_and_check(PREFERRED_ELECTION, "preferred"):
                self._process_preferred_election()
        elif name == "controller":
            stat = self.client.exists(CONTROLLER, watch=self._watch("controller"))
            if detail == EventType.DELETED:
                if self._deleting_controller:
                    self._deleting_controller = False
                elif stat is None:
                    self._failover()
        elif name == "topics":
            self._process_topic_children()
        elif name == "topic":
            self._process_topic_change(detail)
        elif name == "notices":
            self._process_notices()

    def _register_and_check(self, path: str, name: str) -> bool:
        """Kafka's registerZNodeChangeHandlerAndCheckExistence: re-arm the watch and read
        existence in one call, whatever event woke us. True when the znode exists and is
        not the one already acted on (its czxid tells a re-creation from a data change,
        which Kafka's handlers ignore)."""
        stat = self.client.exists(path, watch=self._watch(name))
        if stat is None or self._seen.get(path) == stat.czxid:
            return False
        self._seen[path] = stat.czxid
        return True

    def _process_reassign_znode(self) -> None:
        try:
            raw, _ = self.client.get(REASSIGN)
        except NoNodeError:
            return
        targets = self._read_reassignment(raw)
        if not targets:
            return
        results = self.cluster.alter_reassignments(dict(targets), source="zk")
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            log.warning("Failed reassignment through zk with the following errors: %s",
                        {str(tp): e.message for tp, e in failed.items()})
            self._remove_from_reassign_znode(lambda tp, _: tp in failed)

    def _process_preferred_election(self) -> None:
        try:
            raw, _ = self.client.get(PREFERRED_ELECTION)
            data = json.loads(raw)
            wanted = [TopicPartition(e["topic"], int(e["partition"]))
                      for e in data["partitions"]]
        except NoNodeError:
            return
        except (ValueError, TypeError, KeyError) as e:
            log.warning("Ignoring preferred replica election due to invalid json: %s", e)
            wanted = []
        if wanted:
            results = self.cluster.elect_leaders(0, wanted)
            log.info("preferred replica election: %s",
                     {str(tp): e.name if e else "NONE" for tp, e in results.items()})
        # Kafka writes the new leaders, then deletes the znode: the election's events are
        # queued already, so the deletion queued behind them is written after them.
        self._queue.put(("call", lambda: self._writer.delete(PREFERRED_ELECTION)))

    def _process_topic_children(self) -> None:
        children = self.client.get_children(TOPICS, watch=self._watch("topics"))
        for topic in sorted(set(children) - set(self._assignments) - self._bad_topics):
            self._create_topic_from_znode(topic)

    def _create_topic_from_znode(self, topic: str) -> None:
        """AdminZkClient wrote /config/topics/<t> then /brokers/topics/<t>: create partitions."""
        try:
            raw, _ = self.client.get(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))
            topic_id, partitions = parse_topic(raw)
        except NoNodeError:
            return
        except (ValueError, TypeError) as e:
            log.error("Ignoring topic %s: invalid topic znode: %s", topic, e)
            self._bad_topics.add(topic)
            return
        config = self._read_config("topics", topic)
        self._configs[("topics", topic)] = config
        try:
            self.cluster.create_topic(topic, {p: a[0] for p, a in partitions.items()}, config,
                                      topic_id=topic_id)
        except KafkaError as e:
            log.error("Cannot create topic %s from its znode: %s", topic, e.message)
            self._bad_topics.add(topic)
            return
        self._assignments[topic] = {p: (a[0], [], []) for p, a in partitions.items()}

    def _process_topic_change(self, topic: str) -> None:
        try:
            raw, _ = self.client.get(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))
            _, partitions = parse_topic(raw)
        except NoNodeError:
            return
        except (ValueError, TypeError) as e:
            log.error("Ignoring invalid topic znode %s/%s: %s", TOPICS, topic, e)
            return
        known = self._assignments.get(topic)
        if known is None:
            return
        added = {p: a[0] for p, a in partitions.items() if p not in known}
        if not added:
            return  # our own write, or edits the running controller ignores
        try:
            self.cluster.create_partitions(topic, added)
        except KafkaError as e:
            log.error("Skipping adding partitions %s for topic %s: %s", sorted(added), topic,
                      e.message)
            self._write_topic(topic)  # restore the assignment the controller holds

    def _read_config(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            raw, _ = self.client.get(f"/config/{entity_type}/{name}")
            data = json.loads(raw)
            config = data.get("config", {}) if isinstance(data, dict) else {}
            return {str(k): str(v) for k, v in config.items()}
        except NoNodeError:
            return {}
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("Ignoring invalid config znode /config/%s/%s: %s", entity_type, name, e)
            return {}

    def _process_notices(self) -> None:
        children = self.client.get_children(CONFIG_CHANGES, watch=self._watch("notices"))
        for name in sorted(children, key=_sequence):
            seq = _sequence(name)
            if seq <= self._last_notice:
                continue
            self._last_notice = seq
            try:
                raw, _ = self.client.get(f"{CONFIG_CHANGES}/{name}")
                entity_type, entity_name = _notice_entity(json.loads(raw))
            except NoNodeError:
                continue
            except (ValueError, TypeError, KeyError) as e:
                log.warning("Ignoring invalid config change notification %s: %s", name, e)
                continue
            self._apply_config(entity_type, entity_name)

    def _apply_config(self, entity_type: str, name: str) -> None:
        if entity_type not in ("topics", "brokers"):
            return
        config = self._read_config(entity_type, name)
        self._configs[(entity_type, name)] = config
        try:
            if entity_type == "topics":
                if self.cluster.topic_config(name) != config:
                    self.cluster.set_topic_config(name, config)
            else:
                broker = None if name == "<default>" else int(name)
                if self.cluster.broker_config(broker) != config:
                    self.cluster.set_broker_config(broker, config)
        except (KafkaError, ValueError) as e:
            log.warning("Ignoring config of %s/%s: %s", entity_type, name,
                        getattr(e, "message", e))

    def _failover(self) -> None:
        """/controller deleted: elect, then read topic znodes as a new controller does."""
        log.info("controller znode deleted: electing a new controller")
        self.cluster.controller_failover()
        topics = list(self._assignments)
        reads = [(t, self.client.get_async(f"{TOPICS}/{t}")) for t in topics]
        for topic, result in reads:
            try:
                _, partitions = parse_topic(result.get(timeout=self.timeout)[0])
            except (NoNodeError, ValueError, TypeError) as e:
                log.error("failover: cannot read topic %s: %r", topic, e)
                continue
            known = self._assignments[topic]
            for p, assignment in sorted(partitions.items()):
                if p in known and known[p] != assignment:
                    self.cluster.load_assignment(TopicPartition(topic, p), *assignment)
        if self.client.exists(REASSIGN):
            self._process_reassign_znode()


def _sequence(name: str) -> int:
    try:
        return int(name.rsplit("_", 1)[-1])
    except ValueError:
        return -1


def _notice_entity(data: dict) -> tuple[str, str]:
    if data.get("version") == 2:
        entity_type, _, name = data["entity_path"].partition("/")
        return entity_type, name
    return data["entity_type"], data["entity_name"]
