"""CreateTopics and CreatePartitions: Kafka's routing and placement over the emulated controller.

Without an explicit assignment the replicas are placed with Kafka's own rack-aware algorithm
(``kafka_ops.assignment``), as the broker's AdminUtils does.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    CreatePartitionsResponse,
    CreateTopicsResponse,
)

from kafka_ops.assignment import BrokerMetadata, assign_new_partitions, assign_replicas_to_brokers
from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.wire_context import (
    DYNAMIC_TOPIC_CONFIG,
    NONE,
    Refused,
    RequestContext,
    error_of,
    live_brokers,
    not_controller,
    topic_uuid,
)
from kafka_ops.errors import KafkaOpsError


def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    Result = CreateTopicsResponse.CreatableTopicResult
    results = []
    for topic in request.topics:
        result = Result(name=topic.name, error_code=NONE, error_message=None,
                        topic_id=uuid.UUID(int=0), num_partitions=-1, replication_factor=-1,
                        configs=None, topic_config_error_code=NONE)
        if not ctx.answers_controller_apis:
            result.error_code, result.error_message = not_controller()
            results.append(result)
            continue
        try:
            assignment = _creation_assignment(ctx.cluster, topic)
            configs = {c.name: c.value for c in topic.configs}
            if not request.validate_only:
                ctx.cluster.create_topic(topic.name, assignment, configs)
                result.topic_id = topic_uuid(ctx.cluster.topic_ids.get(topic.name))
            result.num_partitions = len(assignment)
            result.replication_factor = len(assignment[0]) if 0 in assignment else -1
            result.configs = [
                Result.CreatableTopicConfigs(name=k, value=v, read_only=False,
                                             config_source=DYNAMIC_TOPIC_CONFIG, is_sensitive=False)
                for k, v in sorted(configs.items())
            ]
        except (KafkaError, Refused, KafkaOpsError) as exc:
            result.error_code, result.error_message = error_of(exc)
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


def _creation_assignment(cluster, topic: Any) -> dict[int, list[int]]:
    """Explicit assignments as given; otherwise Kafka's placement over the live brokers."""
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise Refused(Errors.InvalidRequestError.errno,
                           "Both numPartitions or replicationFactor and replicasAssignments "
                           "were set. Both cannot be used at the same time.")
        return {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    partitions = topic.num_partitions if topic.num_partitions != -1 else 1
    factor = topic.replication_factor if topic.replication_factor != -1 else 1
    with cluster.lock:
        brokers = [BrokerMetadata(b.id, b.rack) for b in live_brokers(cluster)]
    return assign_replicas_to_brokers(brokers, partitions, factor, rng=random.Random())


def handle_create_partitions(ctx: RequestContext, request: Any) -> Any:
    Result = CreatePartitionsResponse.CreatePartitionsTopicResult
    results = []
    for topic in request.topics:
        result = Result(name=topic.name, error_code=NONE, error_message=None)
        if not ctx.answers_controller_apis:
            result.error_code, result.error_message = not_controller()
            results.append(result)
            continue
        try:
            new = _new_partitions(ctx.cluster, topic)
            if not request.validate_only:
                ctx.cluster.create_partitions(topic.name, new)
        except (KafkaError, Refused, KafkaOpsError) as exc:
            result.error_code, result.error_message = error_of(exc)
        results.append(result)
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


def _new_partitions(cluster, topic: Any) -> dict[int, list[int]]:
    with cluster.lock:
        existing = {tp.partition: list(p.replicas) for tp, p in cluster.partitions.items()
                    if tp.topic == topic.name}
        brokers = [BrokerMetadata(b.id, b.rack) for b in live_brokers(cluster)]
    if not existing:
        raise Refused(Errors.UnknownTopicOrPartitionError.errno,
                       f"The topic '{topic.name}' does not exist.")
    if topic.count <= len(existing):
        raise Refused(Errors.InvalidPartitionsError.errno,
                       f"Topic currently has {len(existing)} partitions, which is higher than "
                       f"the requested {topic.count}." if topic.count < len(existing) else
                       f"Topic already has {len(existing)} partitions.")
    if topic.assignments is None:
        return assign_new_partitions(existing, brokers, topic.count, topic=topic.name)
    added = topic.count - len(existing)
    if len(topic.assignments) != added:
        raise Refused(Errors.InvalidReplicaAssignmentError.errno,
                       f"Attempted to add {added} additional partition(s), but only "
                       f"{len(topic.assignments)} assignment(s) were specified.")
    return {len(existing) + i: list(a.broker_ids) for i, a in enumerate(topic.assignments)}


# -- reassignments and leaders -------------------------------------------------------------
