"""``kafka-ops assign``: Kafka's replica assignment (or a manual one, validated) as JSON.

Output contract, relied on by other tooling: a JSON object mapping partition id (a string)
to its replica list, in partition order, on stdout; exit 0. Bad input: ``error: ...`` on
stderr, exit 2 (argparse usage errors exit 2 as well).
"""

from __future__ import annotations

import argparse
from collections import Counter

from kafka_ops import inputs
from kafka_ops.assignment import (
    RACK_AWARE_MODES,
    BrokerMetadata,
    assign_replicas_to_brokers,
    parse_replica_assignment,
)
from kafka_ops.cli.common import parse_int_list, print_json
from kafka_ops.errors import ValidationError

# Options that only make sense when Kafka computes the assignment.
_ALGORITHM_OPTIONS = (
    ("partitions", "--partitions"),
    ("replication_factor", "--replication-factor"),
    ("start_index", "--start-index"),
    ("replica_shift", "--replica-shift"),
    ("start_partition", "--start-partition"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "assign",
        help="compute Kafka's replica assignment (AdminUtils.assignReplicasToBrokers)",
        description=(
            "Print the replica assignment Kafka would compute, as JSON "
            '{"<partition>": [replicas...]}. With --replica-assignment, validate a manual '
            "assignment against --brokers and print it in the same shape."
        ),
    )
    parser.add_argument(
        "--brokers",
        required=True,
        metavar="IDS",
        help="comma-separated broker ids; their order matters for rack-unaware assignment, "
        "exactly as in Kafka",
    )
    parser.add_argument(
        "--racks",
        metavar="RACKS",
        help="comma-separated racks, one per --brokers entry; an empty entry means no rack",
    )
    parser.add_argument("--partitions", type=inputs.partition_count, metavar="N",
                        help="number of partitions")
    parser.add_argument(
        "--replication-factor", type=_int32, metavar="R", help="replicas per partition"
    )
    parser.add_argument(
        "--start-index",
        type=_int32,
        metavar="S",
        help="Kafka's fixedStartIndex: start index and first replica shift (random if omitted)",
    )
    parser.add_argument(
        "--replica-shift", type=_int32, metavar="K", help="override the first replica shift alone"
    )
    parser.add_argument(
        "--start-partition", type=_int32, metavar="P", help="first partition id (default 0)"
    )
    parser.add_argument(
        "--rack-aware-mode",
        choices=RACK_AWARE_MODES,
        default="enforced",
        help="enforced: fail when only some brokers have racks; safe: then ignore racks; "
        "disabled: always ignore racks (default: enforced)",
    )
    parser.add_argument(
        "--replica-assignment",
        metavar="ASSIGNMENT",
        help="manual assignment in kafka-topics syntax, e.g. 0:1:2,3:4:5, checked against "
        "--brokers instead of computing one",
    )
    parser.set_defaults(func=run)


def _int32(value: str) -> int:
    """An integer in Java's int range (Kafka's own checks give the messages below it)."""
    return inputs.bounded_int(value, -inputs.INT32_MAX - 1, inputs.INT32_MAX)


def run(args: argparse.Namespace) -> int:
    broker_ids = parse_int_list(args.brokers, "--brokers")
    racks = _parse_racks(args.racks, len(broker_ids))
    if args.replica_assignment is not None:
        given = [flag for attr, flag in _ALGORITHM_OPTIONS if getattr(args, attr) is not None]
        if given:
            raise ValidationError(
                f"--replica-assignment cannot be combined with {', '.join(given)}"
            )
        duplicates = sorted(b for b, count in Counter(broker_ids).items() if count > 1)
        if duplicates:
            raise ValidationError(f"Broker list contains duplicate entries: {duplicates}")
        assignment = parse_replica_assignment(args.replica_assignment, known_brokers=broker_ids)
    else:
        for attr, flag in _ALGORITHM_OPTIONS[:2]:
            if getattr(args, attr) is None:
                raise ValidationError(f"{flag} is required (unless --replica-assignment is given)")
        for attr, flag in _ALGORITHM_OPTIONS[2:]:
            value = getattr(args, attr)
            if value is not None and value < 0:
                raise ValidationError(f"{flag} must be >= 0, got {value}")
        assignment = assign_replicas_to_brokers(
            [BrokerMetadata(b, rack) for b, rack in zip(broker_ids, racks, strict=True)],
            args.partitions,
            args.replication_factor,
            fixed_start_index=-1 if args.start_index is None else args.start_index,
            start_partition_id=-1 if args.start_partition is None else args.start_partition,
            rack_aware_mode=args.rack_aware_mode,
            replica_shift=args.replica_shift,
        )
    print_json({str(p): assignment[p] for p in sorted(assignment)})
    return 0


def _parse_racks(text: str | None, n_brokers: int) -> list[str | None]:
    """'a,,b' -> ['a', None, 'b']: one entry per broker, empty meaning no rack."""
    if text is None:
        return [None] * n_brokers
    racks = [rack.strip() or None for rack in text.split(",")]
    if len(racks) != n_brokers:
        raise ValidationError(
            f"--racks has {len(racks)} entries but --brokers has {n_brokers}; give one rack "
            "per broker in the same order (an empty entry means no rack)"
        )
    return racks
