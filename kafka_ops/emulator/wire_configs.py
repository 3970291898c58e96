"""DescribeConfigs, IncrementalAlterConfigs, DescribeLogDirs and AlterReplicaLogDirs.

Broker-resource configs are answered only by that broker (or "" = the cluster default); the
log-dir APIs describe and move the receiving broker's own directories.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    AlterReplicaLogDirsResponse,
    DescribeConfigsResponse,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsResponse,
)

from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.wire_context import (
    BROKER_RESOURCE,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    NONE,
    TOPIC_RESOURCE,
    Refused,
    RequestContext,
    error_of,
)
from kafka_ops.model import TopicPartition


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
        except (KafkaError, Refused) as exc:
            result.error_code, result.error_message = error_of(exc)
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
            raise Refused(Errors.UnknownTopicOrPartitionError.errno,
                                 f"The topic '{name}' does not exist.")
        return dict(cluster.topic_config(name)), DYNAMIC_TOPIC_CONFIG
    if resource_type == BROKER_RESOURCE:
        refused = _broker_resource_error(ctx, name)
        if refused is not None:
            raise Refused(*refused)
        if name == "":
            return dict(cluster.broker_config(None)), DYNAMIC_DEFAULT_BROKER_CONFIG
        return dict(cluster.broker_config(int(name))), DYNAMIC_BROKER_CONFIG
    raise Refused(Errors.InvalidRequestError.errno,
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
                result.error_code, result.error_message = error_of(exc)
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
