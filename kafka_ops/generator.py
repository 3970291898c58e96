"""Synthetic clusters with the skew real ones have, for tests, benchmarks and the emulator.

Real clusters are out of balance for reasons the generator reproduces: topics were created one at a
time with Kafka's own assignment (random start per topic), while the cluster grew (older topics only
know the first brokers; the newest brokers hold nothing yet); partition counts and sizes are
heavy-tailed; a few hot topics carry most of the traffic; some leaders are not on their preferred
replica after restarts. Everything is drawn from one ``random.Random(seed)``: the same preset and
seed give the same cluster, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from kafka_ops.assignment import BrokerMetadata, assign_replicas_to_brokers
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition

GiB = 1024**3
TiB = 1024**4
MiB = 1024**2

# Partition counts operators actually choose; the weights make small topics common and huge rare.
_PARTITION_COUNTS = (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 200, 256)


@dataclass(frozen=True)
class GeneratorSpec:
    """What to generate. ``partitions`` is a target; the result is within a few percent."""

    brokers: int
    racks: int
    partitions: int
    replication_factors: tuple[tuple[int, float], ...]  # (RF, share of topics)
    new_brokers: int = 0  # brokers added last: registered, empty
    hot_topic_share: float = 0.02  # topics carrying ~10x the traffic
    zipf_exponent: float = 1.1  # how heavy the tail of partition counts is
    max_partitions_per_topic: int = 256
    disk_capacity_bytes: int = 4 * TiB
    network_bytes_per_sec: float = 125 * MiB  # 1 Gbit/s each way
    disk_utilisation: float = 0.45  # replica bytes / disk capacity, cluster-wide
    non_preferred_leader_share: float = 0.03
    # Operators' hand moves over the years: this share of partitions had a follower moved onto
    # a broker of the leader's rack (crowding it; the rack has spare brokers elsewhere), mostly
    # onto a few favourite brokers (skewing their load).
    hand_moved_share: float = 0.0
    dead_brokers: int = 0  # established brokers that died and still hold their replicas


PRESETS: dict[str, GeneratorSpec] = {
    "small": GeneratorSpec(
        brokers=6, racks=3, partitions=60, replication_factors=((3, 0.7), (2, 0.3)),
        new_brokers=1, max_partitions_per_topic=12, disk_capacity_bytes=500 * GiB,
    ),
    "medium": GeneratorSpec(
        brokers=24, racks=3, partitions=10_000, replication_factors=((3, 0.8), (2, 0.2)),
        new_brokers=3, max_partitions_per_topic=128,
    ),
    "large": GeneratorSpec(
        brokers=60, racks=6, partitions=50_000, replication_factors=((3, 0.7), (2, 0.3)),
        new_brokers=6,
    ),
    "xl": GeneratorSpec(
        brokers=200, racks=10, partitions=130_000, replication_factors=((2, 0.92), (3, 0.08)),
        new_brokers=10,
    ),
    # The issue-9 shapes: grown clusters with hand-crowded racks and a dead broker.
    "crowded-medium": GeneratorSpec(
        brokers=24, racks=3, partitions=10_000, replication_factors=((3, 0.8), (2, 0.2)),
        new_brokers=3, max_partitions_per_topic=128, hand_moved_share=0.05, dead_brokers=1,
    ),
    "crowded-xl": GeneratorSpec(
        brokers=200, racks=10, partitions=130_000, replication_factors=((2, 0.92), (3, 0.08)),
        new_brokers=10, hand_moved_share=0.03, dead_brokers=1,
    ),
    "xxl": GeneratorSpec(  # 270 brokers, ~1.3 million replicas
        brokers=270, racks=9, partitions=600_000, replication_factors=((2, 0.8), (3, 0.2)),
        new_brokers=15, max_partitions_per_topic=256, hand_moved_share=0.03,
    ),
}


def _partition_counts(spec: GeneratorSpec, rng: random.Random) -> list[int]:
    choices = [c for c in _PARTITION_COUNTS if c <= spec.max_partitions_per_topic]
    weights = [1.0 / (i + 1) ** spec.zipf_exponent for i in range(len(choices))]
    counts: list[int] = []
    total = 0
    while total < spec.partitions:
        c = min(rng.choices(choices, weights)[0], spec.partitions - total)
        counts.append(c)
        total += c
    return counts


def _rack_names(n: int) -> list[str]:
    return [f"rack-{chr(ord('a') + i)}" if i < 26 else f"rack-{i}" for i in range(n)]


def generate_cluster(preset: str = "small", seed: int = 0, **overrides: object) -> ClusterModel:
    """A cluster from a preset (small, medium, large, xl, crowded-medium, crowded-xl, xxl), with
    GeneratorSpec fields overridden."""
    if preset not in PRESETS:
        raise ValidationError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    try:
        spec = replace(PRESETS[preset], **overrides)  # type: ignore[arg-type]
    except TypeError as e:
        raise ValidationError(f"bad generator override: {e}") from None
    return generate_from_spec(spec, seed)


def generate_from_spec(spec: GeneratorSpec, seed: int = 0) -> ClusterModel:
    if spec.brokers <= 0 or spec.racks <= 0 or spec.partitions <= 0:
        raise ValidationError("brokers, racks and partitions must be positive")
    max_rf = max(rf for rf, _ in spec.replication_factors)
    established = spec.brokers - spec.new_brokers
    if max_rf > established:
        raise ValidationError(
            f"replication factor {max_rf} needs at least {max_rf} established brokers, "
            f"have {established}"
        )
    rng = random.Random(seed)
    racks = _rack_names(spec.racks)
    capacity = BrokerCapacity(
        disk_bytes=spec.disk_capacity_bytes,
        network_in_bytes_per_sec=spec.network_bytes_per_sec,
        network_out_bytes_per_sec=spec.network_bytes_per_sec,
    )
    brokers = [
        Broker(id=i, rack=racks[i % spec.racks], host="localhost", port=9092 + i, capacity=capacity)
        for i in range(spec.brokers)
    ]
    metadata = [BrokerMetadata(b.id, b.rack) for b in brokers[:established]]

    counts = _partition_counts(spec, rng)
    rfs = [rf for rf, _ in spec.replication_factors]
    rf_weights = [w for _, w in spec.replication_factors]
    # The cluster grew while topics were created: the first topics saw 60% of the brokers.
    first_size = max(max_rf, spec.racks, int(established * 0.6))
    topics = []
    for i, n_partitions in enumerate(counts):
        rf = rng.choices(rfs, rf_weights)[0]
        seen = first_size + (established - first_size) * i // max(1, len(counts) - 1)
        assignment = assign_replicas_to_brokers(
            metadata[:seen], n_partitions, rf, rack_aware_mode="safe", rng=rng
        )
        hot = rng.random() < spec.hot_topic_share
        # Per-partition ingest rate: log-normal, hot topics ~10x; keys skew partitions a little.
        rate = rng.lognormvariate(0.0, 1.2) * (10.0 if hot else 1.0)
        retention_hours = rng.choice((6, 24, 72, 168))
        fanout = rng.choice((1, 1, 2, 3))  # consumer groups reading the topic
        topics.append((f"topic-{i:05d}", assignment, rate, retention_hours, fanout))

    # Scale rates so replica bytes fill the configured share of the disks.
    raw_bytes = sum(
        len(reps) * rate * hours * 3600
        for _, assignment, rate, hours, _ in topics
        for reps in assignment.values()
    )
    scale = spec.disk_utilisation * spec.disk_capacity_bytes * spec.brokers / raw_bytes
    partitions = []
    for name, assignment, rate, hours, fanout in topics:
        for p, replicas in assignment.items():
            bytes_in = rate * scale * rng.uniform(0.7, 1.3)
            leader = replicas[0]
            if len(replicas) > 1 and rng.random() < spec.non_preferred_leader_share:
                leader = replicas[1]
            partitions.append(
                Partition(
                    topic=name,
                    partition=p,
                    replicas=tuple(replicas),
                    leader=leader,
                    isr=tuple(replicas),
                    size_bytes=int(bytes_in * hours * 3600),
                    bytes_in_per_sec=bytes_in,
                    bytes_out_per_sec=bytes_in * fanout,
                )
            )
    if spec.hand_moved_share or spec.dead_brokers:
        partitions = _hand_moves(spec, brokers, partitions, established, rng)
    return ClusterModel(brokers, partitions)


def _hand_moves(spec: GeneratorSpec, brokers: list[Broker], partitions: list[Partition],
                established: int, rng: random.Random) -> list[Partition]:
    """Followers moved by hand into the leader's rack; dead brokers (still holding replicas)."""
    by_rack: dict[str | None, list[int]] = {}
    for b in brokers[:established]:
        by_rack.setdefault(b.rack, []).append(b.id)
    # Operators favour a few brokers (the ones they know have room).
    favourites = {r: rng.sample(ids, max(1, len(ids) // 4)) for r, ids in by_rack.items()}
    out = []
    for p in partitions:
        if len(p.replicas) > 1 and rng.random() < spec.hand_moved_share:
            rack = brokers[p.replicas[0]].rack
            mates = [b for b in favourites[rack] if b not in p.replicas] or \
                [b for b in by_rack[rack] if b not in p.replicas]
            if mates:
                replicas = (*p.replicas[:-1], rng.choice(mates))
                p = replace(p, replicas=replicas, isr=replicas,
                            leader=p.leader if p.leader in replicas else replicas[0])
        out.append(p)
    dead = set(rng.sample(range(established), spec.dead_brokers))
    for i in dead:
        brokers[i] = replace(brokers[i], alive=False)
    if dead:
        out = [replace(p, isr=tuple(b for b in p.isr if b not in dead),
                       leader=p.leader if p.leader not in dead else next(
                           (b for b in p.replicas if b not in dead), -1))
               for p in out]
    return out
