"""The ZooKeeper backend: ZooKeeper-mode Kafka (up to 3.9) read and changed through its znodes.

It does what Kafka's own ZooKeeper-mode tools did (``AdminZkClient``, ``ReassignPartitionsCommand
--zookeeper`` of 2.8, ``kafka-preferred-replica-election``), with their checks and messages: the
controller watches the znodes we write and does the work. Usage::

    backend = ZooKeeperBackend("zk1:2181,zk2:2181/kafka")
    cluster = backend.describe_cluster()
    backend.alter_reassignments({TopicPartition("orders", 0): [4, 5, 6]})

Reads of whole clusters (130,000 partitions) use ZooKeeper's multiRead, falling back to
pipelined asynchronous gets (see ``zk_read``): sequential gets run at a few thousand per
second. Every read-modify-write is versioned and re-run on a concurrent change (kazoo's
Counter recipe), so we never overwrite what the controller wrote in between.

Cancelling: ZooKeeper mode has no cancel API. We do what operators did: drop the partitions from
/admin/reassign_partitions, rewrite each topic znode to its original replicas (RS minus AR, no
AR/RR), then delete /controller (``force_controller_failover``: a cluster-wide controller
election behind a per-partition call) so a new controller reloads the topic znodes and stops
the moves. The replicas already created on target brokers are deleted by that controller.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.watchers import ChildrenWatch
from kazoo.retry import ForceRetryError, KazooRetry, RetryFailedError

from kafka_ops import secrets
from kafka_ops.backends import log_dirs
from kafka_ops.backends import zk_checks as checks
from kafka_ops.backends import zk_paths as zk
from kafka_ops.backends.admin_connect import check_client_settings
from kafka_ops.backends.base import ConfigResource, OngoingReassignment
from kafka_ops.backends.zk_connect import ZooKeeperAuth, validate_zookeeper_connect
from kafka_ops.backends.zk_read import ZnodeReader
from kafka_ops.errors import (
    AdminOperationError,
    BackendError,
    ClusterStateError,
    InvalidReplicaAssignmentError,
    KafkaOpsError,
    NoReassignmentInProgressError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")


# kazoo logs every request at DEBUG, Auth packets included ("user:password"): its log records
# go through the redacting filter, which masks every registered password.
_kazoo_log = logging.getLogger(f"{__name__}.kazoo")
secrets.filter_logger(_kazoo_log)


#: A lost connection or session: wait for kazoo to reconnect (a new session after expiry) and
#: run the call again, reading the state afresh. Every write below is versioned or checks
#: for its own earlier effect, so a call replayed after its reply was lost is safe.
_CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, OperationTimeoutError)
_replaying = threading.local()


def _translate_errors(method: Callable[..., T]) -> Callable[..., T]:
    """ZooKeeper failures become BackendError with a one-line message (no kazoo tracebacks);
    connection and session losses are ridden out up to ``reconnect_timeout_s``."""

    @functools.wraps(method)
    def wrapper(self: ZooKeeperBackend, *args: Any, **kwargs: Any) -> T:
        what = method.__name__
        outermost = not getattr(_replaying, "active", False)
        deadline = time.monotonic() + self.reconnect_timeout_s
        try:
            _replaying.active = True
            while True:
                try:
                    return method(self, *args, **kwargs)
                except _CONNECTION_ERRORS as e:
                    if not outermost:
                        raise  # the outermost call replays the whole operation
                    log.warning("ZooKeeper %s: %s; waiting for a reconnection to retry",
                                what, type(e).__name__)
                    self._wait_connected(deadline, what, e)
        except KafkaOpsError:
            raise
        except NoAuthError:
            raise BackendError(
                f"ZooKeeper refused {what} at {self.hosts} (NoAuth): "
                "the credentials lack permission"
            ) from None
        except RetryFailedError:
            raise BackendError(
                f"{what} gave up: the znodes kept changing or ZooKeeper kept failing"
            ) from None
        except (KazooException, KazooTimeoutError) as e:
            raise BackendError(
                f"ZooKeeper {what} failed at {self.hosts}: {type(e).__name__} {e}".rstrip()
            ) from None
        finally:
            if outermost:
                _replaying.active = False

    return wrapper


class ZooKeeperBackend:
    """A ClusterBackend on ZooKeeper-mode Kafka; connects on construction, ``close()`` when done.

    ``election_timeout_s`` bounds the wait for the controller to act on a preferred leader
    election. ``multi_read=False`` skips ZooKeeper 3.6's multiRead (detected anyway: an older
    server makes us fall back to pipelined gets). Extra beyond the protocol: ``watch_brokers``
    (broker liveness) and ``wait_for_brokers``.
    """

    supports_incremental_reassignment = False

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout_s: float = 18.0,
        connect_timeout_s: float = 15.0,
        auth: ZooKeeperAuth | None = None,
        election_timeout_s: float = 30.0,
        multi_read: bool = True,
        reconnect_timeout_s: float | None = None,
        bootstrap_servers: str | None = None,
        security: Mapping[str, str] | None = None,
    ) -> None:
        """``bootstrap_servers`` and ``security`` are for log directories only (ZooKeeper does
        not hold them; Kafka's reassign tool takes --bootstrap-server and --command-config for
        them too): by default the live brokers' endpoints registered in ZooKeeper, and the
        client settings (librdkafka names: ``security.protocol``, ``sasl.*``, ``ssl.*``) of
        their listener."""
        validate_zookeeper_connect(hosts)
        self.hosts = hosts
        self.bootstrap_servers = bootstrap_servers
        self._security = check_client_settings(security or {})
        self._log_dir_client: Any = None
        # Long enough for a session to expire and a new one to be made (Kafka's brokers do
        # the same), short enough that a ZooKeeper gone for good is reported.
        self.reconnect_timeout_s = (2 * session_timeout_s + connect_timeout_s
                                    if reconnect_timeout_s is None else reconnect_timeout_s)
        self.election_timeout_s = election_timeout_s
        options: dict[str, Any] = {}
        if auth is not None and auth.scheme == "digest":
            options["auth_data"] = [("digest", f"{auth.username}:{auth.password}")]
        elif auth is not None:
            if importlib.util.find_spec("puresasl") is None:
                raise ValidationError(
                    "SASL to ZooKeeper needs the pure-sasl package (pip install pure-sasl)"
                )
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": auth.username,
                "password": auth.password,
            }
        if auth is not None and auth.password:
            secrets.register(auth.password)
        # Retries here are for concurrent changes (ForceRetryError); connection and session
        # losses go up to _translate_errors, which waits for a reconnection and replays.
        self._retry = KazooRetry(max_tries=20, delay=0.02, backoff=2, max_delay=1.0,
                                 ignore_expire=False)
        self._retry.retry_exceptions = ()
        self._client = KazooClient(
            hosts=hosts, timeout=session_timeout_s, logger=_kazoo_log, **options
        )
        try:
            self._client.start(timeout=connect_timeout_s)
        except KazooTimeoutError:
            self.close()
            raise BackendError(
                f"cannot connect to ZooKeeper at {hosts} within {connect_timeout_s:g}s"
            ) from None
        except KazooException as e:  # e.g. AuthFailedError
            self.close()
            raise BackendError(
                f"cannot connect to ZooKeeper at {hosts}: {type(e).__name__}"
            ) from None
        self._reader = ZnodeReader(self._client, multi_read)

    def __repr__(self) -> str:
        return f"ZooKeeperBackend({self.hosts!r})"

    def _wait_connected(self, deadline: float, what: str, cause: Exception) -> None:
        """Until kazoo is connected again (it reconnects, with a new session after expiry)."""
        while not self._client.connected:
            if time.monotonic() > deadline:
                raise BackendError(
                    f"ZooKeeper {what}: no connection to {self.hosts} for "
                    f"{self.reconnect_timeout_s:g}s after {type(cause).__name__}; nothing more "
                    "was changed, run the command again once ZooKeeper is back") from None
            time.sleep(0.1)

    # -- log directories, over the Admin API ------------------------------------------------
    def describe_log_dirs(self, brokers: Iterable[int] | None = None
                          ) -> dict[int, log_dirs.BrokerLogDirs]:
        """Every directory of the brokers (all live ones by default), over DescribeLogDirs."""
        model_brokers = self._live_endpoints()
        wanted = sorted(model_brokers) if brokers is None else list(brokers)
        return self._over_admin_api("describe log dirs", lambda kp: log_dirs.describe(kp, wanted),
                                    model_brokers)

    def alter_replica_log_dirs(self, moves: Mapping[tuple[TopicPartition, int], str]
                               ) -> dict[tuple[TopicPartition, int], str | None]:
        """AlterReplicaLogDirs, sent to each replica's broker (Kafka's error name or None)."""
        return self._over_admin_api("alter replica log dirs", lambda kp: log_dirs.alter(kp, moves),
                                    self._live_endpoints())

    def _over_admin_api(self, what: str, call: Callable[[Any], Any], endpoints: Mapping[int, str]) -> Any:
        from kafka.errors import KafkaError as KpKafkaError

        try:
            return call(self._admin_client(endpoints))
        except KpKafkaError as exc:
            raise BackendError(f"{what}: {type(exc).__name__}: {exc}") from None

    def _live_endpoints(self) -> dict[int, str]:
        return {b.id: f"{b.host}:{b.port}" for b in self._registered_brokers().values()}

    def _admin_client(self, endpoints: Mapping[int, str]) -> Any:
        if self._log_dir_client is None:
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError as KpKafkaError

            servers = (self.bootstrap_servers.split(",") if self.bootstrap_servers
                       else sorted(endpoints.values()))
            if not servers:
                raise BackendError("no live broker registered in ZooKeeper to ask for log dirs")
            try:
                from kafka_ops.backends.admin import kafka_python_security  # confluent-kafka: lazily

                self._log_dir_client = KafkaAdminClient(
                    bootstrap_servers=servers, client_id="kafka-ops",
                    request_timeout_ms=15000, bootstrap_timeout_ms=15000,
                    **kafka_python_security(self._security))
            except KpKafkaError as exc:
                raise BackendError(f"log dirs need the Admin API of the brokers ({','.join(servers)}):"
                                   f" {type(exc).__name__}") from None
        return self._log_dir_client

    def close(self) -> None:
        if self._log_dir_client is not None:
            self._log_dir_client.close()
            self._log_dir_client = None
        self._client.stop()
        self._client.close()

    def __enter__(self) -> ZooKeeperBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- low-level reads -----------------------------------------------------------------
    def _get_many(self, paths: Sequence[str]) -> list[bytes | None]:
        """Data of each path (None where the znode does not exist), in few round trips."""
        return self._reader.read(paths)

    def _children(self, path: str) -> list[str]:
        try:
            return self._retry(self._client.get_children, path)
        except NoNodeError:
            raise ClusterStateError(
                f"no Kafka cluster at {self.hosts}: znode {path} does not exist (wrong chroot?)"
            ) from None

    def _read(self, path: str) -> bytes | None:
        try:
            return self._retry(self._client.get, path)[0]
        except NoNodeError:
            return None

    def _topics(self, names: Iterable[str]) -> dict[str, zk.TopicZnode]:
        names = list(names)
        paths = [zk.topic_path(t) for t in names]
        return {
            t: zk.decode_topic(p, data)
            for t, p, data in zip(names, paths, self._get_many(paths), strict=True)
            if data is not None
        }

    def _pending_zk_reassignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        data = self._read(zk.REASSIGN_PARTITIONS)
        return {} if data is None else zk.decode_reassignment(zk.REASSIGN_PARTITIONS, data)

    def _registered_brokers(self) -> dict[int, Broker]:
        """The brokers registered now (a znode deregistered between the listing and the read
        is left out).

        The cluster reads take these last, after the partition states: a dying broker's
        znode goes before the controller shrinks the ISRs it was in (its session expires, the
        controller sees the deletion, then writes the states), so a read that finds the
        shrunk ISR finds the broker gone too. Read first, a broker stopped between the two
        reads looked alive beside ISRs without it, and the executor's pre-check reported an
        under-replicated cluster instead of an offline broker (a fresh-clone CI run did)."""
        paths = [zk.broker_path(int(b)) for b in self._children(zk.BROKER_IDS) if b.isdigit()]
        return {b.id: b for b in (
            zk.decode_broker(p, data) for p, data in zip(paths, self._get_many(paths), strict=True)
            if data is not None)}

    def _live_broker_ids(self) -> set[int]:
        return {int(b) for b in self._children(zk.BROKER_IDS) if b.isdigit()}

    # -- versioned writes ----------------------------------------------------------------
    def _update(self, path: str, modify: Callable[[bytes | None], bytes | None]) -> None:
        """Read-modify-write ``path`` with its version; re-run on a concurrent change.

        ``modify`` gets the current data (None: no znode) and returns the new data, or None to
        delete the znode. Like kazoo's Counter: BadVersion and NodeExists force a retry.
        """

        def attempt() -> None:
            try:
                data, stat = self._client.get(path)
            except NoNodeError:
                data, stat = None, None
            new = modify(data)
            try:
                if stat is None:
                    if new is not None:
                        self._client.create(path, new, makepath=True)
                elif new is None:
                    self._client.delete(path, version=stat.version)
                else:
                    self._client.set(path, new, version=stat.version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                raise ForceRetryError() from None

        self._retry(attempt)

    def _notify_config_change(self, entity_type: str, name: str) -> None:
        self._client.create(
            zk.CONFIG_CHANGE_PREFIX,
            zk.encode_config_change(entity_type, name),
            sequence=True,
            makepath=True,
        )

    # -- reading the cluster -------------------------------------------------------------
    @_translate_errors
    def describe_cluster(self) -> ClusterModel:
        topics = self._topics(self._children(zk.TOPICS))
        ongoing = checks.ongoing_reassignments(topics, self._pending_zk_reassignment(), None)
        tps = [TopicPartition(t, p) for t, z in topics.items() for p in z.partitions]
        state_paths = [zk.partition_state_path(*tp) for tp in tps]
        partitions = []
        for tp, path, data in zip(tps, state_paths, self._get_many(state_paths), strict=True):
            moving = ongoing.get(tp)
            replicas: dict[str, Any] = (
                {"replicas": topics[tp.topic].partitions[tp.partition]} if moving is None else
                {"replicas": moving.replicas, "adding_replicas": moving.adding,
                 "removing_replicas": moving.removing})
            if data is None:  # the controller has not created the partition yet: no leader
                partitions.append(Partition(tp.topic, tp.partition, **replicas))
                continue
            state = zk.decode_partition_state(path, data)
            partitions.append(Partition(tp.topic, tp.partition, leader=state.leader,
                                        isr=state.isr, **replicas))
        config_paths = [zk.config_path(zk.CONFIG_TOPICS, t) for t in topics]
        configs = {
            t: zk.decode_config(p, data)
            for t, p, data in zip(topics, config_paths, self._get_many(config_paths), strict=True)
            if data is not None
        }
        brokers = self._registered_brokers()
        dead = {r for p in partitions for r in p.replicas} - brokers.keys()
        brokers.update({b: Broker(id=b, alive=False) for b in dead})
        return ClusterModel(brokers.values(), partitions, {t: c for t, c in configs.items() if c})

    @_translate_errors
    def describe_partitions(self, partitions: Iterable[TopicPartition]) -> ClusterModel:
        """Live brokers, and the state znodes of the given partitions only (their topics'
        znodes give the replicas): O(partitions asked), not O(cluster)."""
        wanted = sorted(set(partitions))
        topics = self._topics(sorted({tp.topic for tp in wanted}))
        tps = [tp for tp in wanted if tp.topic in topics and tp.partition in topics[tp.topic].partitions]
        state_paths = [zk.partition_state_path(*tp) for tp in tps]
        result = []
        for tp, path, data in zip(tps, state_paths, self._get_many(state_paths), strict=True):
            replicas = topics[tp.topic].partitions[tp.partition]
            if data is None:
                result.append(Partition(tp.topic, tp.partition, replicas))
                continue
            state = zk.decode_partition_state(path, data)
            result.append(Partition(tp.topic, tp.partition, replicas, state.leader, state.isr))
        brokers = self._registered_brokers()
        dead = {r for p in result for r in p.replicas} - brokers.keys()
        brokers.update({b: Broker(id=b, alive=False) for b in dead})
        return ClusterModel(brokers.values(), result)

    @_translate_errors
    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        """From the topic znodes' AR/RR (Kafka 2.4+); partitions only listed in
        /admin/reassign_partitions (not yet started, or Kafka < 2.4) are reported as the
        controller will run them: RS = TRS then ORS, AR = RS - ORS, RR = RS - TRS."""
        wanted = None if partitions is None else set(partitions)
        pending = self._pending_zk_reassignment()
        if wanted is None:
            names = self._children(zk.TOPICS)
        else:
            names = sorted({tp.topic for tp in wanted})
        return checks.ongoing_reassignments(self._topics(names), pending, wanted)

    # -- topics --------------------------------------------------------------------------
    @_translate_errors
    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
    ) -> None:
        """AdminZkClient.createTopicWithAssignment: config znode first, then the topic znode
        (v3, new topic id); the controller creates the partitions when it sees the child."""
        checks.validate_topic_name(topic)
        if sorted(assignment) != list(range(len(assignment))):
            raise InvalidReplicaAssignmentError(
                f"Partitions of topic '{topic}' should be a consecutive 0-based integer sequence, "
                f"got {sorted(assignment)}"
            )
        checks.validate_assignment(assignment, self._live_broker_ids(), first_partition=0)
        checks.validate_configs(config or {}, topic=True)
        existing = self._children(zk.TOPICS)
        if topic in existing:
            raise ValidationError(f"Topic '{topic}' already exists.")
        collides = [t for t in existing if t.replace(".", "_") == topic.replace(".", "_")]
        if collides:
            raise ValidationError(
                f"Topic '{topic}' collides with existing topics: {', '.join(collides)}"
            )
        # setOrCreateEntityConfigs: a leftover config of a deleted topic is overwritten.
        self._update(
            zk.config_path(zk.CONFIG_TOPICS, topic), lambda _: zk.encode_config(config or {})
        )
        znode = zk.TopicZnode(
            {p: tuple(r) for p, r in assignment.items()}, topic_id=zk.new_topic_id()
        )
        try:
            self._client.create(zk.topic_path(topic), zk.encode_topic(znode), makepath=True)
        except NodeExistsError:
            raise ValidationError(f"Topic '{topic}' already exists.") from None

    @_translate_errors
    def create_partitions(self, topic: str, new_assignment: Mapping[int, Sequence[int]]) -> None:
        """AdminZkClient.addPartitions: the topic znode gains the partitions (versioned write)."""
        if not new_assignment:
            raise ValidationError(f"no partitions to add to topic '{topic}'")
        live = self._live_broker_ids()
        pending = self._pending_zk_reassignment()

        def modify(data: bytes | None) -> bytes:
            if data is None:
                raise ValidationError(f"Topic '{topic}' does not exist.")
            znode = zk.decode_topic(zk.topic_path(topic), data)
            if any(znode.reassigning(p) for p in znode.partitions) or any(
                tp.topic == topic for tp in pending
            ):
                raise ReassignmentInProgressError(
                    f"A partition reassignment is in progress for the topic '{topic}'."
                )
            count = len(znode.partitions)
            if 0 not in znode.partitions:
                raise ClusterStateError(
                    f"Unexpected existing replica assignment for topic '{topic}', "
                    "partition id 0 is missing."
                )
            if sorted(new_assignment) != list(range(count, count + len(new_assignment))):
                raise InvalidReplicaAssignmentError(
                    f"Topic '{topic}' has {count} partitions: new partition ids must be "
                    f"{count}..{count + len(new_assignment) - 1}, got {sorted(new_assignment)}"
                )
            rf = len(znode.partitions[0])
            checks.validate_assignment(new_assignment, live, first_partition=count, expected_rf=rf)
            partitions = dict(znode.partitions) | {p: tuple(r) for p, r in new_assignment.items()}
            return zk.encode_topic(
                zk.TopicZnode(partitions, znode.adding, znode.removing, znode.topic_id)
            )

        self._update(zk.topic_path(topic), modify)

    # -- reassignments -------------------------------------------------------------------
    @_translate_errors
    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        """Submit (like ReassignPartitionsCommand --zookeeper) or cancel (all targets None)."""
        cancels = [tp for tp, r in targets.items() if r is None]
        if cancels and len(cancels) != len(targets):
            raise ValidationError(
                "ZooKeeper mode cannot cancel and submit reassignments in one call: cancel first"
            )
        if cancels:
            self._cancel(cancels)
        else:
            self._submit({tp: tuple(r) for tp, r in targets.items() if r is not None})

    def _submit(self, targets: dict[TopicPartition, tuple[int, ...]]) -> None:
        if self._client.exists(zk.REASSIGN_PARTITIONS):
            if self._pending_zk_reassignment() == targets:
                return  # ours: created before a lost connection hid the reply
            raise ReassignmentInProgressError("There is an existing assignment running.")
        if not targets:
            raise ValidationError("Partition reassignment list cannot be empty")
        for tp, replicas in targets.items():
            if not replicas:
                raise ValidationError(f"Partition replica list cannot be empty ({tp})")
        for tp, replicas in targets.items():
            dup = [str(b) for b, n in Counter(replicas).items() if n > 1]
            if dup:
                raise ValidationError(
                    "Partition replica lists may not contain duplicate entries: "
                    f"{tp} contains multiple entries for {','.join(dup)}"
                )
        topics = self._topics(sorted({tp.topic for tp in targets}))
        missing = [
            str(tp)
            for tp in targets
            if tp.topic not in topics or tp.partition not in topics[tp.topic].partitions
        ]
        if missing:
            raise ValidationError(
                f"The proposed assignment contains non-existent partitions: {','.join(missing)}"
            )
        live = self._live_broker_ids()
        unknown = sorted({b for r in targets.values() for b in r} - live)
        if unknown:
            raise ValidationError(
                "The proposed assignment contains non-existent brokerIDs: "
                + ",".join(map(str, unknown))
            )
        data = checks.fits_in_a_znode(
            zk.encode_reassignment(targets), f"a reassignment of {len(targets)} partitions"
        )
        try:
            self._client.create(zk.REASSIGN_PARTITIONS, data, makepath=True)
        except NodeExistsError:
            if self._pending_zk_reassignment() == targets:
                return
            raise ReassignmentInProgressError("There is an existing assignment running.") from None

    def _cancel(self, partitions: list[TopicPartition]) -> None:
        ongoing = self.list_reassignments(partitions)
        idle = [str(tp) for tp in partitions if tp not in ongoing]
        if idle:
            raise NoReassignmentInProgressError(
                f"No partition reassignment is in progress for {', '.join(idle)}: nothing to cancel"
            )
        cancelled = set(partitions)

        def drop_entries(data: bytes | None) -> bytes | None:
            if data is None:
                return None
            left = {
                tp: r
                for tp, r in zk.decode_reassignment(zk.REASSIGN_PARTITIONS, data).items()
                if tp not in cancelled
            }
            return zk.encode_reassignment(left) if left else None

        # First the znode, so that the controller failover below does not restart the moves.
        self._update(zk.REASSIGN_PARTITIONS, drop_entries)
        for topic in sorted({tp.topic for tp in partitions}):
            mine = {tp.partition for tp in partitions if tp.topic == topic}

            def revert(data: bytes | None, topic: str = topic, mine: set[int] = mine) -> bytes:
                if data is None:
                    raise ClusterStateError(
                        f"znode {zk.topic_path(topic)} vanished during the cancel"
                    )
                znode = zk.decode_topic(zk.topic_path(topic), data)
                partitions = dict(znode.partitions)
                for p in mine:
                    new = znode.adding.get(p, ())
                    partitions[p] = tuple(r for r in partitions[p] if r not in new)
                adding = {p: r for p, r in znode.adding.items() if p not in mine}
                removing = {p: r for p, r in znode.removing.items() if p not in mine}
                return zk.encode_topic(zk.TopicZnode(partitions, adding, removing, znode.topic_id))

            self._update(zk.topic_path(topic), revert)
        self.force_controller_failover(f"cancel the reassignment of {len(partitions)} partitions")
        log.info("cancelled the reassignment of %d partitions", len(partitions))

    def force_controller_failover(self, reason: str) -> None:
        """Delete ``/controller``: a CLUSTER-WIDE controller election, the only way ZooKeeper-mode
        Kafka has to make a controller re-read the topic znodes (how operators cancelled
        reassignments before KIP-455's API).

        Every per-partition cancel in ZooKeeper mode ends here, so cancelling one partition
        costs the whole cluster a failover: the new controller (lowest live broker that wins the
        race, controller epoch + 1) reloads every topic znode, resumes the reassignments still
        listed with adding/removing replicas and drops the ones rewritten to plain replicas.
        Produce and consume traffic is not interrupted, but admin requests are refused with
        NOT_CONTROLLER for the election's duration. Logged at WARNING with ``reason``. See
        docs/operator-guide.md ("Cancelling in ZooKeeper mode").
        """
        log.warning("deleting %s to force a controller failover (cluster-wide) to %s",
                    zk.CONTROLLER, reason)
        try:
            self._client.delete(zk.CONTROLLER)
        except NoNodeError:
            pass  # no controller now: the next one loads the reverted znodes anyway

    # -- configs -------------------------------------------------------------------------
    def _config_entity(self, resource: ConfigResource) -> tuple[str, str]:
        if resource.type == "topic":
            if not self._client.exists(zk.topic_path(resource.name)):
                raise ValidationError(f"Topic '{resource.name}' does not exist.")
            return zk.CONFIG_TOPICS, resource.name
        if resource.name in ("", zk.DEFAULT_BROKER):
            return zk.CONFIG_BROKERS, zk.DEFAULT_BROKER
        if not resource.name.isdigit():
            raise ValidationError(
                f"broker config resource needs a broker id, not {resource.name!r}"
            )
        return zk.CONFIG_BROKERS, str(int(resource.name))

    @_translate_errors
    def describe_configs(self, resource: ConfigResource) -> dict[str, str]:
        entity_type, name = self._config_entity(resource)
        path = zk.config_path(entity_type, name)
        data = self._read(path)
        return {} if data is None else zk.decode_config(path, data)

    @_translate_errors
    def alter_configs(
        self,
        resource: ConfigResource,
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
    ) -> None:
        """AdminZkClient.changeEntityConfig: versioned update of /config/<type>/<name>, then a
        /config/changes notice (v2) so the brokers reload it."""
        set_configs = dict(set_configs or {})
        delete = set(delete_configs)
        both = sorted(delete & set_configs.keys())
        if both:
            raise ValidationError(f"config keys both set and deleted: {', '.join(both)}")
        checks.validate_configs(set_configs, topic=resource.type == "topic")
        entity_type, name = self._config_entity(resource)
        path = zk.config_path(entity_type, name)

        def modify(data: bytes | None) -> bytes:
            config = {} if data is None else zk.decode_config(path, data)
            config.update(set_configs)
            for key in delete:
                config.pop(key, None)
            return zk.encode_config(config)

        self._update(path, modify)
        self._notify_config_change(entity_type, name)

    # -- leaders -------------------------------------------------------------------------
    @_translate_errors
    def elect_preferred_leaders(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """Write /admin/preferred_replica_election for the partitions whose preferred replica
        does not lead, wait (bounded) for the controller to delete it, then read the result."""
        wanted = list(dict.fromkeys(partitions))
        results: dict[TopicPartition, str | None] = {}
        leaders = self._leaders(wanted)
        for tp in wanted:
            if tp not in leaders:
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
        to_elect = [tp for tp, (leader, preferred) in leaders.items() if leader != preferred]
        if to_elect:
            try:
                data = zk.encode_preferred_election(to_elect)
                checks.fits_in_a_znode(data, f"an election of {len(to_elect)} partitions")
                self._client.create(zk.PREFERRED_REPLICA_ELECTION, data, makepath=True)
            except NodeExistsError:
                path = zk.PREFERRED_REPLICA_ELECTION
                running = zk.decode_preferred_election(path, self._read(path) or b"{}")
                if set(running) != set(to_elect):  # equal: ours, from before a lost connection
                    raise AdminOperationError(
                        "Preferred replica leader election currently in progress for "
                        f"{','.join(map(str, running))}. Aborting operation"
                    ) from None
            self._wait_deleted(zk.PREFERRED_REPLICA_ELECTION, self.election_timeout_s)
            leaders = self._leaders(wanted)
        for tp, (leader, preferred) in leaders.items():
            results[tp] = None if leader == preferred else "PREFERRED_LEADER_NOT_AVAILABLE"
        return {tp: results[tp] for tp in wanted}

    def _leaders(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """(leader, preferred leader) of each existing partition."""
        topics = self._topics(sorted({tp.topic for tp in partitions}))
        known = [
            tp
            for tp in partitions
            if tp.partition in getattr(topics.get(tp.topic), "partitions", {})
        ]
        paths = [zk.partition_state_path(*tp) for tp in known]
        out = {}
        for tp, path, data in zip(known, paths, self._get_many(paths), strict=True):
            leader = -1 if data is None else zk.decode_partition_state(path, data).leader
            replicas = topics[tp.topic].partitions[tp.partition]
            out[tp] = (leader, replicas[0] if replicas else -1)
        return out

    def _wait_deleted(self, path: str, timeout: float) -> None:
        gone = threading.Event()

        def watch(event: object) -> None:
            # Kazoo calls every registered watch once more when its session closes, and the
            # exists() below leaves one on the deleted znode: by then nobody waits, and on
            # the closed client exists() raised on kazoo's thread (a traceback after a
            # completed run, as the CLI exited).
            if gone.is_set():
                return
            try:
                if not self._client.exists(path, watch=watch):
                    gone.set()
            except KazooException:
                return  # the session ended while waiting: the timeout below says so

        if self._client.exists(path, watch=watch) is None:
            return
        if not gone.wait(timeout):
            raise BackendError(
                f"the controller did not process {path} within {timeout:g}s "
                "(is a controller running?); the znode is left for the next controller"
            )

    # -- liveness ------------------------------------------------------------------------
    def watch_brokers(self, callback: Callable[[frozenset[int]], None]) -> Callable[[], None]:
        """Call ``callback(live broker ids)`` now and on every registration or loss (a kazoo
        ChildrenWatch on /brokers/ids). Returns a function that stops the watch. The callback
        runs on kazoo's event thread: keep it short."""
        self._children(zk.BROKER_IDS)  # a clear error for a wrong chroot
        stopped = threading.Event()

        def on_change(children: list[str]) -> bool:
            if stopped.is_set():
                return False
            callback(frozenset(int(c) for c in children if c.isdigit()))
            return True

        ChildrenWatch(self._client, zk.BROKER_IDS, on_change)
        return stopped.set

    def wait_for_brokers(self, broker_ids: Iterable[int], alive: bool, timeout: float) -> None:
        """Block until the brokers are all registered (alive) or all gone (BackendError after
        ``timeout`` seconds)."""
        ids = frozenset(broker_ids)
        done = threading.Event()
        stop = self.watch_brokers(
            lambda live: done.set() if (ids <= live if alive else not ids & live) else None
        )
        try:
            if not done.wait(timeout):
                state = "registered" if alive else "deregistered"
                raise BackendError(f"brokers {sorted(ids)} not {state} within {timeout:g}s")
        finally:
            stop()
