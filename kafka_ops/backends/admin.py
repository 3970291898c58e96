"""The Admin API backend: KRaft and modern Kafka, reached only through the Kafka protocol.

confluent-kafka's AdminClient does most of the work (describe cluster/topics/configs,
incremental config changes for throttles, preferred leader election, topic and partition
creation). kafka-python's KafkaAdminClient is used only for what confluent-kafka 2.x lacks:
Alter/ListPartitionReassignments (KIP-455; None cancels) and DescribeLogDirs (partition sizes).

Like Kafka's reassign tool, bad input is refused before anything is sent (unknown broker,
duplicate replicas, nothing to cancel...), because the Admin API applies a request partition
by partition: a bad entry would otherwise leave the good ones applied.

Client settings use librdkafka's names and are passed through as Kafka's tools pass
--command-config (``debug`` included); the security ones (``security.protocol``, ``sasl.*``,
``ssl.*``) also go to kafka-python. Secrets never appear in ``repr``, logs or error messages.
Authentication, TLS and unreachable-host failures are named within seconds
(see admin_connect.py).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import ElectionType, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from confluent_kafka.admin import ConfigResource as CkConfigResource

from kafka_ops import kafka_rules, secrets
from kafka_ops.backends import log_dirs
from kafka_ops.backends.admin_connect import (
    PROBE_TIMEOUT_S,
    ClientErrors,
    attach_debug_log,
    check_client_settings,
    create_admin_client,
    named_error,
    probe,
)
from kafka_ops.backends.admin_errors import (
    backend_error,
    error_name,
    legacy_error,
    partition_names,
    raise_partition_errors,
)
from kafka_ops.backends.base import ConfigResource, OngoingReassignment
from kafka_ops.errors import (
    BackendError,
    BrokerNotAvailableError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.model import NO_LEADER, Broker, ClusterModel, Partition, TopicPartition

_LIBRDKAFKA_LOG = logging.getLogger(f"{__name__}.librdkafka")
secrets.filter_logger(_LIBRDKAFKA_LOG)
# Its failures become named errors; without a handler configured by the application (Airflow,
# a test), Python's last-resort handler would print them to stderr a second time.
_LIBRDKAFKA_LOG.addHandler(logging.NullHandler())

# librdkafka setting -> kafka-python KafkaAdminClient argument.
_KAFKA_PYTHON_SECURITY = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
}
_SECRET_ARGS = ("sasl_plain_password", "ssl_password")  # kafka-python names of secrets
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# ConfigEntry.source arrives as a plain int, not the ConfigSource enum.
_CONFIG_SOURCE = {"topic": ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
                  "broker": ConfigSource.DYNAMIC_BROKER_CONFIG.value}
_RESOURCE_TYPE = {"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER}


class AdminApiBackend:
    """A ClusterBackend speaking Kafka's Admin API to ``bootstrap_servers``."""

    supports_incremental_reassignment = True

    def __init__(
        self,
        bootstrap_servers: str,
        security: Mapping[str, str] | None = None,
        *,
        request_timeout_s: float = 30.0,
        client_id: str = "kafka-ops",
    ) -> None:
        if not bootstrap_servers or not bootstrap_servers.strip():
            raise ValidationError("bootstrap servers are empty; expected host:port[,host:port]")
        self.bootstrap_servers = bootstrap_servers
        self._security = _check_security(security or {})
        self._timeout = request_timeout_s
        self._client_id = client_id
        self._errors = ClientErrors()  # librdkafka's error callback: named failures
        self._connected = False
        if "debug" in self._security:
            attach_debug_log(_LIBRDKAFKA_LOG)
        # socket.timeout.ms bounds elect_leaders too: it crashes when given request_timeout
        # or operation_timeout (confluent-kafka 2.16.1), so it runs on the client's defaults.
        self._admin: AdminClient | None = create_admin_client({
            "client.id": client_id,
            "socket.timeout.ms": int(request_timeout_s * 1000),
            **self._security,
            "bootstrap.servers": bootstrap_servers,
            "logger": _LIBRDKAFKA_LOG,  # librdkafka's log lines go to Python logging, not stderr
            "error_cb": self._errors,
        })
        self._legacy: Any = None  # kafka-python KafkaAdminClient, created on first use

    @property
    def _client(self) -> AdminClient:
        """The open confluent-kafka client (a closed backend refuses every call)."""
        if self._admin is None:
            raise BackendError("the backend is closed")
        return self._admin

    def check_connection(self, timeout_s: float | None = None) -> None:
        """One DescribeCluster with librdkafka's errors watched: an AuthenticationError,
        TlsError or UnreachableError within seconds instead of a request timeout."""
        probe(self._client, self._errors, self.bootstrap_servers,
              min(self._timeout, PROBE_TIMEOUT_S) if timeout_s is None else timeout_s)
        self._connected = True

    def __repr__(self) -> str:
        protocol = self._security.get("security.protocol", "PLAINTEXT")
        return f"AdminApiBackend(bootstrap_servers={self.bootstrap_servers!r}, security={protocol})"

    def close(self) -> None:
        if self._legacy is not None:
            self._legacy.close()
            self._legacy = None
        self._admin = None  # the last reference: librdkafka's handle is destroyed now

    # -- reading ---------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterModel:
        self._live_brokers()  # first, for a controller failover (see _live_brokers)
        metadata = self._call("describe topics", lambda: self._client.list_topics(
            timeout=self._timeout))
        partitions: list[Partition] = []
        for topic in metadata.topics.values():
            if topic.error is not None:
                raise BackendError(f"describe topic {topic.topic!r}: {topic.error.str()}")
            partitions.extend(
                Partition(topic=topic.topic, partition=p.id, replicas=tuple(p.replicas),
                          leader=p.leader, isr=tuple(p.isrs))
                for p in topic.partitions.values()
            )
        partitions = _with_reassignments(partitions, self.list_reassignments())
        live = self._live_brokers()
        described = self._hosted_log_dirs(partitions, live)
        sizes = _sizes(described)
        partitions = [_with_size(p, sizes.get(p.tp, {})) for p in partitions]
        brokers = list(live.values())
        dead = {r for p in partitions for r in p.replicas} - set(live)
        brokers.extend(Broker(id=b, alive=False) for b in sorted(dead))
        model = ClusterModel(brokers, partitions, self._topic_configs(sorted(metadata.topics)))
        return log_dirs.with_log_dirs(model, described)

    def describe_partitions(self, partitions: Iterable[TopicPartition]) -> ClusterModel:
        """Live brokers and the given partitions only: their topics in one DescribeTopics
        request, log-dir sizes of just these replicas. Unknown topics are left out."""
        wanted = set(partitions)
        self._live_brokers()  # first, for a controller failover (see _live_brokers)
        topics = sorted({tp.topic for tp in wanted})
        found: list[Partition] = []
        if topics:
            futures = self._call("describe topics", lambda: self._client.describe_topics(
                TopicCollection(topics), request_timeout=self._timeout))
            for name, future in futures.items():
                try:
                    description = future.result(self._timeout)
                except KafkaException as exc:
                    if error_name(exc) in ("UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PART"):
                        continue  # deleted or never existed: left out, as the interface says
                    raise backend_error("describe topics", exc) from None
                except concurrent.futures.TimeoutError:
                    raise BackendError(f"describe topics: no answer within {self._timeout:g}s") from None
                found.extend(
                    Partition(topic=name, partition=p.id, replicas=tuple(n.id for n in p.replicas),
                              leader=p.leader.id if p.leader is not None else NO_LEADER,
                              isr=tuple(n.id for n in p.isr))
                    for p in description.partitions if TopicPartition(name, p.id) in wanted
                )
        live = self._live_brokers()
        described = self._hosted_log_dirs(found, live)
        sizes = _sizes(described)
        found = [_with_size(p, sizes.get(p.tp, {})) for p in found]
        brokers = list(live.values())
        dead = {r for p in found for r in p.replicas} - set(live)
        brokers.extend(Broker(id=b, alive=False) for b in sorted(dead))
        return log_dirs.with_log_dirs(ClusterModel(brokers, found), described)

    def _topic_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """Dynamic overrides of every topic, in one DescribeConfigs request."""
        if not topics:
            return {}
        resources = [CkConfigResource(ResourceType.TOPIC, t) for t in topics]
        futures = self._call("describe topic configs", lambda: self._client.describe_configs(
            resources, request_timeout=self._timeout))
        source = _CONFIG_SOURCE["topic"]
        configs = {}
        for resource, future in futures.items():
            entries = self._call("describe topic configs",
                                 lambda f=future: f.result(self._timeout))
            overrides = {k: e.value for k, e in sorted(entries.items())
                         if int(e.source) == source and e.value is not None}
            if overrides:
                configs[resource.name] = overrides
        return configs

    def _live_brokers(self) -> dict[int, Broker]:
        """The live brokers. Once more after a failure, with metadata fetched first:
        librdkafka caches the controller id and sends DescribeCluster there, so a dead
        controller fails the first try until a Metadata response names the new one.

        The cluster reads ask twice. First, before the partitions, as they always did: sent
        first after the controller died, a Metadata request timed out instead (the
        controller-death test, run with its file), where after the failed DescribeCluster it
        is answered. Then after the partitions, for the answer: the controller fences a dead
        broker before it shrinks the ISRs it was in, so a read that saw the shrunk ISR sees
        the broker gone (read only before, a broker dying in between looked alive beside ISRs
        without it: under-replicated, not offline, to the executor's pre-check)."""
        def describe():
            return self._client.describe_cluster(
                request_timeout=self._timeout).result(self._timeout)

        try:
            cluster = self._call("describe cluster", describe)
        except BackendError:
            self._call("describe cluster", lambda: self._client.list_topics(
                timeout=self._timeout))
            cluster = self._call("describe cluster", describe)
        return {n.id: Broker(id=n.id, rack=n.rack, host=n.host, port=n.port, alive=True)
                for n in cluster.nodes}

    def _hosted_log_dirs(
        self, partitions: list[Partition], live: Iterable[int]
    ) -> dict[int, log_dirs.BrokerLogDirs]:
        """Each live broker's log dirs, listing only the replicas it hosts: kafka-python
        expands "all" into every partition of the cluster (after describing every topic) for
        every broker."""
        hosted: dict[int, dict[str, list[int]]] = {b: {} for b in live}
        for p in partitions:
            for r in p.replicas:
                if r in hosted:
                    hosted[r].setdefault(p.topic, []).append(p.partition)
        wanted = [b for b, topics in hosted.items() if topics]
        return self._legacy_call("describe log dirs",
                                 lambda kp: log_dirs.describe(kp, wanted, hosted))

    def describe_log_dirs(self, brokers: Iterable[int] | None = None
                          ) -> dict[int, log_dirs.BrokerLogDirs]:
        """Every directory of the brokers (all live ones by default), with the replicas and
        future replicas in each."""
        wanted = sorted(self._live_brokers()) if brokers is None else list(brokers)
        return self._legacy_call("describe log dirs", lambda kp: log_dirs.describe(kp, wanted))

    def alter_replica_log_dirs(self, moves: Mapping[tuple[TopicPartition, int], str]
                               ) -> dict[tuple[TopicPartition, int], str | None]:
        """AlterReplicaLogDirs: move each (partition, broker) replica into the directory.
        Returns Kafka's error name per replica, None where accepted (NOT_LEADER_OR_FOLLOWER
        means the broker does not host it yet; it will place it there when it does)."""
        return self._legacy_call("alter replica log dirs", lambda kp: log_dirs.alter(kp, moves))

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        from kafka import TopicPartition as KpTopicPartition

        wanted = None if partitions is None else [KpTopicPartition(*tp) for tp in partitions]
        if wanted == []:
            return {}
        listed = self._legacy_call("list reassignments",
                                   lambda kp: kp.list_partition_reassignments(wanted))
        ongoing = {}
        for ktp, state in listed.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            ongoing[tp] = OngoingReassignment(
                tp=tp, replicas=tuple(state["replicas"]), adding=tuple(state["adding_replicas"]),
                removing=tuple(state["removing_replicas"]))
        return dict(sorted(ongoing.items()))

    def describe_configs(self, resource: ConfigResource) -> dict[str, str]:
        self._check_broker_reachable(resource)
        ck = CkConfigResource(_RESOURCE_TYPE[resource.type], resource.name)
        entries = self._call(f"describe configs of {resource.type} {resource.name!r}",
                             lambda: self._client.describe_configs(
                                 [ck], request_timeout=self._timeout)[ck].result(self._timeout))
        source = _CONFIG_SOURCE[resource.type]
        return {name: e.value for name, e in sorted(entries.items())
                if int(e.source) == source and e.value is not None}

    # -- changing --------------------------------------------------------------------------
    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
    ) -> None:
        if sorted(assignment) != list(range(len(assignment))) or not assignment:
            raise ValidationError(
                f"topic {topic!r}: partition ids must be 0..n-1, got {sorted(assignment)}")
        replicas = {TopicPartition(topic, p): list(r) for p, r in assignment.items()}
        _check_replica_lists(replicas, self._live_brokers())
        new = NewTopic(topic, num_partitions=len(assignment),
                       replica_assignment=[list(assignment[p]) for p in range(len(assignment))],
                       config=dict(config or {}))
        futures = self._call(f"create topic {topic!r}",
                             lambda: self._client.create_topics(
                                 [new], request_timeout=self._timeout))
        self._call(f"create topic {topic!r}", lambda: futures[topic].result(self._timeout))

    def create_partitions(self, topic: str, new_assignment: Mapping[int, Sequence[int]]) -> None:
        if not new_assignment:
            raise ValidationError(f"topic {topic!r}: no partitions to add")
        metadata = self._call(f"describe topic {topic!r}", lambda: self._client.list_topics(
            topic=topic, timeout=self._timeout))
        described = metadata.topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise ValidationError(f"unknown topic {topic!r}")
        current = len(described.partitions)
        expected = list(range(current, current + len(new_assignment)))
        if sorted(new_assignment) != expected:
            raise ValidationError(
                f"topic {topic!r} has {current} partitions: new partition ids must be "
                f"{expected[0]}..{expected[-1]}, got {sorted(new_assignment)}")
        replicas = {TopicPartition(topic, p): list(r) for p, r in new_assignment.items()}
        _check_replica_lists(replicas, self._live_brokers())
        new = NewPartitions(topic, current + len(new_assignment),
                            replica_assignment=[list(new_assignment[p]) for p in expected])
        futures = self._call(f"create partitions of {topic!r}",
                             lambda: self._client.create_partitions(
                                 [new], request_timeout=self._timeout))
        self._call(f"create partitions of {topic!r}",
                   lambda: futures[topic].result(self._timeout))

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        from kafka import TopicPartition as KpTopicPartition

        if not targets:
            raise ValidationError("Partition reassignment list cannot be empty")
        moves = {tp: list(r) for tp, r in targets.items() if r is not None}
        cancels = [tp for tp, r in targets.items() if r is None]
        _check_replica_lists(moves, self._live_brokers())
        self._check_partitions_exist(targets)
        if cancels:
            ongoing = self.list_reassignments(cancels)
            idle = [tp for tp in cancels if tp not in ongoing]
            if idle:
                raise NoReassignmentInProgressError(
                    f"No partition reassignment is in progress for {partition_names(idle)}: "
                    "nothing to cancel")
        request = {KpTopicPartition(tp.topic, tp.partition): (None if r is None else list(r))
                   for tp, r in targets.items()}
        results = self._legacy_call(
            "alter reassignments",
            lambda kp: kp.alter_partition_reassignments(request, int(self._timeout * 1000)))
        failed = {TopicPartition(k.topic, k.partition): err for k, err in results.items()
                  if err is not None}
        if failed:
            raise_partition_errors("alter reassignments", failed)

    def alter_configs(
        self,
        resource: ConfigResource,
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
    ) -> None:
        set_configs = dict(set_configs or {})
        delete = sorted(set(delete_configs))
        both = sorted(set(set_configs) & set(delete))
        if both:
            raise ValidationError(f"configs both set and deleted: {', '.join(both)}")
        if not set_configs and not delete:
            return
        self._check_broker_reachable(resource)
        entries = [ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET)
                   for k, v in sorted(set_configs.items())]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                    for k in delete]
        ck = CkConfigResource(_RESOURCE_TYPE[resource.type], resource.name,
                              incremental_configs=entries)
        what = f"alter configs of {resource.type} {resource.name!r}"
        futures = self._call(what, lambda: self._client.incremental_alter_configs(
            [ck], request_timeout=self._timeout))
        self._call(what, lambda: futures[ck].result(self._timeout))

    def elect_preferred_leaders(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        # confluent-kafka refuses duplicates (ValueError): ask once per partition.
        wanted = [CkTopicPartition(*tp) for tp in dict.fromkeys(TopicPartition(*tp)
                                                                  for tp in partitions)]
        if not wanted:
            return {}
        # No request_timeout/operation_timeout here: confluent-kafka 2.16.1 crashes on them
        # (SystemError); socket.timeout.ms, set at construction, bounds the call instead.
        results = self._call("elect preferred leaders", lambda: self._client.elect_leaders(
            ElectionType.PREFERRED, wanted).result(self._timeout + 5))
        outcome: dict[TopicPartition, str | None] = {}
        for ctp, error in results.items():
            name = None
            if error is not None:
                name = error_name(error)
                if name == "ELECTION_NOT_NEEDED":
                    name = None
            outcome[TopicPartition(ctp.topic, ctp.partition)] = name
        return dict(sorted(outcome.items()))

    # -- plumbing --------------------------------------------------------------------------
    def _check_broker_reachable(self, resource: ConfigResource) -> None:
        """A broker's own configs are served only by that broker (Kafka routes them there):
        fail at once for a dead one instead of waiting out the request timeout."""
        if resource.type != "broker" or resource.name == "":
            return
        if not resource.name.isdigit():
            raise ValidationError(
                f"broker config resource needs a broker id, not {resource.name!r}")
        if int(resource.name) not in self._live_brokers():
            raise BrokerNotAvailableError(
                f"broker {resource.name} is not alive: the Admin API reads and changes a "
                "broker's configs through that broker only")

    def _check_partitions_exist(self, targets: Iterable[TopicPartition]) -> None:
        topics = sorted({tp.topic for tp in targets})
        futures = self._call("describe topics", lambda: self._client.describe_topics(
            TopicCollection(topics), request_timeout=self._timeout))
        counts = {}
        for topic, future in futures.items():
            try:
                counts[topic] = len(future.result(self._timeout).partitions)
            except KafkaException as exc:
                if error_name(exc) != "UNKNOWN_TOPIC_OR_PARTITION":
                    raise backend_error("describe topics", exc) from None
            except concurrent.futures.TimeoutError:
                raise BackendError(
                    f"describe topics: no answer within {self._timeout:g}s") from None
        unknown = [tp for tp in targets if not 0 <= tp.partition < counts.get(tp.topic, 0)]
        if unknown:
            raise ValidationError(f"unknown partition(s): {partition_names(unknown)}")

    def _call(self, what: str, fn):
        if self._admin is None:
            raise BackendError(f"{what}: the backend is closed")
        try:
            return fn()
        except KafkaException as exc:
            named = named_error(self._errors.snapshot(), self.bootstrap_servers, all_down=True)
            raise (named or backend_error(what, exc)) from None
        except concurrent.futures.TimeoutError:
            named = named_error(self._errors.snapshot(), self.bootstrap_servers, all_down=True)
            raise (named or BackendError(f"{what}: no answer within {self._timeout:g}s")) from None
        finally:
            self._client.poll(0)  # serves queued librdkafka log lines to the logger

    def _legacy_call(self, what: str, fn):
        """Run a kafka-python call; once more after a connection failure, with the controller
        looked up again (kafka-python caches it, and it may have died)."""
        import kafka.errors as kp_errors

        retriable = (kp_errors.KafkaConnectionError, kp_errors.NodeNotReadyError,
                     kp_errors.UnknownBrokerIdError, kp_errors.NotControllerError,
                     kp_errors.KafkaTimeoutError, kp_errors.RequestTimedOutError)
        client = self._kafka_python()
        for attempt in (1, 2):
            try:
                return fn(client)
            except retriable as exc:
                if attempt == 2:
                    raise BackendError(f"{what}: {type(exc).__name__}: {exc}") from None
                self._refresh_legacy_metadata(client)
            except kp_errors.KafkaError as exc:
                raise legacy_error(what, exc) from None
        raise AssertionError("unreachable")

    def _refresh_legacy_metadata(self, client) -> None:
        """kafka-python caches the broker list and the controller id: after a broker death or
        restart, fetch them again (its private handles; there is no public refresh)."""
        client._controller_id = None
        refreshed = threading.Event()
        client._manager.cluster.request_update().add_both(lambda _: refreshed.set())
        refreshed.wait(self._timeout)

    def _kafka_python(self):
        if self._legacy is None:
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError as KpKafkaError

            if not self._connected:  # kafka-python would only say KafkaTimeoutError
                self.check_connection()
            kwargs = kafka_python_security(self._security)
            try:
                self._legacy = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap_servers.split(","),
                    client_id=self._client_id,
                    request_timeout_ms=int(self._timeout * 1000),
                    bootstrap_timeout_ms=int(self._timeout * 1000),
                    **kwargs,
                )
            except KpKafkaError as exc:
                raise BackendError(
                    f"cannot connect to {self.bootstrap_servers} with kafka-python (librdkafka "
                    f"could): {type(exc).__name__}; are the security settings supported by "
                    "kafka-python?") from None
        return self._legacy


