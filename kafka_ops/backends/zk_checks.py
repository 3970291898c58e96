"""What the ZooKeeper backend checks before it writes, and how it reads reassignments in flight.

Kafka's ZooKeeper-mode tools validated on the client side (AdminZkClient, the 2.8 reassign tool):
the controller acts on whatever lands in a znode, so a bad write is caught here or not at all.
Messages are Kafka's; the rules shared with the other backend and the emulator come from
``kafka_ops.kafka_rules``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_ops import kafka_rules
from kafka_ops.backends import zk_paths as zk
from kafka_ops.backends.base import OngoingReassignment
from kafka_ops.errors import InvalidReplicaAssignmentError, ValidationError
from kafka_ops.model import TopicPartition

_MAX_ZNODE_BYTES = 1_000_000  # under jute.maxbuffer's default 0xfffff, leaving room for the header


def ongoing_reassignments(
    topics: Mapping[str, zk.TopicZnode],
    pending: Mapping[TopicPartition, tuple[int, ...]],
    wanted: set[TopicPartition] | None,
) -> dict[TopicPartition, OngoingReassignment]:
    """Reassignments in flight: the topic znodes' AR/RR (Kafka 2.4+); partitions only listed
    in /admin/reassign_partitions (not yet started, or Kafka < 2.4) as the controller will run
    them: RS = TRS then ORS, AR = RS - ORS, RR = RS - TRS."""
    out: dict[TopicPartition, OngoingReassignment] = {}
    for topic, znode in topics.items():
        for p, replicas in znode.partitions.items():
            tp = TopicPartition(topic, p)
            if znode.reassigning(p) and (wanted is None or tp in wanted):
                out[tp] = OngoingReassignment(
                    tp, replicas, znode.adding.get(p, ()), znode.removing.get(p, ())
                )
    for tp, target in pending.items():
        if tp in out or (wanted is not None and tp not in wanted):
            continue
        known = topics.get(tp.topic)
        if known is None or tp.partition not in known.partitions:
            continue  # Kafka drops entries for unknown partitions
        original = known.partitions[tp.partition]
        replicas = tuple(dict.fromkeys((*target, *original)))
        out[tp] = OngoingReassignment(
            tp,
            replicas,
            tuple(r for r in replicas if r not in original),
            tuple(r for r in replicas if r not in target),
        )
    return dict(sorted(out.items()))


def fits_in_a_znode(data: bytes, what: str) -> bytes:
    """ZooKeeper's default jute.maxbuffer (1 MiB) caps a request; above it the server drops
    the connection, which reads as a network failure. Say so before sending."""
    if len(data) > _MAX_ZNODE_BYTES:
        raise ValidationError(
            f"{what} is {len(data):,} bytes, over ZooKeeper's default 1 MiB znode limit "
            "(jute.maxbuffer): submit it in smaller batches"
        )
    return data


def validate_topic_name(topic: str) -> None:
    """Kafka's Topic.validate (kafka_ops.kafka_rules)."""
    problem = kafka_rules.topic_name_problem(topic)
    if problem is not None:
        raise ValidationError(problem)


def validate_assignment(
    assignment: Mapping[int, Sequence[int]],
    live: set[int],
    first_partition: int,
    expected_rf: int | None = None,
) -> None:
    """AdminZkClient.validateReplicaAssignment's checks and messages."""
    if not assignment:
        raise InvalidReplicaAssignmentError("The replica assignment is empty")
    for p in sorted(assignment):
        replicas = list(assignment[p])
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {p}."
            )
        if kafka_rules.duplicate_replicas(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {p}."
            )
        unknown = sorted(set(replicas) - live)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}."
            )
    rf = expected_rf or len(assignment[min(assignment)])
    bad = {p: len(r) for p, r in sorted(assignment.items()) if len(r) != rf}
    if bad:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor between partitions, partition {first_partition} has "
            f"{rf} while partitions [{', '.join(map(str, bad))}] have replication factors "
            f"[{', '.join(map(str, bad.values()))}], respectively."
        )


def validate_configs(config: Mapping[str, str], topic: bool) -> None:
    """The throttle values Kafka validates (kafka_ops.kafka_rules: ThrottledReplicaListValidator,
    rates as non-negative longs)."""
    for key, value in config.items():
        if not isinstance(value, str):
            raise ValidationError(f"config {key} must be a string, got {value!r}")
        if (topic and key in kafka_rules.THROTTLED_REPLICA_KEYS
                and not kafka_rules.is_throttled_replica_list(value)):
            raise ValidationError(
                f"Invalid value {value} for configuration {key}: "
                f"{kafka_rules.THROTTLED_REPLICAS_FORMAT}"
            )
        if not topic and key in kafka_rules.THROTTLE_RATE_KEYS and not kafka_rules.is_throttle_rate(value):
            raise ValidationError(
                f"Invalid value {value} for configuration {key}: must be a non-negative long"
            )
