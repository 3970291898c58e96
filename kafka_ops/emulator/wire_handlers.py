"""Request handlers of the wire face: Kafka's Admin API mapped onto the EmulatedCluster.

Each handler takes the decoded request (a kafka-python generated message object) and returns
the response object; ``wire_face`` does the framing. Semantics (validation, error codes) live
in the cluster core, which implements the ZooKeeper controller in mode "zk" and KRaft's
ReplicationControlManager in mode "kraft"; here only Kafka's routing and error placement are
added:

- controller-only APIs (CreateTopics, CreatePartitions, Alter/ListPartitionReassignments,
  ElectLeaders) answer NOT_CONTROLLER on any broker but the controller in mode "zk"; in mode
  "kraft" every broker accepts them, as KRaft brokers forward them to the quorum (KIP-590);
- broker-resource configs are answered only by that broker (or "" = cluster default), with
  Kafka's "Unexpected broker id" INVALID_REQUEST otherwise;
- DescribeLogDirs describes the receiving broker's own log directories (future replicas
  flagged is_future_key, an offline directory answered KAFKA_STORAGE_ERROR);
  AlterReplicaLogDirs moves replicas between the receiving broker's directories.

Advertised versions are each schema's ``validVersions`` (Kafka 4.0), never more: clients pick
features by version, and kafka-python infers the broker's release from this list.
"""

from __future__ import annotations

import hmac
import random
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_ops.assignment import BrokerMetadata, assign_new_partitions, assign_replicas_to_brokers
from kafka_ops.emulator.cluster import KafkaError
from kafka_ops.errors import KafkaOpsError
from kafka_ops.model import TopicPartition

API_VERSIONS_KEY = ApiVersionsRequest.API_KEY
SASL_HANDSHAKE_KEY = SaslHandshakeRequest.API_KEY
SASL_AUTHENTICATE_KEY = SaslAuthenticateRequest.API_KEY

NONE = 0
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type
# DescribeConfigs config_source values (DescribeConfigsResponse.json).
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
# AclOperation bit positions reported as "authorized" (the emulator has no ACLs: all allowed).
# Cluster: CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE.
_CLUSTER_OPERATIONS = {5, 7, 8, 9, 10, 11, 12}
_TOPIC_OPERATIONS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ WRITE CREATE DELETE ALTER DESCRIBE *_CONFIGS


@dataclass
class RequestContext:
    """What a handler knows besides the request: which broker received it, at which version."""

    cluster: Any  # kafka_ops.emulator.cluster.EmulatedCluster
    broker_id: int
    version: int
    sasl_enabled: bool
    sasl_users: Mapping[str, str]
    connection: Any  # wire_face._Connection (SASL state)

    @property
    def answers_controller_apis(self) -> bool:
        return self.cluster.mode == "kraft" or self.cluster.controller_id == self.broker_id


@dataclass(frozen=True)
class Api:
    """An API the face serves: its request class (the codec) and the handler."""

    request: type
    handle: Callable[[RequestContext, Any], Any]

    @property
    def versions(self) -> tuple[int, int]:
        low, high = self.request.valid_versions
        return low, high


def encode_response(response: Any, version: int, correlation_id: int) -> bytes:
    """Frame a response. Order matters (kafka-python: the version setter touches the header)."""
    response.API_VERSION = version
    response.with_header(correlation_id)
    return bytes(response.encode(header=True, framed=True))


def api_versions_error_frame(correlation_id: int, sasl_enabled: bool) -> bytes:
    """UNSUPPORTED_VERSION for a too-new ApiVersions request: a v0 body plus our API list, so
    the client can retry with a version we speak (Kafka's behaviour)."""
    response = ApiVersionsResponse(
        error_code=Errors.UnsupportedVersionError.errno, api_keys=_api_keys(sasl_enabled)
    )
    return encode_response(response, 0, correlation_id)


def check_plain_token(token: bytes, users: Mapping[str, str]) -> bool:
    """RFC 4616 PLAIN: authzid NUL authcid NUL passwd; authzid must be empty or the user."""
    parts = bytes(token).split(b"\0")
    if len(parts) != 3:
        return False
    authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
    if authzid and authzid != user:
        return False
    expected = users.get(user)
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


