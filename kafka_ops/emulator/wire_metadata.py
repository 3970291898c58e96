"""Metadata and DescribeCluster: what clients discover brokers, topics and leaders with."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import kafka.errors as Errors
from kafka.protocol.admin import (
    DescribeClusterResponse,
)
from kafka.protocol.metadata import (
    MetadataResponse,
)

from kafka_ops.emulator.wire_context import (
    CLUSTER_OPERATIONS,
    NONE,
    TOPIC_OPERATIONS,
    RequestContext,
    live_brokers,
    topic_uuid,
)


def handle_metadata(ctx: RequestContext, request: Any) -> Any:
    cluster = ctx.cluster
    with cluster.lock:
        brokers = [
            MetadataResponse.MetadataResponseBroker(
                node_id=b.id, host=b.host, port=b.port, rack=b.rack
            )
            for b in live_brokers(cluster)
        ]
        by_topic: dict[str, list] = defaultdict(list)
        for tp, p in cluster.partitions.items():
            by_topic[tp.topic].append(p)
        if request.topics is None or (ctx.version == 0 and not request.topics):
            wanted = sorted(by_topic)
        else:
            names_by_id = {topic_uuid(i): t for t, i in cluster.topic_ids.items()}
            wanted = [
                t.name if t.name is not None else names_by_id.get(t.topic_id, "")
                for t in request.topics
            ]
        alive = {b.id for b in live_brokers(cluster)}
        topics = [
            _metadata_topic(name, by_topic.get(name), cluster.topic_ids.get(name), alive, request)
            for name in wanted
        ]
        cluster_ops = CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else None
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
    ops = TOPIC_OPERATIONS if request.include_topic_authorized_operations else None
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
        topic_id=topic_uuid(topic_id),
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
        ops = CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else None
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
