"""Grown clusters of random shapes: planned, refused with a reason proved, or undecided?

    .venv/bin/python benchmarks/fuzz_grown.py [--mode rebalance|remove-brokers|fix-offline]
                                              [--pools] [--seeds A-B] [--json OUT]

Each seed draws a generator spec far from the presets: 5-48 brokers; one rack, a few, or one
per broker; RF mixes from 1 to 5; 200-4,000 partitions with Zipf sizes up to 512 a topic;
hot topics, empty new brokers, dead brokers, hand-moved replicas and disks 10-72% full;
with ``--pools``, its brokers split into two or three pools at random and each topic given
to one (most topics then start with replicas outside their pool). The mode's plan
(remove-brokers drains 1-3 random brokers that hold replicas) is checked by the independent
checker (kafka_ops.testing.feasibility): every rule the start kept must hold after it.
A refusal is sorted by what its message claims: proved before any search (a sum over a
rack or pool, a partition with too few brokers), proved by search (every assignment tried,
or CP-SAT), undecided ("one may still exist"), or none of these: the greedy error alone,
which is worth a look. A refused drain is also put to the drain oracle (drain_oracle.py),
a model written apart from the planner and looser than it (no network out, no replica
counts): where it finds no drain, the refusal is right whatever the message claims; where
it finds one and the planner claims a proof, its looser rules or a planner bug explain it.

Found so far (seeds 0-312 rebalance, 0-500 both drains): the CP-SAT repairs of packing_cp.py.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel
from kafka_ops.planner import plan_fix_offline, plan_rebalance, plan_remove_brokers
from kafka_ops.pools import Pool, PoolSet
from kafka_ops.testing.drain_oracle import drain_fits
from kafka_ops.testing.feasibility import check_hard_goals

_UP_FRONT = ("no plan fits them", "must move, but", "with room for one replica", "fewer than the replication factor",
             "but its pool")


def spec_of(seed: int) -> dict[str, Any]:
    """The generator spec of a seed (the rebalance fuzz's draw)."""
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


def pools_of(cluster: ClusterModel, seed: int) -> PoolSet:
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


def verdict(message: str) -> str:
    if "proved by CP-SAT" in message or "every one tried" in message:
        return "refused, proved by search"
    if "may still exist" in message:
        return "refused, undecided"
    if any(s in message for s in _UP_FRONT):
        return "refused, proved before any search"
    return "refused, greedy error alone"


def run(seed: int, mode: str, pooled: bool = False) -> dict[str, Any]:
    spec = spec_of(seed)
    rec: dict[str, Any] = {"seed": seed, "spec": spec}
    cluster = generate_cluster("medium", seed=seed, **spec)
    pools = pools_of(cluster, seed) if pooled else None
    gone: set[int] = set()
    if mode == "remove-brokers":
        holding = sorted(b for b, x in cluster.brokers.items() if x.alive and cluster.partitions_on(b))
        gone = set(random.Random(seed).sample(holding, min(len(holding) - 1, random.Random(-seed).randint(1, 3))))
        rec["gone"] = sorted(gone)
    rec["partitions"] = len(cluster.partitions)
    started = time.process_time()
    try:
        if mode == "rebalance":
            result = plan_rebalance(cluster, pools)
        elif mode == "remove-brokers":
            result = plan_remove_brokers(cluster, sorted(gone), pools)
        else:
            result = plan_fix_offline(cluster, pools)
    except ValidationError as e:
        rec["outcome"] = verdict(str(e))
        rec["error"] = str(e)[:300]
        if mode != "rebalance" and pools is None:
            rec["oracle"] = {"others stay": drain_fits(cluster, gone, others_move=False, seconds=30),
                             "others move": drain_fits(cluster, gone, others_move=True, seconds=30)}
    else:
        rec["moves"] = len(result.plan.replicas)
        rec["outcome"] = "planned"
        # The rules as they stand after the mode: removed brokers count as dead.
        drained = ClusterModel([replace(b, alive=b.alive and b.id not in gone) for b in cluster.brokers.values()],
                               list(cluster))
        after = drained.with_assignment(result.plan.replicas)
        # A drain may keep what the start broke (a rack crowded by hand): compared by partition.
        kept = {v.split(":")[0] for v in check_hard_goals(drained, drained, pools)} if mode != "rebalance" else set()
        broken = {v for v in check_hard_goals(drained, after, pools) if v.split(":")[0] not in kept}
        for b, broker in drained.brokers.items():
            limit = 0.8 * broker.capacity.disk_bytes
            disk = sum(p.size_bytes for p in after.partitions_on(b))
            if broker.alive and limit and disk > max(limit, sum(p.size_bytes for p in cluster.partitions_on(b))):
                broken.add(f"broker {b}: disk above its limit and its start")
        if broken:
            rec["outcome"] = "planned, a rule broken"
            rec["broken"] = sorted(broken)[:5]
    rec["cpu"] = round(time.process_time() - started, 2)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("rebalance", "remove-brokers", "fix-offline"), default="rebalance")
    ap.add_argument("--pools", action="store_true")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--json")
    args = ap.parse_args()
    lo, hi = map(int, args.seeds.split("-"))
    records = []
    for seed in range(lo, hi + 1):
        rec = run(seed, args.mode, args.pools)
        records.append(rec)
        print(f"seed {seed}: {rec['outcome']} ({rec['partitions']} partitions, {rec['cpu']} s)"
              + (f" oracle {rec['oracle']}" if "oracle" in rec else ""), file=sys.stderr, flush=True)
    outcomes = Counter(r["outcome"] for r in records)
    print(f"{args.mode}{' with pools' if args.pools else ''}, seeds {args.seeds}: {len(records)} clusters")
    print("| outcome | clusters |\n|---|---:|")
    for outcome, n in sorted(outcomes.items()):
        print(f"| {outcome} | {n} |")
    cpu = sorted(r["cpu"] for r in records)
    print(f"planner CPU mean / max: {sum(cpu) / len(cpu):.2f} / {cpu[-1]:.2f} s")
    look = [r for r in records if r["outcome"] in ("planned, a rule broken", "refused, greedy error alone")
            or (r["outcome"] == "refused, proved by search" and r.get("oracle", {}).get("others move"))]
    for r in look:
        print(f"look at seed {r['seed']}: {r['outcome']}: {r.get('broken') or r.get('error')} {r.get('oracle', '')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