# -- handshake and discovery ---------------------------------------------------------------
def _api_keys(sasl_enabled: bool) -> list:
    keys = []
    for key, api in sorted(HANDLERS.items()):
        if key in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY) and not sasl_enabled:
            continue
        low, high = api.versions
        keys.append(ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high))
    return keys


def handle_api_versions(ctx: RequestContext, request: Any) -> Any:
    return ApiVersionsResponse(
        error_code=NONE, api_keys=_api_keys(ctx.sasl_enabled), throttle_time_ms=0
    )


def _topic_uuid(topic_id: str | None) -> uuid.UUID:
    if not topic_id:
        return uuid.UUID(int=0)
    try:
        return uuid.UUID(topic_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, topic_id)


def _live_brokers(cluster) -> list:
    return [b for b in cluster.brokers.values() if b.alive]


def handle_metadata(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    with cluster.lock:
        brokers = [
            MetadataResponse.MetadataResponseBroker(
                node_id=b.id, host=b.host, port=b.port, rack=b.rack
            )
            for b in _live_brokers(cluster)
        ]
        by_topic: dict[str, list] = defaultdict(list)
        for tp, p in cluster.partitions.items():
            by_topic[tp.topic].append(p)
        if request.topics is None or (ctx.version == 0 and not request.topics):
            wanted = sorted(by_topic)
        else:
            names_by_id = {_topic_uuid(i): t for t, i in cluster.topic_ids.items()}
            wanted = [
                t.name if t.name is not None else names_by_id.get(t.topic_id, "")
                for t in request.topics
            ]
        alive = {b.id for b in _live_brokers(cluster)}
        topics = [
            _metadata_topic(name, by_topic.get(name), cluster.topic_ids.get(name), alive, request)
            for name in wanted
        ]
        cluster_ops = _CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else None
        return MetadataResponse(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=cluster.cluster_id,
            controller_id=cluster.controller_id,
            topics=topics,
            authorized_operations=cluster_ops,
            error_code=NONE,
        )


def _metadata_topic(name: str, partitions, topic_id, alive: set[int], request) -> Any:
    Topic = MetadataResponse.MetadataResponseTopic
    ops = _TOPIC_OPERATIONS if request.include_topic_authorized_operations else None
    if not partitions:
        return Topic(
            error_code=Errors.UnknownTopicOrPartitionError.errno,
            name=name,
            topic_id=uuid.UUID(int=0),
            is_internal=False,
            partitions=[],
            authorized_operations=ops,
        )
    return Topic(
        error_code=NONE,
        name=name,
        topic_id=_topic_uuid(topic_id),
        is_internal=False,
        partitions=[
            Topic.MetadataResponsePartition(
                error_code=NONE if p.leader in alive else Errors.LeaderNotAvailableError.errno,
                partition_index=p.partition,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=[r for r in p.replicas if r not in alive],
            )
            for p in sorted(partitions, key=lambda p: p.partition)
        ],
        authorized_operations=ops,
    )


def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    # KIP-1073 (v2): a KRaft broker that stopped stays registered, fenced.
    fenced_too = ctx.version >= 2 and request.include_fenced_brokers
    with cluster.lock:
        ops = _CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else None
        return DescribeClusterResponse(
            throttle_time_ms=0,
            error_code=NONE,
            error_message=None,
            endpoint_type=1,  # brokers
            cluster_id=cluster.cluster_id,
            controller_id=cluster.controller_id,
            brokers=[
                DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=b.id, host=b.host, port=b.port, rack=b.rack, is_fenced=not b.alive
                )
                for b in cluster.brokers.values()
                if b.alive or (fenced_too and cluster.mode == "kraft")
            ],
            authorized_operations=ops,
        )


