"""Hypothesis strategies for cluster models (xarray's style: small, bounded, always valid).

``clusters()`` draws a small cluster whose every part is already valid (distinct replicas on
registered brokers), so tests spend their examples on the planner, not on input errors. Some
brokers may be dead, some racks missing, some brokers empty: the shapes planners get wrong.
"""

from __future__ import annotations

from hypothesis import strategies as st

from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.pools import Pool, PoolSet

GiB = 1024**3


@st.composite
def clusters(
    draw: st.DrawFn,
    min_brokers: int = 3,
    max_brokers: int = 8,
    max_topics: int = 4,
    max_partitions: int = 12,
    racks: bool | None = None,
    dead: bool = True,
) -> ClusterModel:
    """A cluster of a few brokers and topics. ``racks``: True all racked, False none, None either."""
    n = draw(st.integers(min_brokers, max_brokers))
    use_racks = draw(st.booleans()) if racks is None else racks
    n_racks = draw(st.integers(1, min(3, n))) if use_racks else 0
    dead_ids = set(draw(st.sets(st.integers(0, n - 1), max_size=1))) if dead else set()
    brokers = [
        Broker(
            id=i,
            rack=f"rack-{i % n_racks}" if n_racks else None,
            alive=i not in dead_ids,
            capacity=BrokerCapacity(disk_bytes=draw(st.sampled_from([0, 1000 * GiB]))),
        )
        for i in range(n)
    ]
    # Replicas only ever start on the first brokers: the rest are "new" and empty.
    established = draw(st.integers(min(n, 3), n))
    partitions = []
    for t in range(draw(st.integers(1, max_topics))):
        rf = draw(st.integers(1, min(3, established)))
        for p in range(draw(st.integers(1, max_partitions))):
            replicas = draw(st.permutations(range(established)))[:rf]
            size = draw(st.integers(0, 20)) * GiB
            rate = float(draw(st.integers(0, 1000)))
            partitions.append(
                Partition(f"t{t}", p, tuple(replicas), leader=replicas[0], isr=tuple(replicas),
                          size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate)
            )
    return ClusterModel(brokers, partitions)


@st.composite
def pooled_clusters(draw: st.DrawFn, **cluster_args: object) -> tuple[ClusterModel, PoolSet]:
    """A cluster from ``clusters()`` split into two pools (brokers by parity, topics by index).

    Replicas start wherever ``clusters()`` put them, so pools begin violated: the planner must
    first migrate topics into their pools.
    """
    cluster = draw(clusters(min_brokers=4, **cluster_args))
    ids = sorted(cluster.brokers)
    pools = [
        Pool(name, frozenset(ids[k::2]), topics=tuple(t for i, t in enumerate(cluster.topics) if i % 2 == k))
        for k, name in enumerate(("even", "odd"))
    ]
    return cluster, PoolSet(pools)
