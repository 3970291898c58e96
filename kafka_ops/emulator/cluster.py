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
"""

from __future__ import annotations

import heapq
import logging
import math
import re
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from kafka_ops.emulator.clock import Clock, ScaledClock
from kafka_ops.emulator.log_dirs import LogDirs
from kafka_ops.errors import ValidationError
from kafka_ops.model import NO_LEADER, Broker, BrokerCapacity, ClusterModel, LogDir, Partition, TopicPartition

log = logging.getLogger(__name__)

# Kafka's error codes (org.apache.kafka.common.protocol.Errors) that the controller returns.
errors: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "BROKER_NOT_AVAILABLE": 8,
    "INVALID_TOPIC_EXCEPTION": 17,
    "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37,
    "INVALID_REPLICATION_FACTOR": 38,
    "INVALID_REPLICA_ASSIGNMENT": 39,
    "INVALID_CONFIG": 40,
    "NOT_CONTROLLER": 41,
    "INVALID_REQUEST": 42,
    "REASSIGNMENT_IN_PROGRESS": 60,
    "PREFERRED_LEADER_NOT_AVAILABLE": 80,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": 83,
    "ELECTION_NOT_NEEDED": 84,
    "NO_REASSIGNMENT_IN_PROGRESS": 85,
    "KAFKA_STORAGE_ERROR": 56,
    "LOG_DIR_NOT_FOUND": 57,
}
error_names: dict[int, str] = {code: name for name, code in errors.items()}

# Errors.java default messages, used when the controller gives none.
_DEFAULT_MESSAGES = {
    "UNKNOWN_SERVER_ERROR": "The server experienced an unexpected error when processing the request.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "ELECTION_NOT_NEEDED": "Leader election not needed for topic partition.",
    "NO_REASSIGNMENT_IN_PROGRESS": "No partition reassignment is in progress.",
    "NOT_CONTROLLER": "This is not the correct controller for this cluster.",
}

LOG_DIR = "/var/kafka-logs"
# Bandwidth freed by a replica that caught up is handed to the others at most this many
# simulated seconds later (every other change re-rates fetches at once). Without the delay a
# cluster-wide rebalance would re-rate every fetch at every one of thousands of catch-ups.
REDISTRIBUTE_INTERVAL = 5.0
ALL_REPLICAS = "*"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
_LONG_BROKER_CONFIGS = (
    LEADER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_RATE,
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


class KafkaError(Exception):
    """A Kafka error: code and name as in Errors.java, message as the controller words it."""

    def __init__(self, name: str, message: str | None = None) -> None:
        self.name = name
        self.code = errors[name]
        self.message = message if message is not None else _DEFAULT_MESSAGES.get(name, name)
        super().__init__(f"{name}: {self.message}")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KafkaError) and (self.code, self.message)
                == (other.code, other.message))

    def __hash__(self) -> int:
        return hash((self.code, self.message))


@dataclass
class EmulatedBroker:
    id: int
    rack: str | None
    host: str
    port: int  # the wire-face listener; 0 until bound
    alive: bool
    disk_capacity_bytes: int
    network_in_bytes_per_sec: float  # 0 = unlimited
    network_out_bytes_per_sec: float
    slow_factor: float = 1.0  # fault: replication bandwidth multiplied by this
    disk_full: bool = False  # fault: the log directory is offline
    epoch: int = 0  # broker epoch; bumps on restart (the ZooKeeper face sets its czxid)
    configured_port: int = 9092  # the snapshot's port, advertised until the wire face binds

    @property
    def advertised_port(self) -> int:
        return self.port or self.configured_port


@dataclass
class EmulatedPartition:
    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    log_end_bytes: float
    replica_bytes: dict[int, float]
    bytes_in_per_sec: float
    bytes_out_per_sec: float
    synced_at: float = 0.0  # time log_end_bytes was last brought up to date

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class Event:
    time: float
    kind: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    data: dict = field(default_factory=dict)


@dataclass
class _Reassignment:
    target: list[int]
    source: str  # "api" or "zk": the ZooKeeper face keeps /admin/reassign_partitions in step
    cancel: bool = False


@dataclass
class _Fetch:
    tp: TopicPartition
    dest: int
    leader: int
    lag: float
    growth: float


def _distinct(xs: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(xs))


def _scala_seq(xs: Iterable[int]) -> str:
    return f"ArrayBuffer({', '.join(map(str, xs))})"


def _scala_set(xs: Iterable[int]) -> str:
    items = sorted(xs)
    return f"{'Set' if len(items) <= 4 else 'HashSet'}({', '.join(map(str, items))})"


def parse_replica_list(value: str) -> str | frozenset[tuple[int, int]]:
    """A throttled-replicas config value: ``*`` or ``partition:broker,...``.

    Raises ValueError on anything else (Kafka's ThrottledReplicaListValidator).
    """
    text = value.strip()
    if text == ALL_REPLICAS:
        return ALL_REPLICAS
    pairs = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        p, sep, b = item.partition(":")
        if not sep:
            raise ValueError(item)
        pairs.add((int(p.strip()), int(b.strip())))
    return frozenset(pairs)


def _validate_config(key: str, value: str | None) -> None:
    if value is None:
        return
    if key in (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS):
        try:
            parse_replica_list(value)
        except ValueError:
            raise KafkaError(
                "INVALID_CONFIG",
                f"Invalid value {value} for configuration {key}: {key} must be the literal '*' "
                "or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            ) from None
    elif key in _LONG_BROKER_CONFIGS:
        try:
            if int(value) < 0:
                raise ValueError
        except ValueError:
            raise KafkaError(
                "INVALID_CONFIG",
                f"Invalid value {value} for configuration {key}: Not a number of type LONG",
            ) from None


class EmulatedCluster:
    """The cluster state and Kafka's controller over it. Thread-safe: every method locks."""

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
        self._reassignments: dict[TopicPartition, _Reassignment] = {}
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
            self.log_dirs.add_broker(b.id, b.log_dirs or (LogDir(LOG_DIR, b.capacity.disk_bytes),))
        self._log_dirs_at = self._time
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

    # -- reading ---------------------------------------------------------------------------
    @property
    def now(self) -> float:
        """The simulation time the state reflects (clock time at the last tick)."""
        return self._time

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

    def topic_config(self, topic: str) -> dict[str, str]:
        with self.lock:
            return dict(self._topic_configs.get(topic, {}))

    def broker_config(self, broker_id: int | None) -> dict[str, str]:
        with self.lock:
            return dict(self._broker_configs.get(broker_id, {}))

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

    def fail_log_dir(self, broker_id: int, path: str, failed: bool = True) -> None:
        """A disk fails (KIP-112): the directory goes offline and its replicas go offline on
        that broker (they leave ISRs, lose leadership); the broker stays registered."""
        with self.lock:
            self.tick()
            dirs = self.log_dirs.dirs.get(broker_id, {})
            if path not in dirs:
                raise ValidationError(f"broker {broker_id} has no log directory {path!r}")
            if dirs[path].online != failed:
                return
            tps = self.log_dirs.set_online(broker_id, path, not failed)
            self._dirty = True
            self._emit("log_dir_fault", broker=broker_id, path=path, failed=failed)
            if not self._online(broker_id):
                return
            if failed:
                self._replicas_offline(broker_id, tps)
            else:
                self._replicas_online(broker_id, tps)

    # -- time and replication --------------------------------------------------------------
    def tick(self) -> None:
        """Advance the simulation to ``clock.now()``. Without a clock move it only settles
        what is due now (a replica with nothing to fetch joins the ISR at once)."""
        with self.lock:
            target = self.clock.now()
            if target > self._time or self._dirty:
                self._advance(max(target, self._time))
            self._copy_log_dirs()

    def _copy_log_dirs(self) -> None:
        """Future replicas copy up to now at their brokers' alter-log-dirs throttle."""
        dt = self._time - self._log_dirs_at
        self._log_dirs_at = self._time
        if not self.log_dirs.futures:
            return
        rates = {}
        sizes = {}
        for tp, b in self.log_dirs.futures:
            p = self.partitions[tp]
            self._sync(p, self._time)
            sizes[tp, b] = p.replica_bytes.get(b, 0.0)
            rates[b] = self._throttle_rate(b, LOG_DIRS_RATE)
        for tp, b in self.log_dirs.advance(dt, rates, sizes):
            self._emit("log_dir_swapped", tp, broker=b, path=self.log_dirs.placement[tp, b])

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

    def _fetches(self) -> list[_Fetch]:
        out = []
        for tp in self._lagging:
            p = self.partitions[tp]
            self._sync(p, self._time)
            for r in p.replicas:
                if r not in p.isr and self._online(r, p.tp):
                    lag = max(p.log_end_bytes - p.replica_bytes.get(r, 0.0), 0.0)
                    out.append(_Fetch(tp, r, p.leader, lag, p.bytes_in_per_sec))
        return out

    def _reallocate(self) -> None:
        """New fetch rates from now on, and the moment each fetch will catch up."""
        fetches = self._fetches()  # syncs every lagging partition under the old rates first
        rates = self._allocate(fetches)
        self._rates = {(f.tp, f.dest): rate for f, rate in zip(fetches, rates)}
        self._allocation += 1
        self._allocated_at = self._time
        self._dirty = self._redistribute = False
        self._catchups = []
        for seq, (f, rate) in enumerate(zip(fetches, rates)):
            if f.lag <= _tolerance(self.partitions[f.tp]) or math.isinf(rate):
                due = self._time
            elif rate > f.growth:
                due = self._time + f.lag / (rate - f.growth)
            else:
                continue  # never catches up at this rate
            self._catchups.append((due, seq, f.tp, f.dest, f.leader, self._allocation))
        heapq.heapify(self._catchups)

    def _next_catchup(self) -> float:
        while self._catchups and self._catchups[0][5] != self._allocation:
            heapq.heappop(self._catchups)
        return self._catchups[0][0] if self._catchups else math.inf

    def _advance(self, target: float) -> None:
        """Run replication up to ``target``, stopping exactly at each catch-up moment."""
        while True:
            redistribute_at = (self._allocated_at + REDISTRIBUTE_INTERVAL
                               if self._redistribute else math.inf)
            if self._dirty or self._time >= redistribute_at:
                self._reallocate()
                continue
            due = self._next_catchup()
            self._time = max(self._time, min(due, redistribute_at, target))
            if due <= self._time:
                self._catch_up(heapq.heappop(self._catchups))
            elif self._time >= target:
                for tp in self._lagging:  # fetch progress readable between ticks
                    self._sync(self.partitions[tp], self._time)
                return

    def _catch_up(self, entry: tuple) -> None:
        _, _, tp, dest, leader, _ = entry
        p = self.partitions[tp]
        if p.leader != leader or dest in p.isr or not self._online(dest, tp) or dest not in p.replicas:
            return
        self._sync(p, self._time)
        dirty = self._dirty
        self._join_isr(tp, dest)
        # Other rates stay valid (a catch-up only frees bandwidth); the freed share is handed
        # out at the next reallocation, at most REDISTRIBUTE_INTERVAL later.
        self._dirty = dirty
        self._redistribute = True

    def _allocate(self, fetches: list[_Fetch]) -> list[float]:
        """Max-min fair rates under every limit each fetch is subject to.

        Progressive filling: all unfrozen fetches rise together; the limit that saturates
        first freezes its fetches at that level. A heap of saturation levels keeps this
        O(m log m) in the number of (fetch, limit) pairs.
        """
        keys_of: list[list[tuple[str, int]]] = []
        capacity: dict[tuple[str, int], float] = {}
        users: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, f in enumerate(fetches):
            keys = []
            for key, cap in self._limits(f):
                if not math.isinf(cap):
                    capacity[key] = cap
                    keys.append(key)
                    users[key].append(i)
            keys_of.append(keys)
        rates: list[float | None] = [None if keys else math.inf for keys in keys_of]
        active = {k: len(u) for k, u in users.items()}
        frozen_sum = dict.fromkeys(users, 0.0)
        version = dict.fromkeys(users, 0)
        heap = [(capacity[k] / n, 0, k) for k, n in active.items()]
        heapq.heapify(heap)
        while heap:
            level, ver, k = heapq.heappop(heap)
            if ver != version[k] or active[k] == 0:
                continue
            for i in users[k]:
                if rates[i] is not None:
                    continue
                rates[i] = level
                for k2 in keys_of[i]:
                    active[k2] -= 1
                    frozen_sum[k2] += level
                    if k2 != k and active[k2] > 0:
                        version[k2] += 1
                        saturation = (capacity[k2] - frozen_sum[k2]) / active[k2]
                        heapq.heappush(heap, (max(saturation, level), version[k2], k2))
        return [math.inf if r is None else r for r in rates]

    def _limits(self, f: _Fetch) -> list[tuple[tuple[str, int], float]]:
        dest, leader = self.brokers[f.dest], self.brokers[f.leader]
        limits = [
            (("in", dest.id), _bandwidth(dest.network_in_bytes_per_sec, dest.slow_factor)),
            (("out", leader.id), _bandwidth(leader.network_out_bytes_per_sec, leader.slow_factor)),
        ]
        if self._throttled(f.tp, FOLLOWER_THROTTLED_REPLICAS, dest.id):
            limits.append((("follower-throttle", dest.id),
                           self._throttle_rate(dest.id, FOLLOWER_THROTTLED_RATE)))
        if self._throttled(f.tp, LEADER_THROTTLED_REPLICAS, leader.id):
            limits.append((("leader-throttle", leader.id),
                           self._throttle_rate(leader.id, LEADER_THROTTLED_RATE)))
        return limits

    def _throttled(self, tp: TopicPartition, key: str, broker_id: int) -> bool:
        cache_key = (tp.topic, key)
        if cache_key not in self._throttle_cache:
            value = self._topic_configs.get(tp.topic, {}).get(key, "")
            try:
                self._throttle_cache[cache_key] = parse_replica_list(value)
            except ValueError:
                self._throttle_cache[cache_key] = frozenset()
        replicas = self._throttle_cache[cache_key]
        return replicas == ALL_REPLICAS or (tp.partition, broker_id) in replicas

    def _throttle_rate(self, broker_id: int, key: str) -> float:
        """The broker's own dynamic config, else the cluster default; unset = unlimited."""
        value = self._broker_configs.get(broker_id, {}).get(key)
        if value is None:
            value = self._broker_configs.get(None, {}).get(key)
        try:
            return float(int(value)) if value is not None else math.inf
        except ValueError:
            return math.inf

    def _join_isr(self, tp: TopicPartition, broker_id: int) -> None:
        """The follower reached the log end: the leader expands the ISR (AlterPartition)."""
        p = self.partitions[tp]
        p.replica_bytes[broker_id] = p.log_end_bytes
        self._emit("replica_caught_up", tp, broker=broker_id)
        self._change(p, isr=[*p.isr, broker_id])
        self._maybe_complete(tp)

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

    # -- faults ----------------------------------------------------------------------------
    def _broker(self, broker_id: int) -> EmulatedBroker:
        b = self.brokers.get(broker_id)
        if b is None:
            raise ValidationError(f"unknown broker {broker_id}")
        return b

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

    # -- controller --------------------------------------------------------------------------
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

    def load_assignment(self, tp: TopicPartition, replicas: list[int], adding: list[int],
                        removing: list[int]) -> None:
        """What a new ZooKeeper-mode controller reads from /brokers/topics at failover.

        Kafka 2.4+ resumes a reassignment from adding/removing (TRS = RS - RR); a topic znode
        rewritten to plain replicas (no adding/removing) ends any reassignment there, which is
        how operators cancelled ZooKeeper-mode reassignments. Replicas no longer listed stop.
        """
        with self.lock:
            self.tick()
            p = self.partitions.get(tp)
            if p is None or not replicas:
                return
            if (replicas, adding, removing) == (p.replicas, p.adding, p.removing):
                return
            if adding or removing:
                target = [r for r in replicas if r not in removing]
                self._reassignments[tp] = _Reassignment(target, "zk")
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

    def _stop_replica(self, p: EmulatedPartition, broker_id: int) -> None:
        """OfflineReplica then NonExistentReplica: leave the ISR, delete the data."""
        if broker_id in p.isr:
            isr = [r for r in p.isr if r != broker_id]
            if p.leader == broker_id:
                leader = self._first_eligible(p, [r for r in p.replicas if r in isr])
                self._change(p, leader=leader, isr=isr if leader != NO_LEADER else p.isr)
            else:
                self._change(p, isr=isr, bump_leader_epoch=self.mode == "zk")
        p.replica_bytes.pop(broker_id, None)

    # -- topics ----------------------------------------------------------------------------
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

    def _new_partition(self, topic: str, partition: int, replicas: list[int]) -> EmulatedPartition:
        """A partition as onNewPartitionCreation leaves it: leader = first live replica,
        ISR = live replicas."""
        live = [r for r in replicas if self._online(r)]
        p = EmulatedPartition(
            topic=topic, partition=partition, replicas=list(replicas), adding=[], removing=[],
            leader=live[0] if live else NO_LEADER, leader_epoch=0, partition_epoch=0, isr=live,
            log_end_bytes=0.0, replica_bytes={r: 0.0 for r in replicas}, bytes_in_per_sec=0.0,
            bytes_out_per_sec=0.0, synced_at=self._time,
        )
        self.partitions[p.tp] = p
        for r in replicas:
            self._by_broker[r].add(p.tp)
            self.log_dirs.place(p.tp, r)
        return p

    def _topic_exists(self, topic: str) -> bool:
        return topic in self.topic_ids

    def create_topic(self, name: str, assignment: dict[int, list[int]],
                     configs: dict[str, str] | None = None, *,
                     topic_id: str | None = None) -> None:
        """Create a topic with an explicit assignment; ``topic_id`` keeps an id already chosen
        (a topic znode that carries one), otherwise a new random id is drawn, as Kafka does."""
        with self.lock:
            self.tick()
            if not name or len(name) > 249 or name in (".", "..") or not _TOPIC_NAME.match(name):
                raise KafkaError("INVALID_TOPIC_EXCEPTION",
                                 f"Topic name {name!r} is illegal: it must be 1-249 characters "
                                 "of ASCII alphanumerics, '.', '_' and '-'.")
            if self._topic_exists(name):
                raise KafkaError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
            if not assignment:
                raise KafkaError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
            if sorted(assignment) != list(range(len(assignment))):
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 "partitions should be a consecutive 0-based integer sequence")
            for replicas in assignment.values():
                self._check_assignment(list(replicas))
            if len({len(r) for r in assignment.values()}) != 1:
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 "All partitions should have the same number of replicas")
            for key, value in (configs or {}).items():
                _validate_config(key, value)
            self.topic_ids[name] = topic_id or str(uuid.uuid4())
            if configs:
                self._topic_configs[name] = dict(configs)
                self._invalidate_throttles(name)
            created = [self._new_partition(name, i, list(assignment[i]))
                       for i in sorted(assignment)]
            self._emit("topic_created", topic=name, topic_id=self.topic_ids[name],
                       configs=dict(configs or {}), partitions=_states(created))

    def create_partitions(self, topic: str, new_assignment: dict[int, list[int]]) -> None:
        with self.lock:
            self.tick()
            if not self._topic_exists(topic):
                raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION",
                                 f"The topic '{topic}' does not exist.")
            if any(tp.topic == topic and (p.adding or p.removing)
                   for tp, p in self.partitions.items()):
                raise KafkaError("REASSIGNMENT_IN_PROGRESS",
                                 f"A partition reassignment is in progress for the topic '{topic}'.")
            count = sum(1 for tp in self.partitions if tp.topic == topic)
            if not new_assignment or sorted(new_assignment) != list(
                    range(count, count + len(new_assignment))):
                raise KafkaError("INVALID_PARTITIONS",
                                 f"New partitions of topic '{topic}' must be numbered from "
                                 f"{count} without gaps, got {sorted(new_assignment)}.")
            for replicas in new_assignment.values():
                self._check_assignment(list(replicas))
            created = [self._new_partition(topic, i, list(new_assignment[i]))
                       for i in sorted(new_assignment)]
            self._emit("partitions_created", topic=topic, partitions=_states(created))

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

    def _validate_zk(self, tp: TopicPartition, target: list[int]) -> None:
        """KafkaController.validateReplicas (API path only)."""
        if not target:
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "Empty replica list specified in partition reassignment.")
        if len(set(target)) != len(target):
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             "Duplicate replica ids in partition reassignment replica list: "
                             f"{_scala_seq(target)}")
        if any(r < 0 for r in target):
            raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                             f"Invalid broker id in replica list: {_scala_seq(target)}")
        p = self.partitions.get(tp)
        origin = [r for r in p.replicas if r not in p.adding] if p else []
        adding = [r for r in _distinct(target + origin) if r not in origin]
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
        new_rs = _distinct(target + origin)
        adding = [r for r in new_rs if r not in origin]
        removing = [r for r in new_rs if r not in target]
        superseded = [r for r in p.replicas if r not in new_rs]
        self._reassignments[tp] = _Reassignment(target, source, cancel)
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

    def _finish(self, tp: TopicPartition, ra: _Reassignment) -> None:
        kind = "reassignment_cancelled" if ra.cancel else "reassignment_completed"
        self._emit(kind, tp, replicas=list(ra.target), source=ra.source)

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
            ra = self._reassignments.pop(tp, _Reassignment(origin, "api"))
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
        self._reassignments[tp] = _Reassignment(target, "api")
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

    def _first_eligible_in(self, order: list[int], isr: list[int]) -> int:
        return next((r for r in order if r in isr and self._online(r)), NO_LEADER)

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

    # -- configs ---------------------------------------------------------------------------
    def _invalidate_throttles(self, topic: str) -> None:
        self._throttle_cache.pop((topic, LEADER_THROTTLED_REPLICAS), None)
        self._throttle_cache.pop((topic, FOLLOWER_THROTTLED_REPLICAS), None)

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        """Replace the topic's override map (ZooKeeper face: /config/topics/<t> was re-read).
        Accepted before the topic exists: AdminZkClient writes the config first."""
        with self.lock:
            self.tick()
            for key, value in config.items():
                _validate_config(key, value)
            self._topic_configs[topic] = dict(config)
            self._invalidate_throttles(topic)
            self._dirty = True
            self._emit("config_changed", topic=topic, entity_type="topics", entity_name=topic,
                       config=dict(config))

    def set_broker_config(self, broker: int | None, config: dict[str, str]) -> None:
        """Replace a broker's dynamic config map; None = the cluster default (<default>)."""
        with self.lock:
            self.tick()
            for key, value in config.items():
                _validate_config(key, value)
            self._broker_configs[broker] = dict(config)
            self._dirty = True
            self._emit("config_changed", broker=broker, entity_type="brokers",
                       entity_name="<default>" if broker is None else str(broker),
                       config=dict(config))

    def incremental_alter_configs(self, resource_type: str, name: str,
                                  ops: list[tuple[str, int, str | None]]) -> None:
        """IncrementalAlterConfigs on a "topic" or "broker" ("" = default): SET=0, DELETE=1,
        APPEND=2, SUBTRACT=3 (list values are comma-separated). All or nothing."""
        with self.lock:
            self.tick()
            if resource_type == "topic":
                if not self._topic_exists(name):
                    raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION",
                                     f"The topic '{name}' does not exist.")
                config = self.topic_config(name)
            elif resource_type == "broker":
                try:
                    broker = None if name == "" else int(name)
                except ValueError:
                    raise KafkaError("INVALID_REQUEST", f"Invalid broker id {name!r}") from None
                config = self.broker_config(broker)
            else:
                raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {resource_type!r}")
            for key, op, value in ops:
                config = _apply_op(config, key, op, value)
            if resource_type == "topic":
                self.set_topic_config(name, config)
            else:
                self.set_broker_config(broker, config)


def _apply_op(config: dict[str, str], key: str, op: int, value: str | None) -> dict[str, str]:
    config = dict(config)
    if op == 1:
        config.pop(key, None)
        return config
    if value is None:
        raise KafkaError("INVALID_REQUEST", f"Null value not supported for : {key}")
    if op == 0:
        config[key] = value
    elif op in (2, 3):
        items = [i for i in config.get(key, "").split(",") if i]
        given = [i for i in value.split(",") if i]
        if op == 2:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        config[key] = ",".join(items)
    else:
        raise KafkaError("INVALID_REQUEST", f"Unknown config operation {op} for {key}")
    _validate_config(key, config[key])
    return config


def _bandwidth(capacity: float, slow_factor: float) -> float:
    return math.inf if capacity <= 0 else capacity * slow_factor


def _tolerance(p: EmulatedPartition) -> float:
    """Lag that counts as caught up: float rounding over terabyte logs, never a real gap."""
    return max(1e-6, p.log_end_bytes * 1e-12)


def _states(partitions: list[EmulatedPartition]) -> dict[int, dict]:
    return {
        p.partition: {"replicas": list(p.replicas), "leader": p.leader,
                      "leader_epoch": p.leader_epoch, "isr": list(p.isr)}
        for p in partitions
    }