def kafka_python_security(security: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python KafkaAdminClient arguments for librdkafka-named security settings (also
    the ZooKeeper backend's, for log dirs over the Admin API), its secrets masked in its logs."""
    kwargs: dict[str, Any] = {_KAFKA_PYTHON_SECURITY[k]: v for k, v in _check_security(security).items()
                              if k in _KAFKA_PYTHON_SECURITY}
    if "ssl_check_hostname" in kwargs:
        kwargs["ssl_check_hostname"] = kwargs["ssl_check_hostname"].lower() == "https"
    _install_redaction(kwargs.get(k, "") for k in _SECRET_ARGS)
    return kwargs


def _check_security(security: Mapping[str, str]) -> dict[str, str]:
    """Any client setting passes (librdkafka names an unknown one); the protocol is checked
    here because kafka-python gets it too."""
    security = check_client_settings(security)
    protocol = security.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise ValidationError(
            f"unknown security.protocol {protocol!r}; expected one of {', '.join(_PROTOCOLS)}")
    checked = {k: str(v) for k, v in security.items()}
    if "security.protocol" in checked:
        checked["security.protocol"] = protocol
    return checked


def _check_replica_lists(
    targets: Mapping[TopicPartition, Sequence[int]], live: Mapping[int, Broker]
) -> None:
    """Kafka's reassign-tool checks, before anything is sent."""
    for tp, replicas in sorted(targets.items()):
        if not replicas:
            raise InvalidReplicaAssignmentError(f"empty replica list for partition {tp}")
        repeated = kafka_rules.duplicate_replicas(replicas)
        if repeated:
            raise InvalidReplicaAssignmentError(
                f"duplicate replica {repeated[0]} in the replica list of partition {tp}: "
                f"{list(replicas)}")
    unknown = sorted({r for rs in targets.values() for r in rs} - set(live))
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"unknown broker id(s) {', '.join(map(str, unknown))}: not among the cluster's live "
            f"brokers {sorted(live)}")


def _sizes(described: Mapping[int, log_dirs.BrokerLogDirs]) -> dict[TopicPartition, dict[int, int]]:
    sizes: dict[TopicPartition, dict[int, int]] = {}
    for broker, d in described.items():
        for tp, size in d.sizes.items():
            sizes.setdefault(tp, {})[broker] = size
    return sizes


def _with_size(partition: Partition, sizes: Mapping[int, int]) -> Partition:
    if not sizes:
        return partition
    size = sizes.get(partition.leader, max(sizes.values()))
    return dataclasses.replace(partition, size_bytes=size)


def _with_reassignments(
    partitions: list[Partition], ongoing: Mapping[TopicPartition, OngoingReassignment]
) -> list[Partition]:
    """Kafka's AR/RR (ListPartitionReassignments) on the partitions moving now; their replicas
    are the full in-flight set the listing gives (original and target)."""
    if not ongoing:
        return partitions
    out = []
    for p in partitions:
        moving = ongoing.get(p.tp)
        out.append(p if moving is None else dataclasses.replace(
            p, replicas=moving.replicas, adding_replicas=moving.adding,
            removing_replicas=moving.removing))
    return out


def _install_redaction(values: Iterable[str]) -> None:
    """Register the secrets and put the redacting filter on every kafka-python logger (they
    exist once its modules are imported, which importing the client does)."""
    import kafka.admin  # noqa: F401  (creates the loggers)

    for value in values:
        secrets.register(value)
    for name in list(logging.Logger.manager.loggerDict):
        if name == "kafka" or name.startswith("kafka."):
            secrets.filter_logger(logging.getLogger(name))
