"""Alter/ListPartitionReassignments and ElectLeaders: controller APIs over the emulated cluster."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    AlterPartitionReassignmentsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)

from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.wire_context import (
    NONE,
    RequestContext,
    error_of,
    not_controller,
)
from kafka_ops.model import TopicPartition


def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    Response = AlterPartitionReassignmentsResponse
    if not ctx.answers_controller_apis:
        code, message = not_controller()
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
    errors: dict[TopicPartition, tuple[int, str | None]] = {
        tp: error_of(e) if e is not None else (NONE, None) for tp, e in outcome.items()}
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
        code, message = not_controller()
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
        code, message = not_controller()
        if wanted is None:
            return Response(throttle_time_ms=0, error_code=code, replica_election_results=[])
        outcome: dict[TopicPartition, tuple[int, str | None]] = {
            tp: (code, message) for tp in wanted}
    else:
        try:
            raw = ctx.cluster.elect_leaders(election_type, wanted)
        except KafkaError as exc:
            return Response(throttle_time_ms=0, error_code=exc.code, replica_election_results=[])
        outcome = {tp: error_of(e) if e is not None else (NONE, None) for tp, e in raw.items()}
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
