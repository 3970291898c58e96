"""One scoring script for every planner (ours and the peers'): a cluster and a new assignment in,
every quality metric of issue 9 out, recomputed from the replica lists alone.

Nothing here imports the planner, so a bookkeeping bug in it cannot flatter its own score.
Load model (as documented in kafka_ops/planner/state.py, restated here): every replica carries
the partition's size (disk) and bytes-in (network in); the leader sends bytes-out plus
bytes-in x (RF - 1) (network out) and receives the producers' bytes-in (leader bytes-in).

    from benchmarks.plan_metrics import score
    score(cluster, {tp: replicas, ...})  # partitions not listed keep their replicas
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.testing.feasibility import rack_key, rack_limit


def score(cluster: ClusterModel, new: Mapping[TopicPartition, Sequence[int]] | None = None
          ) -> dict[str, Any]:
    """Quality of the cluster after ``new`` (default: as it is now)."""
    new = new or {}
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive)
    n = len(live)
    count: Counter[int] = Counter({b: 0 for b in live})
    leaders: Counter[int] = Counter({b: 0 for b in live})
    disk: dict[int, float] = defaultdict(float)
    net_in: dict[int, float] = defaultdict(float)
    net_out: dict[int, float] = defaultdict(float)
    lead_in: dict[int, float] = defaultdict(float)
    topic_rep: dict[str, Counter[int]] = defaultdict(Counter)
    topic_lead: dict[str, Counter[int]] = defaultdict(Counter)
    rack_violations = 0
    on_dead = 0
    for tp, p in cluster.partitions.items():
        reps = tuple(new.get(tp, p.replicas))
        lead = reps[0]
        leaders[lead] += 1
        topic_lead[p.topic][lead] += 1
        net_out[lead] += p.bytes_out_per_sec + p.bytes_in_per_sec * (len(reps) - 1)
        lead_in[lead] += p.bytes_in_per_sec
        for b in reps:
            count[b] += 1
            disk[b] += p.size_bytes
            net_in[b] += p.bytes_in_per_sec
            topic_rep[p.topic][b] += 1
            on_dead += b not in count or not cluster.brokers.get(b) or not cluster.brokers[b].alive
        per_rack = Counter(rack_key(cluster, b) for b in reps)
        if max(per_rack.values()) > rack_limit(cluster, live, len(reps)):
            rack_violations += 1

    def ratio(load: Mapping[int, float]) -> float:
        mean = sum(load[b] for b in live) / n
        return max(load[b] for b in live) / mean if mean else 1.0

    def spread(c: Counter[int]) -> int:
        return max(c[b] for b in live) - min(c[b] for b in live)

    topic_spreads = {t: spread(c) for t, c in topic_rep.items()}
    lead_spreads = {t: spread(c) for t, c in topic_lead.items()}
    totals = {t: sum(c.values()) for t, c in topic_rep.items()}
    return {
        "replicas_max_min": spread(count),
        "leaders_max_min": spread(leaders),
        "rack_violations": rack_violations,
        "replicas_on_dead_brokers": on_dead,
        "disk_max_mean": ratio(disk),
        "net_in_max_mean": ratio(net_in),
        "net_out_max_mean": ratio(net_out),
        "leader_in_max_mean": ratio(lead_in),
        "topic_spread_sum": sum(topic_spreads.values()),
        # The floor: a topic whose replica count does not divide evenly over the brokers
        # cannot be better than max - min = 1.
        "topic_spread_floor": sum(1 for t in totals if totals[t] % n),
        "topic_leader_spread_over_1": sum(1 for s in lead_spreads.values() if s > 1),
    }


def moves(cluster: ClusterModel, new: Mapping[TopicPartition, Sequence[int]]) -> dict[str, float]:
    """Replica moves and bytes of the plan, and their lower bounds.

    Count bound: replicas on dead brokers plus the larger of the surplus above ceil(mean) and
    the deficit below floor(mean) over live brokers. Disk bound: what bringing every live broker
    within 3% of the mean disk forces to move, the larger of the bytes that must leave (dead
    brokers' and those above 1.03 x mean) and the bytes that must arrive (those missing below
    0.97 x mean: a new empty broker needs its share, whichever broker gives it). The bytes bound
    of the count bound takes each surplus broker's smallest replicas.
    """
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    n_moves = sum(len(set(r) - set(cluster.partitions[tp].replicas)) for tp, r in new.items())
    n_bytes = sum(cluster.partitions[tp].size_bytes * len(set(r) - set(cluster.partitions[tp].replicas))
                  for tp, r in new.items())
    sizes: dict[int, list[int]] = {b: [] for b in live}
    dead_count = dead_bytes = 0
    for p in cluster:
        for b in p.replicas:
            if b in sizes:
                sizes[b].append(p.size_bytes)
            else:
                dead_count += 1
                dead_bytes += p.size_bytes
    total = sum(len(s) for s in sizes.values()) + dead_count
    mean = total / len(live)
    hi, lo = math.ceil(mean), math.floor(mean)
    surplus = {b: max(0, len(s) - hi) for b, s in sizes.items()}
    deficit = sum(max(0, lo - len(s)) for s in sizes.values())
    count_bound = dead_count + max(sum(surplus.values()), deficit - dead_count, 0)
    count_bytes = dead_bytes + sum(sum(sorted(sizes[b])[:k]) for b, k in surplus.items() if k)
    disk = {b: sum(s) for b, s in sizes.items()}
    mean_disk = (sum(disk.values()) + dead_bytes) / len(live)
    disk_bound = max(dead_bytes + sum(max(0.0, d - 1.03 * mean_disk) for d in disk.values()),
                     sum(max(0.0, 0.97 * mean_disk - d) for d in disk.values()))
    return {
        "moves": n_moves,
        "moves_bound": count_bound,
        "bytes": n_bytes,
        "bytes_bound": max(count_bytes, disk_bound),
    }
