"""Hypothesis strategies for cluster models (xarray's style: small, bounded, always valid).

``clusters()`` draws a small cluster whose every part is already valid (distinct replicas on
registered brokers), so tests spend their examples on the planner, not on input errors. Some
brokers may be dead, some racks missing, some brokers empty: the shapes planners get wrong.
"""

from __future__ import annotations

from typing import Any

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
def pooled_clusters(draw: st.DrawFn, **cluster_args: Any) -> tuple[ClusterModel, PoolSet]:
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


@st.composite
def adversarial_clusters(
    draw: st.DrawFn, max_brokers: int = 9, max_topics: int = 4, max_partitions: int = 8,
) -> tuple[ClusterModel, PoolSet | None, int | None]:
    """(cluster, pools or None, max_replicas_per_broker or None): the starts planners fail on.

    Racks of uneven sizes (a rack of one broker), or no racks at all; dead brokers still
    holding replicas; new empty brokers; replicas moved by hand into a rack that already
    holds one (crowded racks with spare brokers elsewhere); RF above the rack count; giant
    and hot partitions beside tiny ones; brokers over a small disk capacity; reassignments in
    flight; sometimes two pools, sometimes a tight replica limit per broker. Some draws are
    infeasible on purpose (a pool with fewer live brokers than a topic's RF).
    """
    n = draw(st.integers(3, max_brokers))
    racked = draw(st.booleans())
    n_racks = draw(st.integers(1, min(4, n))) if racked else 0
    # Uneven racks: each broker's rack drawn freely (every rack used at least once).
    rack_of = [i % n_racks if i < n_racks else draw(st.integers(0, n_racks - 1))
               for i in range(n)] if racked else [None] * n
    dead = set(draw(st.sets(st.integers(0, n - 1), max_size=2)))
    small_disk = set(draw(st.sets(st.integers(0, n - 1), max_size=1)))
    brokers = [
        Broker(id=i, rack=f"rack-{rack_of[i]}" if racked else None, alive=i not in dead,
               capacity=BrokerCapacity(disk_bytes=30 * GiB if i in small_disk else 0))
        for i in range(n)
    ]
    established = draw(st.integers(min(n, 3), n))  # the rest are new and empty
    sizes = st.sampled_from([0, 1, 1, 2, 5, 50, 500])  # GiB: tiny to giant
    partitions = []
    for t in range(draw(st.integers(1, max_topics))):
        rf = draw(st.integers(1, min(4, established)))
        hot = draw(st.booleans())
        for p in range(draw(st.integers(1, max_partitions))):
            replicas = list(draw(st.permutations(range(established)))[:rf])
            if rf > 1 and racked and draw(st.integers(0, 3)) == 0:
                # A hand move: a follower joins another replica's rack.
                mates = [b for b in range(n) if rack_of[b] == rack_of[replicas[0]]
                         and b not in replicas]
                if mates:
                    replicas[-1] = draw(st.sampled_from(mates))
            adding: tuple[int, ...] = ()
            removing: tuple[int, ...] = ()
            spare = [b for b in range(n) if b not in replicas and b not in dead]
            if spare and draw(st.integers(0, 7)) == 0:
                # In flight: one replica is being replaced by another (replicas = the union).
                adding = (draw(st.sampled_from(spare)),)
                removing = (replicas[-1],)
                replicas.append(adding[0])
            rate = float(draw(st.integers(0, 100))) * (1000 if hot else 1)
            partitions.append(Partition(
                f"t{t}", p, tuple(replicas), leader=replicas[0], isr=tuple(replicas),
                size_bytes=draw(sizes) * GiB, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate,
                adding_replicas=adding, removing_replicas=removing))
    cluster = ClusterModel(brokers, partitions)
    pools = None
    if n >= 4 and draw(st.booleans()):
        ids = sorted(cluster.brokers)
        pools = PoolSet([
            Pool(name, frozenset(ids[k::2]),
                 topics=tuple(t for i, t in enumerate(cluster.topics) if i % 2 == k))
            for k, name in enumerate(("even", "odd"))
        ])
    max_replicas = None
    if draw(st.booleans()):
        total = sum(len(p.replicas) for p in partitions)
        live = max(1, n - len(dead))
        max_replicas = -(-total // live) + draw(st.integers(0, 2))
    return cluster, pools, max_replicas


@st.composite
def tight_mixed_clusters(draw: st.DrawFn, pooled: bool | None = None
                         ) -> tuple[ClusterModel, PoolSet | None, int | None]:
    """Four to six brokers with every limit at once, tight enough that bin packing decides:
    disk of 3-8 GiB, network in and out (each binding on some brokers, unknown on others),
    brokers without a rack, maybe a dead broker, a replica limit per broker, two pools (always
    with ``pooled``, never with False, else either); one to four partitions of 1-3 GiB,
    0-30 MB/s in and 0-30 MB/s out, on any brokers (pools start violated)."""
    n = draw(st.integers(4, 6))
    racks = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    dead = draw(st.sampled_from([None, *range(n)]))
    mb = 1_000_000
    brokers = [Broker(i, racks[i], alive=i != dead, capacity=BrokerCapacity(
        disk_bytes=draw(st.sampled_from([0, 3, 5, 8])) * GiB,
        network_in_bytes_per_sec=draw(st.sampled_from([0, 25, 40])) * mb,
        network_out_bytes_per_sec=draw(st.sampled_from([0, 25, 40, 60])) * mb)) for i in range(n)]
    pools = None
    if pooled or (pooled is None and draw(st.booleans())):
        pools = PoolSet([Pool("x", frozenset(range(0, n, 2)), topics=("x",)),
                         Pool("y", frozenset(range(1, n, 2)), topics=("y",))])
    partitions = []
    for i in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, 2 if pools else 3))
        reps = tuple(draw(st.permutations(range(n)))[:rf])
        partitions.append(Partition(draw(st.sampled_from("xy")), i, reps, leader=reps[0],
                                    size_bytes=draw(st.sampled_from([1, 2, 3])) * GiB,
                                    bytes_in_per_sec=draw(st.sampled_from([0, 10, 20, 30])) * mb,
                                    bytes_out_per_sec=draw(st.sampled_from([0, 10, 20, 30])) * mb))
    return ClusterModel(brokers, partitions), pools, draw(st.sampled_from([None, 1, 2]))
