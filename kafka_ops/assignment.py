"""Kafka's replica assignment, exactly as Kafka computes it, plus manual assignments.

``assign_replicas_to_brokers`` reproduces ``AdminUtils.assignReplicasToBrokers``
(server-common/src/main/java/org/apache/kafka/admin/AdminUtils.java; the Scala
``kafka.admin.AdminUtils`` before 3.5 is the same algorithm) so that a plan made here lands
replicas where Kafka itself would have put them: the first replica of each partition goes
round-robin from a start index, the others follow at an increasing shift; with racks the
round-robin runs over the rack-alternated broker list and skips brokers whose rack (or which
broker) already holds a replica of the partition. ``assign_new_partitions`` is the
add-partitions case (``AdminZkClient.createNewPartitionsAssignment``).

``parse_replica_assignment`` / ``format_replica_assignment`` handle kafka-topics'
``--replica-assignment`` syntax ("0:1:2,3:4:5": partition 0 on brokers 0,1,2, ...).

All functions are pure. Partition ids map to replica lists; replicas[0] is the preferred leader.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kafka_ops.errors import AdminOperationError, InvalidReplicaAssignmentError, ValidationError

# Kafka's RackAwareMode: enforced fails on partial rack information, safe then ignores racks,
# disabled always ignores them.
RACK_AWARE_MODES = ("enforced", "safe", "disabled")


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """What the assignment needs to know about a broker (Kafka's ``BrokerMetadata``)."""

    id: int
    rack: str | None = None


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rack_aware_mode: str = "enforced",
    rng: random.Random | None = None,
    *,
    replica_shift: int | None = None,
) -> dict[int, list[int]]:
    """Kafka's ``AdminUtils.assignReplicasToBrokers``: partition id -> replica list.

    ``brokers`` is used in the given order: the rack-unaware result depends on it exactly as in
    Kafka (AdminZkClient sorts by id, the --generate tool and ZK CreateTopics do not). Racks are
    used when every broker has one (or some do and the mode is "enforced", which fails), unless
    the mode is "disabled", or "safe" with partial rack information.

    ``fixed_start_index`` >= 0 fixes both the start index and the first replica shift, as Kafka
    does; otherwise both are drawn from ``rng`` (start first, then shift, like Kafka's two
    ``RAND.nextInt`` calls). ``replica_shift`` overrides the first replica shift alone, which lets
    a caller reproduce an assignment Kafka made with a random shift. Partition ids start at
    ``max(0, start_partition_id)``.
    """
    if rack_aware_mode not in RACK_AWARE_MODES:
        raise ValidationError(
            f"unknown rack-aware mode {rack_aware_mode!r}; expected one of "
            f"{', '.join(RACK_AWARE_MODES)}"
        )
    if replica_shift is not None and replica_shift < 0:
        raise ValidationError(f"replica shift must be >= 0, got {replica_shift}")
    _check_distinct_broker_ids(b.id for b in brokers)
    # Kafka's own checks, in Kafka's order and words.
    if n_partitions <= 0:
        raise AdminOperationError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise AdminOperationError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise AdminOperationError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    with_rack = sum(1 for b in brokers if b.rack is not None)
    partial = with_rack < len(brokers)
    if with_rack == 0 or rack_aware_mode == "disabled" or (rack_aware_mode == "safe" and partial):
        broker_ids = [b.id for b in brokers]
        start, shift = _start_and_shift(len(broker_ids), fixed_start_index, replica_shift, rng)
        return _assign_rack_unaware(
            broker_ids, n_partitions, replication_factor, start, shift, start_partition_id
        )
    if partial:
        raise AdminOperationError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    broker_racks = {b.id: b.rack for b in brokers if b.rack is not None}  # every broker has one
    start, shift = _start_and_shift(len(brokers), fixed_start_index, replica_shift, rng)
    return _assign_rack_aware(
        broker_racks, n_partitions, replication_factor, start, shift, start_partition_id
    )