# -- topics --------------------------------------------------------------------------------
class _Refused(Exception):
    """A request refused by the face itself (routing, shape) with Kafka's code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code, self.message = code, message


def _error(exc: Exception) -> tuple[int, str | None]:
    """Kafka error code and message of a refusal (the core's KafkaError or the face's own)."""
    if isinstance(exc, (KafkaError, _Refused)):
        return exc.code, exc.message
    return Errors.InvalidRequestError.errno, str(exc)


def _not_controller() -> tuple[int, str]:
    return Errors.NotControllerError.errno, "This is not the correct controller for this cluster."


def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    Result = CreateTopicsResponse.CreatableTopicResult
    results = []
    for topic in request.topics:
        result = Result(name=topic.name, error_code=NONE, error_message=None,
                        topic_id=uuid.UUID(int=0), num_partitions=-1, replication_factor=-1,
                        configs=None, topic_config_error_code=NONE)
        if not ctx.answers_controller_apis:
            result.error_code, result.error_message = _not_controller()
            results.append(result)
            continue
        try:
            assignment = _creation_assignment(ctx.cluster, topic)
            configs = {c.name: c.value for c in topic.configs}
            if not request.validate_only:
                ctx.cluster.create_topic(topic.name, assignment, configs)
                result.topic_id = _topic_uuid(ctx.cluster.topic_ids.get(topic.name))
            result.num_partitions = len(assignment)
            result.replication_factor = len(assignment[0]) if 0 in assignment else -1
            result.configs = [
                Result.CreatableTopicConfigs(name=k, value=v, read_only=False,
                                             config_source=DYNAMIC_TOPIC_CONFIG, is_sensitive=False)
                for k, v in sorted(configs.items())
            ]
        except (KafkaError, _Refused, KafkaOpsError) as exc:
            result.error_code, result.error_message = _error(exc)
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def _creation_assignment(cluster, topic: Any) -> dict[int, list[int]]:
    """Explicit assignments as given; otherwise Kafka's placement over the live brokers."""
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise _Refused(Errors.InvalidRequestError.errno,
                           "Both numPartitions or replicationFactor and replicasAssignments "
                           "were set. Both cannot be used at the same time.")
        return {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    partitions = topic.num_partitions if topic.num_partitions != -1 else 1
    factor = topic.replication_factor if topic.replication_factor != -1 else 1
    with cluster.lock:
        brokers = [BrokerMetadata(b.id, b.rack) for b in _live_brokers(cluster)]
    return assign_replicas_to_brokers(brokers, partitions, factor, rng=random.Random())


def handle_create_partitions(ctx: RequestContext, request: Any) -> Any:
    Result = CreatePartitionsResponse.CreatePartitionsTopicResult
    results = []
    for topic in request.topics:
        result = Result(name=topic.name, error_code=NONE, error_message=None)
        if not ctx.answers_controller_apis:
            result.error_code, result.error_message = _not_controller()
            results.append(result)
            continue
        try:
            new = _new_partitions(ctx.cluster, topic)
            if not request.validate_only:
                ctx.cluster.create_partitions(topic.name, new)
        except (KafkaError, _Refused, KafkaOpsError) as exc:
            result.error_code, result.error_message = _error(exc)
        results.append(result)
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


def _new_partitions(cluster, topic: Any) -> dict[int, list[int]]:
    with cluster.lock:
        existing = {tp.partition: list(p.replicas) for tp, p in cluster.partitions.items()
                    if tp.topic == topic.name}
        brokers = [BrokerMetadata(b.id, b.rack) for b in _live_brokers(cluster)]
    if not existing:
        raise _Refused(Errors.UnknownTopicOrPartitionError.errno,
                       f"The topic '{topic.name}' does not exist.")
    if topic.count <= len(existing):
        raise _Refused(Errors.InvalidPartitionsError.errno,
                       f"Topic currently has {len(existing)} partitions, which is higher than "
                       f"the requested {topic.count}." if topic.count < len(existing) else
                       f"Topic already has {len(existing)} partitions.")
    if topic.assignments is None:
        return assign_new_partitions(existing, brokers, topic.count, topic=topic.name)
    added = topic.count - len(existing)
    if len(topic.assignments) != added:
        raise _Refused(Errors.InvalidReplicaAssignmentError.errno,
                       f"Attempted to add {added} additional partition(s), but only "
                       f"{len(topic.assignments)} assignment(s) were specified.")
    return {len(existing) + i: list(a.broker_ids) for i, a in enumerate(topic.assignments)}


# -- reassignments and leaders -------------------------------------------------------------
def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    Response = AlterPartitionReassignmentsResponse
    if not ctx.answers_controller_apis:
        code, message = _not_controller()
        return Response(throttle_time_ms=0, error_code=code, error_message=message, responses=[])
    targets: dict[TopicPartition, list[int] | None] = {}
    for topic in request.topics:
        for p in topic.partitions:
            targets[TopicPartition(topic.name, p.partition_index)] = (
                None if p.replicas is None else list(p.replicas)
            )
    early: dict[TopicPartition, tuple[int, str]] = {}
    if ctx.version >= 1 and not request.allow_replication_factor_change:
        early = _replication_factor_changes(ctx.cluster, targets)
    try:
        outcome = ctx.cluster.alter_reassignments(
            {tp: t for tp, t in targets.items() if tp not in early}
        )
    except KafkaError as exc:
        return Response(throttle_time_ms=0, error_code=exc.code, error_message=exc.message,
                        responses=[])
    errors = {tp: _error(e) if e is not None else (NONE, None) for tp, e in outcome.items()}
    errors.update(early)
    by_topic: dict[str, list] = defaultdict(list)
    for tp in targets:
        code, message = errors.get(tp, (NONE, None))
        by_topic[tp.topic].append(
            Response.ReassignableTopicResponse.ReassignablePartitionResponse(
                partition_index=tp.partition, error_code=code, error_message=message
            )
        )
    return Response(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=NONE,
        error_message=None,
        responses=[
            Response.ReassignableTopicResponse(name=t, partitions=ps) for t, ps in by_topic.items()
        ],
    )


def _replication_factor_changes(cluster, targets) -> dict[TopicPartition, tuple[int, str]]:
    """KIP-860: with allowReplicationFactorChange=false a target must keep the replica count."""
    refused = {}
    with cluster.lock:
        for tp, target in targets.items():
            p = cluster.partitions.get(tp)
            if target is None or p is None:
                continue
            current = [r for r in p.replicas if r not in p.adding]
            if len(target) != len(current):
                refused[tp] = (
                    Errors.InvalidReplicationFactorError.errno,
                    "The replication factor is changed from "
                    f"{len(current)} to {len(target)} but allowReplicationFactorChange is false",
                )
    return refused


def handle_list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    Response = ListPartitionReassignmentsResponse
    if not ctx.answers_controller_apis:
        code, message = _not_controller()
        return Response(throttle_time_ms=0, error_code=code, error_message=message, topics=[])
    wanted: list[TopicPartition] | None = None
    if request.topics is not None:
        wanted = [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    try:
        ongoing = ctx.cluster.list_reassignments(wanted)
    except KafkaError as exc:
        return Response(throttle_time_ms=0, error_code=exc.code, error_message=exc.message,
                        topics=[])
    Topic = Response.OngoingTopicReassignment
    by_topic: dict[str, list] = defaultdict(list)
    for tp, (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic[tp.topic].append(Topic.OngoingPartitionReassignment(
            partition_index=tp.partition, replicas=list(replicas),
            adding_replicas=list(adding), removing_replicas=list(removing)))
    return Response(
        throttle_time_ms=0, error_code=NONE, error_message=None,
        topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def handle_elect_leaders(ctx: RequestContext, request: Any) -> Any:
    Response = ElectLeadersResponse
    Result = Response.ReplicaElectionResult
    election_type = request.election_type if ctx.version >= 1 else 0
    wanted: list[TopicPartition] | None = None
    if request.topic_partitions is not None:
        wanted = [TopicPartition(t.topic, p) for t in request.topic_partitions
                  for p in t.partitions]
    if not ctx.answers_controller_apis:
        code, message = _not_controller()
        if wanted is None:
            return Response(throttle_time_ms=0, error_code=code, replica_election_results=[])
        outcome = {tp: (code, message) for tp in wanted}
    else:
        try:
            raw = ctx.cluster.elect_leaders(election_type, wanted)
        except KafkaError as exc:
            return Response(throttle_time_ms=0, error_code=exc.code, replica_election_results=[])
        outcome = {tp: _error(e) if e is not None else (NONE, None) for tp, e in raw.items()}
    by_topic: dict[str, list] = defaultdict(list)
    for tp, (code, message) in sorted(outcome.items()):
        by_topic[tp.topic].append(Result.PartitionResult(
            partition_id=tp.partition, error_code=code, error_message=message))
    return Response(
        throttle_time_ms=0, error_code=NONE,
        replica_election_results=[Result(topic=t, partition_result=ps)
                                  for t, ps in by_topic.items()],
    )


# -- configs -------------------------------------------------------------------------------
def _broker_resource_error(ctx: RequestContext, name: str) -> tuple[int, str] | None:
    """Broker configs are served by that broker only ("" = the cluster-wide default)."""
    if name == "" or name == str(ctx.broker_id):
        return None
    return (Errors.InvalidRequestError.errno,
            f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")


def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    Result = DescribeConfigsResponse.DescribeConfigsResult
    Entry = Result.DescribeConfigsResourceResult
    results = []
    for resource in request.resources:
        result = Result(error_code=NONE, error_message=None, resource_type=resource.resource_type,
                        resource_name=resource.resource_name, configs=[])
        try:
            configs, source = _read_configs(ctx, resource.resource_type, resource.resource_name)
        except (KafkaError, _Refused) as exc:
            result.error_code, result.error_message = _error(exc)
            results.append(result)
            continue
        keys = resource.configuration_keys
        result.configs = [
            Entry(name=k, value=v, read_only=False, config_source=source, is_default=False,
                  is_sensitive=False, synonyms=[], config_type=0, documentation=None)
            for k, v in sorted(configs.items()) if keys is None or k in keys
        ]
        results.append(result)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def _read_configs(ctx: RequestContext, resource_type: int, name: str) -> tuple[dict, int]:
    cluster = ctx.cluster
    if resource_type == TOPIC_RESOURCE:
        with cluster.lock:
            exists = name in cluster.topic_ids or any(
                tp.topic == name for tp in cluster.partitions)
        if not exists:
            raise _Refused(Errors.UnknownTopicOrPartitionError.errno,
                                 f"The topic '{name}' does not exist.")
        return dict(cluster.topic_config(name)), DYNAMIC_TOPIC_CONFIG
    if resource_type == BROKER_RESOURCE:
        refused = _broker_resource_error(ctx, name)
        if refused is not None:
            raise _Refused(*refused)
        if name == "":
            return dict(cluster.broker_config(None)), DYNAMIC_DEFAULT_BROKER_CONFIG
        return dict(cluster.broker_config(int(name))), DYNAMIC_BROKER_CONFIG
    raise _Refused(Errors.InvalidRequestError.errno,
                         f"Unsupported resource type {resource_type} in the emulator")


def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    results = []
    for resource in request.resources:
        result = Result(error_code=NONE, error_message=None, resource_type=resource.resource_type,
                        resource_name=resource.resource_name)
        refused = None
        if resource.resource_type == BROKER_RESOURCE:
            refused = _broker_resource_error(ctx, resource.resource_name)
        elif resource.resource_type != TOPIC_RESOURCE:
            refused = (Errors.InvalidRequestError.errno,
                       f"Unsupported resource type {resource.resource_type} in the emulator")
        if refused is not None:
            result.error_code, result.error_message = refused
        elif not request.validate_only:
            kind = "topic" if resource.resource_type == TOPIC_RESOURCE else "broker"
            ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
            try:
                ctx.cluster.incremental_alter_configs(kind, resource.resource_name, ops)
            except KafkaError as exc:
                result.error_code, result.error_message = _error(exc)
        results.append(result)
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=results)


# -- log dirs ------------------------------------------------------------------------------
def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    Result = DescribeLogDirsResponse.DescribeLogDirsResult
    Topic = Result.DescribeLogDirsTopic
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for log_dir, error, capacity, entries in ctx.cluster.describe_log_dirs_full(ctx.broker_id):
        by_topic: dict[str, list] = defaultdict(list)
        for tp, size, future in entries:
            if wanted is None or (tp.topic, tp.partition) in wanted:
                by_topic[tp.topic].append(Topic.DescribeLogDirsPartition(
                    partition_index=tp.partition, partition_size=int(size), offset_lag=0,
                    is_future_key=future))
        used = int(sum(size for _, size, _ in entries))
        results.append(Result(
            error_code=error, log_dir=log_dir,
            topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
            total_bytes=capacity if capacity else -1,
            usable_bytes=max(capacity - used, 0) if capacity else -1,
            is_cordoned=False,
        ))
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=NONE, results=results)


def handle_alter_replica_log_dirs(ctx: RequestContext, request: Any) -> Any:
    Result = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
    Part = Result.AlterReplicaLogDirPartitionResult
    moves = {TopicPartition(t.name, p): d.path
             for d in request.dirs for t in d.topics for p in t.partitions}
    codes = ctx.cluster.alter_replica_log_dirs(ctx.broker_id, moves)
    by_topic: dict[str, list] = defaultdict(list)
    for tp, code in codes.items():
        by_topic[tp.topic].append(Part(partition_index=tp.partition, error_code=code))
    return AlterReplicaLogDirsResponse(
        throttle_time_ms=0, results=[Result(topic_name=t, partitions=ps)
                                     for t, ps in by_topic.items()])


# -- SASL ----------------------------------------------------------------------------------
def handle_sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    if request.mechanism != "PLAIN":
        return SaslHandshakeResponse(error_code=Errors.UnsupportedSaslMechanismError.errno,
                                     mechanisms=["PLAIN"])
    ctx.connection.mechanism = "PLAIN"
    ctx.connection.raw_sasl_next = ctx.version == 0
    return SaslHandshakeResponse(error_code=NONE, mechanisms=["PLAIN"])


def handle_sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    conn = ctx.connection
    if conn.mechanism != "PLAIN":
        conn.close_after_reply = True
        return SaslAuthenticateResponse(
            error_code=Errors.IllegalSaslStateError.errno,
            error_message="SaslAuthenticate before a successful SaslHandshake",
            auth_bytes=b"", session_lifetime_ms=0)
    if check_plain_token(request.auth_bytes, ctx.sasl_users):
        conn.authenticated = True
        return SaslAuthenticateResponse(error_code=NONE, error_message=None, auth_bytes=b"",
                                        session_lifetime_ms=0)
    conn.close_after_reply = True  # Kafka closes the connection after a failed authentication
    return SaslAuthenticateResponse(
        error_code=Errors.SaslAuthenticationFailedError.errno,
        error_message="Authentication failed: Invalid username or password",
        auth_bytes=b"", session_lifetime_ms=0)


HANDLERS: dict[int, Api] = {
    req.API_KEY: Api(req, fn)
    for req, fn in (
        (ApiVersionsRequest, handle_api_versions),
        (MetadataRequest, handle_metadata),
        (DescribeClusterRequest, handle_describe_cluster),
        (CreateTopicsRequest, handle_create_topics),
        (CreatePartitionsRequest, handle_create_partitions),
        (DescribeConfigsRequest, handle_describe_configs),
        (IncrementalAlterConfigsRequest, handle_incremental_alter_configs),
        (AlterPartitionReassignmentsRequest, handle_alter_partition_reassignments),
        (ListPartitionReassignmentsRequest, handle_list_partition_reassignments),
        (ElectLeadersRequest, handle_elect_leaders),
        (DescribeLogDirsRequest, handle_describe_log_dirs),
        (AlterReplicaLogDirsRequest, handle_alter_replica_log_dirs),
        (SaslHandshakeRequest, handle_sasl_handshake),
        (SaslAuthenticateRequest, handle_sasl_authenticate),
    )
}
