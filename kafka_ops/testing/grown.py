"""Grown clusters of random shapes, far from the generator's presets: the fuzz's draws.

benchmarks/fuzz_grown.py plans them by the thousand; the cases it found are kept as tests,
built from the same seed here. A seed draws 5-48 brokers; one rack, a few, or one per broker;
RF mixes from 1 to 5; 200-4,000 partitions with Zipf sizes up to 512 a topic; hot topics,
empty new brokers, dead brokers, hand-moved replicas and disks 10-72% full. Its pools split
the brokers into two or three at random and give each topic to one.
"""

from __future__ import annotations

import random
from typing import Any

from kafka_ops.model import ClusterModel
from kafka_ops.pools import Pool, PoolSet


def grown_spec(seed: int) -> dict[str, Any]:
    """The generator overrides of a seed (for ``generate_cluster("medium", seed, **them)``)."""
    r = random.Random(seed)
    brokers = r.randint(5, 48)
    racks = min(r.choice([1, 2, 3, 3, 4, 6, brokers, max(1, brokers // 2)]), brokers)
    rfs = r.choice([((3, 1.0),), ((2, 0.5), (3, 0.5)), ((1, 0.2), (3, 0.8)), ((4, 0.3), (3, 0.7)),
                    ((2, 1.0),), ((5, 0.1), (2, 0.9))])
    return dict(brokers=brokers, racks=racks, partitions=r.randint(200, 4000),
                replication_factors=tuple((min(rf, brokers - 2), s) for rf, s in rfs),
                new_brokers=r.randint(0, min(5, brokers // 3)),
                hot_topic_share=r.choice([0.0, 0.02, 0.1, 0.3]), zipf_exponent=r.uniform(0.5, 2.0),
                max_partitions_per_topic=r.choice([8, 32, 128, 512]),
                disk_utilisation=r.choice([0.1, 0.3, 0.45, 0.6, 0.72]),
                non_preferred_leader_share=r.choice([0.0, 0.03, 0.3]),
                hand_moved_share=r.choice([0.0, 0.05, 0.2]), dead_brokers=r.choice([0, 0, 1, 2]))


def grown_pools(cluster: ClusterModel, seed: int) -> PoolSet:
    """Two or three pools of random sizes (each a broker more than the largest replication
    factor, where the brokers allow), every topic in one."""
    r = random.Random(-seed - 1)
    brokers = sorted(cluster.brokers)
    r.shuffle(brokers)
    least = 1 + max(len(p.replicas) for p in cluster)
    k = max(1, min(r.choice([2, 3]), len(brokers) // least))
    sizes = [least] * k
    for _ in range(len(brokers) - least * k):
        sizes[r.randrange(k)] += 1
    groups, at = [], 0
    for n in sizes:
        groups.append(brokers[at:at + n])
        at += n
    topics: list[list[str]] = [[] for _ in groups]
    for topic in sorted({tp.topic for tp in cluster.partitions}):
        topics[r.choices(range(k), weights=sizes)[0]].append(topic)
    return PoolSet([Pool(f"pool-{i}", frozenset(g), tuple(t))
                    for i, (g, t) in enumerate(zip(groups, topics, strict=True))])


def grown_removal(cluster: ClusterModel, seed: int) -> set[int]:
    """One to three live brokers that hold replicas, to remove (never all of them)."""
    holding = sorted(b for b, x in cluster.brokers.items() if x.alive and cluster.partitions_on(b))
    return set(random.Random(seed).sample(holding, min(len(holding) - 1, random.Random(-seed).randint(1, 3))))