def assign_new_partitions(
    existing: Mapping[int, Sequence[int]],
    brokers: Sequence[BrokerMetadata],
    new_partition_count: int,
    rack_aware_mode: str = "enforced",
    *,
    topic: str | None = None,
) -> dict[int, list[int]]:
    """Replicas for the partitions added when a topic grows to ``new_partition_count`` in total.

    Kafka's ``AdminZkClient.createNewPartitionsAssignment``: the replication factor is partition
    0's, partition ids continue after the existing count, and the start index (also the first
    shift) is the position in ``brokers`` of the first broker whose id is >= partition 0's
    preferred leader. For a topic created with a fixed start index over id-sorted brokers the
    new leaders continue the round-robin; the followers continue it exactly only while the
    topic had at most one partition per broker, because Kafka restarts the shift from the
    start index instead of the shift the creation had reached. Returns only the new
    partitions. ``topic`` names the topic in error messages.
    """
    named = "the topic" if topic is None else f"topic '{topic}'"
    if 0 not in existing:
        raise AdminOperationError(
            f"Unexpected existing replica assignment for {named}, partition id 0 is missing. "
            f"Assignment: {dict(existing)}"
        )
    partition0 = existing[0]
    to_add = new_partition_count - len(existing)
    if to_add <= 0:
        raise AdminOperationError(
            "The number of partitions for a topic can only be increased. "
            f"{'The topic' if topic is None else f'Topic {topic}'} currently has "
            f"{len(existing)} partitions, {new_partition_count} would not be an increase."
        )
    if not partition0:
        raise AdminOperationError("Cannot have replication factor of 0 for partition id 0.")
    start_index = next((i for i, b in enumerate(brokers) if b.id >= partition0[0]), 0)
    return assign_replicas_to_brokers(
        brokers,
        to_add,
        len(partition0),
        fixed_start_index=start_index,
        start_partition_id=len(existing),
        rack_aware_mode=rack_aware_mode,
    )


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks in sorted order, brokers sorted by id within a rack: rack1: 0,1,2 / rack2: 3,4,5 /
    rack3: 6,7,8 gives 0,3,6,1,4,7,2,5,8. Round-robin over this list puts consecutive replicas
    on different racks.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker_id)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    return [
        column[i]
        for i in range(max(map(len, columns), default=0))
        for column in columns
        if i < len(column)
    ]


def parse_replica_assignment(
    text: str, known_brokers: Collection[int] | None = None
) -> dict[int, list[int]]:
    """Parse kafka-topics' ``--replica-assignment`` ("0:1:2,3:4:5") into partition -> replicas.

    Checks, per partition in order, what kafka-topics checks (duplicate brokers, a replication
    factor different from partition 0's), then that every broker is in ``known_brokers`` when
    given. Unlike Kafka, a trailing comma or an empty item is an error rather than ignored.
    """
    if not text.strip():
        raise ValidationError(
            "replica assignment is empty; expected broker lists like '0:1:2,3:4:5' "
            "(',' between partitions, ':' between replicas)"
        )
    assignment: dict[int, list[int]] = {}
    for partition, item in enumerate(text.split(",")):
        if not item.strip():
            raise ValidationError(
                f"Cannot have replication factor of 0 for partition id {partition}."
            )
        replicas = [_parse_broker_id(token, partition) for token in item.split(":")]
        duplicates = _duplicates(replicas)
        if duplicates:
            raise InvalidReplicaAssignmentError(
                "Partition replica lists may not contain duplicate entries: partition "
                f"{partition} contains multiple entries for {','.join(map(str, duplicates))}"
            )
        if assignment and len(replicas) != len(assignment[0]):
            raise AdminOperationError(
                f"Partition {partition} has different replication factor: {replicas}"
            )
        assignment[partition] = replicas
    if known_brokers is not None:
        known = set(known_brokers)
        for partition, replicas in assignment.items():
            unknown = [b for b in replicas if b not in known]
            if unknown:
                raise InvalidReplicaAssignmentError(
                    f"Partition {partition}: the manual partition assignment includes broker "
                    f"{unknown[0]}, but no such broker is registered."
                )
    return assignment


def format_replica_assignment(assignment: Mapping[int, Sequence[int]]) -> str:
    """The ``--replica-assignment`` text for partitions 0..n-1 (position = partition id)."""
    if sorted(assignment) != list(range(len(assignment))):
        raise ValidationError(
            "a --replica-assignment lists partitions 0..n-1 by position; got partition ids "
            f"{sorted(assignment)}"
        )
    return ",".join(":".join(map(str, assignment[p])) for p in range(len(assignment)))


# -- internals ------------------------------------------------------------------------------


def _parse_broker_id(token: str, partition: int) -> int:
    token = token.strip()
    if not (token.isascii() and token.isdigit()):  # rejects '', '-1', '+1', '1.0', '²'
        raise ValidationError(
            f"invalid broker id {token!r} in the replica list of partition {partition}: "
            "expected a non-negative integer"
        )
    return int(token)


def _duplicates(values: Iterable[int]) -> list[int]:
    return sorted(v for v, count in Counter(values).items() if count > 1)


def _check_distinct_broker_ids(broker_ids: Iterable[int]) -> None:
    duplicates = _duplicates(broker_ids)
    if duplicates:
        raise ValidationError(f"Broker list contains duplicate entries: {duplicates}")


def _start_and_shift(
    n_brokers: int, fixed_start_index: int, replica_shift: int | None, rng: random.Random | None
) -> tuple[int, int]:
    if fixed_start_index >= 0:
        start = shift = fixed_start_index
    else:
        rng = rng if rng is not None else random.Random()
        start = rng.randrange(n_brokers)
        shift = rng.randrange(n_brokers)
    return start, shift if replica_shift is None else replica_shift


def _rounds(
    n_brokers: int, start_partition_id: int, n_partitions: int, shift: int
) -> Iterator[tuple[int, int, int]]:
    """(first id, end id, replica shift) for each run of partition ids with the same shift.

    Kafka adds 1 to the shift at every partition id that is a positive multiple of the broker
    count (including the very first id when adding partitions), so runs end at those ids.
    """
    pid = max(0, start_partition_id)
    end = pid + n_partitions
    while pid < end:
        if pid > 0 and pid % n_brokers == 0:
            shift += 1
        stop = min(end, (pid // n_brokers + 1) * n_brokers)
        yield pid, stop, shift
        pid = stop


def _assign_rack_unaware(
    broker_ids: list[int],
    n_partitions: int,
    replication_factor: int,
    start: int,
    shift: int,
    start_partition_id: int,
) -> dict[int, list[int]]:
    """Kafka's ``assignReplicasToBrokersRackUnaware``, a run of partitions at a time.

    Within a run the shift is constant, so replica j of the partition whose first replica sits
    at index f is at index f + offset_j (mod n): each replica position is a rotated slice of
    the broker list, and zip() builds the run's replica lists without a per-replica Python
    loop (see benchmarks/bench_assignment.py).
    """
    n = len(broker_ids)
    rotated = broker_ids[start % n :] + broker_ids[: start % n]  # rotated[q]: first replica
    doubled = rotated + rotated
    result: dict[int, list[int]] = {}
    for first, stop, run_shift in _rounds(n, start_partition_id, n_partitions, shift):
        q0 = first % n
        q1 = q0 + (stop - first)
        columns = [rotated[q0:q1]]
        for j in range(replication_factor - 1):
            offset = 1 + (run_shift + j) % (n - 1)  # Kafka's replicaIndex shift
            columns.append(doubled[q0 + offset : q1 + offset])
        result.update(zip(range(first, stop), map(list, zip(*columns, strict=True)), strict=True))
    return result


def _assign_rack_aware(
    broker_racks: dict[int, str],
    n_partitions: int,
    replication_factor: int,
    start: int,
    shift: int,
    start_partition_id: int,
) -> dict[int, list[int]]:
    """Kafka's ``assignReplicasToBrokersRackAware``.

    A run's replica lists depend only on the first replica's index and on the run's shift
    times the rack count modulo n-1, so each distinct pattern is computed once and kept while
    later runs reuse it: many partitions over few brokers cost a few patterns, not a loop per
    partition, and many brokers do not hold every pattern in memory at once.
    """
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    rack_names = sorted(set(broker_racks.values()))
    rack_index = {rack: i for i, rack in enumerate(rack_names)}
    rack_at = [rack_index[broker_racks[b]] for b in arranged]  # rack of arranged[i]
    num_racks = len(rack_names)
    runs = list(_rounds(n, start_partition_id, n_partitions, shift))
    keys = [(run_shift * num_racks) % (n - 1) if n > 1 else 0 for _, _, run_shift in runs]
    uses_left = Counter(keys)  # keep a pattern only while a later run needs it
    patterns: dict[int, list[tuple[int, ...]]] = {}
    result: dict[int, list[int]] = {}
    for (first, stop, _), key in zip(runs, keys, strict=True):
        pattern = patterns.pop(key, None) or _rack_aware_pattern(
            arranged, rack_at, num_racks, start, key, replication_factor
        )
        uses_left[key] -= 1
        if uses_left[key]:
            patterns[key] = pattern
        q0 = first % n
        replica_lists = map(list, pattern[q0 : q0 + (stop - first)])
        result.update(zip(range(first, stop), replica_lists, strict=True))
    return result


def _rack_aware_pattern(
    arranged: list[int],
    rack_at: list[int],
    num_racks: int,
    start: int,
    shift_times_racks: int,
    replication_factor: int,
) -> list[tuple[int, ...]]:
    """Replica lists for partition ids q = 0..n-1 (mod n) of one run, Kafka's inner loop.

    A candidate is skipped when its rack already holds a replica while some rack holds none,
    or when it already holds a replica while some broker holds none; the candidate counter k
    keeps running across the partition's replicas, as in Kafka.
    """
    n = len(arranged)
    pattern = []
    for q in range(n):
        f = (q + start) % n
        replicas = [arranged[f]]
        racks_used = {rack_at[f]}
        used = {f}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                idx = (f + 1 + (shift_times_racks + k) % (n - 1)) % n
                k += 1
                rack = rack_at[idx]
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    idx not in used or len(used) == n
                ):
                    replicas.append(arranged[idx])
                    racks_used.add(rack)
                    used.add(idx)
                    break
        pattern.append(tuple(replicas))
    return pattern
