"""Grown clusters of random shapes: planned, refused with a reason proved, or undecided?

    .venv/bin/python benchmarks/fuzz_grown.py [--mode rebalance|add-brokers|remove-brokers|fix-offline|migrate-pool]
                                              [--pools] [--seeds A-B] [--json OUT]

Each seed draws a generator spec far from the presets (kafka_ops/testing/grown.py: 5-48
brokers, one rack to one per broker, RF 1-5, 200-4,000 partitions, hot topics, empty new,
dead and hand-moved replicas, disks 10-72% full); with ``--pools``, two or three random
pools that most topics start outside of. The mode's plan (remove-brokers drains 1-3 random
brokers that hold replicas; migrate-pool always has pools) is checked by an independent
checker: every hard goal for a rebalance (kafka_ops.testing.feasibility), for a drain or a
migration nothing broken that the start kept (drain_oracle.drain_breaks), for a migration
no replica left outside its pool, and disk within its limit or start on every broker; in
every mode, no partition the plan changes (a new order included) keeps a replica on a dead
or removed broker (the executor refuses such a plan: it could never complete).
A refusal is sorted by what its message claims: proved before any search (a sum over a
rack or pool, a partition with too few brokers), proved by search (every assignment tried,
or CP-SAT), undecided ("one may still exist"), or none of these: the greedy error alone,
which is worth a look. A refused drain or migration (pooled or not) is also put to the drain oracle (drain_oracle.py),
a model written apart from the planner and looser than it (no network out, no replica
counts): where it finds no drain, the refusal is right whatever the message claims; where
it finds one and the planner claims a proof, its looser rules or a planner bug explain it.

What it found went into packing_cp.py (CP-SAT repairs where the greedy is stuck),
room_cut.py (brokers the rules force more onto than their limits, proved at once),
pool_pack.py (what must leave, packed largest first), the migrations' dead replicas, and the
tests built from grown.py. Measured at 88e58cc, then (after) with those (planner CPU mean / max):

    rebalance        0-99   96 planned, 4 proved before any search              2.36 / 33.4 s
    remove-brokers   0-199  193 planned, 3 proved before any search, 4 by search 0.13 / 6.0 s
    fix-offline      0-199  197 planned, 3 proved by search                    0.10 / 8.4 s
    with --pools, seeds 0-99:
    rebalance        64 planned, 34 proved before any search, 2 undecided       1.96 / 45.5 s
      after          65 planned, 35 proved before any search                    1.13 / 5.9 s
    remove-brokers   90 planned, 3 + 1 proved, 6 undecided                       0.72 / 16.0 s
    fix-offline      98 planned, 2 undecided                                     0.79 / 24.5 s
    migrate-pool, seeds 0-199, after: 135 planned, 1 + 51 proved, 13 undecided  2.31 / 35.0 s
      then, with drain_short:   137 planned, 50 + 4 proved, 9 undecided        1.22 / 51.2 s
      and over-limit brokers:   140 planned, 50 + 4 proved, 6 undecided        0.88 / 29.0 s
      and the veto's bound:     140 planned, 50 + 9 proved, 1 undecided        0.34 / 11.2 s
    remove-brokers, pooled, with the veto's bound: the same outcomes          0.62 / 13.8 s

The rows without "after" came out the same after (unpooled rebalance, remove-brokers and
fix-offline rerun; pooled remove-brokers rerun). No plan broke a rule, and no refusal was the
greedy error alone; no migration changes a partition and keeps its replica on a dead broker
(25 of 100 did before). Since offline partitions are left as they are (nothing to copy
from), fix-offline seed 165 (558 of them) was undecided instead of proved by CP-SAT (the drain
oracle finds no drain either way), until the drain model stated the bound its veto rule
implies (packing_cp.py): proved in 2.1 s; remove-brokers 0-199 came out the same. Since repair modes
prove up front what their pools or brokers cannot hold (CapacityGoal.drain_short), 50 of the
migrations are refused in at most 0.04 s (46 took CP-SAT, up to 12 s; 3 were undecided); of
the 9 then undecided, the oracle (now modelling migrations) found no migration for 6 and one
for 3 (8, 73, 182), which CP-SAT's drain model refused to place on brokers over a limit at
the start; with the capacity veto's own rule there (packing_cp.py), they are planned. Both
maxes ran beside a test run on the other core. Of the 6 left, the oracle proved each in 0.1-7 s
(171 and 179 in under half a second) where CP-SAT's drain model ran its whole budget: an
over-limit broker's bound held only under an enforcement literal, which the linear relaxation
cannot see through.
Stated also without it (the larger of the limit and the start), 5 are proved in 3.3-9.5 s;
69 is still undecided.

add-brokers (the generator's empty new brokers join; checked as a rebalance where planned
whole, as a drain where the new brokers alone cannot repair the start and the plan leaves its
breaks; in both, only new brokers gain replicas or leadership): seeds 0-99, 43 of the 93 with
new brokers were refused, for a rack crowded by hand, dead brokers' replicas or brokers over a
limit that the new brokers alone could not repair; now all are planned, 43 leaving the start's
breaks no worse. Seeds 0-199 then found 6 plans (125, 126, 144, 147, 148, 151) moving
leadership between old brokers: CP-SAT's leader choice ignored the mode's destinations. Fixed:

    add-brokers      0-199  103 planned, 81 leaving the start's breaks, 16 without
                            an empty broker; none breaks a rule                 4.55 / 41.6 s
    with --pools, 0-99:     2 planned, 91 leaving the start's breaks (most
                            topics start outside their pool), 7 without one     0.51 / 4.4 s

Then the greedy's ejection chains tried only replicas that free enough room (seeds 11 and 42
spent 30 s there before falling back), and a plan leaving the start's breaks repairs what
the new brokers can (crowded racks, then brokers over a limit). The same outcomes; in the 81
plans leaving the start's breaks, partitions crowding a rack end at 1,840 (9,523 at the start,
8,028 before) and limits exceeded (a broker's disk, network or count) at 348 (656; 545), no
seed worse on either; their replica count spreads end less even (seeds 0-99: the sum of
max - min 18,357 against 16,607; 22,061 at the start), as the largest replicas fill the new
brokers' disks first:

    add-brokers      0-199  the same outcomes                                  3.93 / 35.3 s
      and the replica count goal's stuck search pruned by room the same way
      (the same plans; the max is seed 151's one CP-SAT solve, beside a test run) 3.49 / 40.4 s
    with --pools, 0-99:     the same outcomes; crowding 1,722 -> 791, limits
                            exceeded 490 -> 291                                 0.49 / 3.3 s

The 81 plans leaving the start's breaks took 393 s of planner CPU before these changes,
348 s with the ejection chains pruned and the repair added, 238 s with the count goal pruned.

Pooled drains are put to the oracle too, as drains within the pools (drain_fits(...,
migrate=False)): of pooled remove-brokers 0-99, it confirms the 4 proofs, finds no drain of the
6 undecided with the others staying, and decides none with them moving (30 s each); pooled
fix-offline 0-99 (97 planned, 3 undecided: 3, 51, 59, 0.34 / 17.8 s), the same for its 3.

Pooled rebalances and migrations report the per-topic replica spread over each pool's brokers
against its floor with the rack rule (plan_metrics.pool_topic_spread). Both placements of the
replicas that enter a pool (the pool membership goal's, pools.migrate_to_pool's) counted every
replica on a broker, other pools' too, so a broker freed of those late was for a while the
only one below the mean and took every replica placed then, whatever its topic. Counting each
pool's own replicas against the count the pool ends with, the topic weighed first among the
brokers below it (the spread's start counts only what already sits in each pool):

    rebalance --pools, 0-99   65 planned, spread 61,504 -> 49,536 (floor 36,021);
                              plans above twice their floor 22 -> 5
    migrate-pool, 0-199       140 planned, 160,715 -> 113,554 (floor 69,307); 92 -> 28

Every outcome above came out the same (rebalance, remove-brokers and add-brokers with
--pools, seeds 0-99; migrate-pool 0-199), no rule broken. With the topic goals counting
over each pool's brokers only (a replica outside its pool no longer counts where it sits,
which changes their start-of-run targets), rebalance --pools 0-99 ends at 49,539, the same
65 planned and 5 above twice the floor; migrate-pool 0-59 plans the same.

Seeds never run before, rebalance 3000-3099: 93 planned, 7 proved before any search; with
--pools: 64 planned, 35 proved before any search, and one undecided, seed 3054, which a
CP-SAT model written apart from the planner places: pool-1's brokers 0, 2 and 9 end at 99%
of their disk limits, and asked for the fewest moves at once CP-SAT finds no placement in
60 deterministic seconds. packing_cp.py now asks for any placement first (3 s), then the
fewest moves from it, one pool at a time; 3054 is planned (the same checks pass). Old code
against new (planner CPU mean / max), each pair run side by side:

    rebalance --pools, 0-99        the same outcomes and spread       2.57 / 12.7 -> 2.56 / 13.6 s
    migrate-pool, 0-199            the same outcomes; spread 113,554 -> 113,577
                                                                      0.44 / 13.2 -> 0.47 / 14.5 s
    remove-brokers --pools, 0-99   the same outcomes (the 6 undecided
                                   search 4 s more first)             0.81 / 18.1 -> 0.99 / 26.9 s
    fix-offline --pools, 0-99      the same outcomes                  0.37 / 18.2 -> 0.46 / 21.2 s

Then, new code: remove-brokers 3000-3099, 93 planned, 6 proved before any search and 1 by
search (0.03 / 0.50 s); migrate-pool 3000-3149, 102 planned, 40 + 7 proved (the oracle
agrees), 1 undecided (3025; the oracle decides it neither), 0.71 / 25.3 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import ClusterModel
from kafka_ops.planner import (
    plan_add_brokers,
    plan_fix_offline,
    plan_migrate_pool,
    plan_rebalance,
    plan_remove_brokers,
)
from kafka_ops.testing.drain_oracle import drain_breaks, drain_fits
from kafka_ops.testing.feasibility import check_hard_goals, offline
from kafka_ops.testing.grown import grown_pools, grown_removal, grown_spec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_metrics import pool_topic_spread  # noqa: E402

_UP_FRONT = ("no plan fits them", "must move, but", "with room for one replica", "fewer than the replication factor",
             "but its pool")


def verdict(message: str) -> str:
    if "proved by CP-SAT" in message or "every one tried" in message:
        return "refused, proved by search"
    if "may still exist" in message:
        return "refused, undecided"
    if any(s in message for s in _UP_FRONT):
        return "refused, proved before any search"
    return "refused, greedy error alone"


def run(seed: int, mode: str, pooled: bool = False) -> dict[str, Any]:
    spec = grown_spec(seed)
    rec: dict[str, Any] = {"seed": seed, "spec": spec}
    cluster = generate_cluster("medium", seed=seed, **spec)
    pools = grown_pools(cluster, seed) if pooled else None
    gone: set[int] = set()
    if mode == "remove-brokers":
        gone = grown_removal(cluster, seed)
        rec["gone"] = sorted(gone)
    new = {b for b, x in cluster.brokers.items() if x.alive and not cluster.partitions_on(b)}
    if mode == "add-brokers":
        rec["new"] = sorted(new)
    rec["partitions"] = len(cluster.partitions)
    started = time.process_time()
    try:
        if mode == "rebalance":
            result = plan_rebalance(cluster, pools)
        elif mode == "remove-brokers":
            result = plan_remove_brokers(cluster, sorted(gone), pools)
        elif mode == "migrate-pool":
            assert pools is not None
            result = plan_migrate_pool(cluster, pools)
        elif mode == "add-brokers":
            if not new:
                rec["cpu"], rec["outcome"] = 0.0, "no empty broker to add"
                return rec
            result = plan_add_brokers(cluster, sorted(new), pools)
        else:
            result = plan_fix_offline(cluster, pools)
    except ValidationError as e:
        rec["cpu"] = round(time.process_time() - started, 2)  # the planner's, not the oracle's
        rec["outcome"] = verdict(str(e))
        rec["error"] = str(e)[:300]
        if mode in ("remove-brokers", "fix-offline", "migrate-pool"):
            migrate = mode == "migrate-pool"
            rec["oracle"] = {"others stay": drain_fits(cluster, gone, False, seconds=30, pools=pools, migrate=migrate),
                             "others move": drain_fits(cluster, gone, True, seconds=30, pools=pools, migrate=migrate)}
    else:
        rec["cpu"] = round(time.process_time() - started, 2)
        rec["moves"] = len(result.plan.replicas)
        rec["outcome"] = "planned"
        if result.summary.warnings and result.summary.warnings[0].startswith("the new brokers alone cannot"):
            rec["outcome"] = "planned, the start's breaks left"
            rec["repaired"] = {g.name: [g.before["violations"], g.after["violations"]] for g in result.summary.goals
                               if g.name in ("rack_awareness", "capacity")}
        # The rules as they stand after the mode: removed brokers count as dead.
        drained = ClusterModel([replace(b, alive=b.alive and b.id not in gone) for b in cluster.brokers.values()],
                               list(cluster))
        after = drained.with_assignment(result.plan.replicas)
        full = rec["outcome"] == "planned" and mode in ("rebalance", "add-brokers")
        broken = set(check_hard_goals(drained, after, pools) if full
                     else drain_breaks(cluster, gone, result.plan.replicas, pools))
        if mode == "add-brokers":
            for tp, target in result.plan.replicas.items():
                old = cluster.partitions[tp].replicas
                if set(target) - set(old) - new or target[0] not in {*new, old[0]}:
                    broken.add(f"{tp}: {old} -> {target}: an old broker gains a replica or leadership")
        # The executor's own rule, for every mode: a partition the plan changes (a new order
        # included) keeps no replica on a dead or removed broker, or it could never complete.
        down = {b for b, x in drained.brokers.items() if not x.alive}
        onto = [tp for tp, target in result.plan.replicas.items() if down & set(target)]
        rec["dead kept"] = len(onto)
        broken.update(f"{tp}: changed, and kept on a dead or removed broker" for tp in onto)
        if mode == "migrate-pool":
            assert pools is not None
            unpooled = set(cluster.brokers) - {b for pool in pools.pools.values() for b in pool.brokers}
            for p in after:
                pool = pools.pool_for_topic(p.topic)
                if offline(cluster, p):
                    continue  # nothing to copy from: left as it is (drain_breaks flags a change)
                if set(p.replicas) - (pool.brokers if pool is not None else unpooled):
                    broken.add(f"{p.tp}: a replica outside its pool")
        for b, broker in drained.brokers.items():
            limit = 0.8 * broker.capacity.disk_bytes
            disk = sum(p.size_bytes for p in after.partitions_on(b))
            if broker.alive and limit and disk > max(limit, sum(p.size_bytes for p in cluster.partitions_on(b))):
                broken.add(f"broker {b}: disk above its limit and its start")
        if broken:
            rec["outcome"] = "planned, a rule broken"
            rec["broken"] = sorted(broken)[:5]
        if pools is not None and mode in ("rebalance", "migrate-pool"):
            spread, floor = pool_topic_spread(cluster, pools, result.plan.replicas)
            rec["topic spread"] = [pool_topic_spread(cluster, pools)[0], spread, floor]
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("rebalance", "add-brokers", "remove-brokers", "fix-offline", "migrate-pool"),
                    default="rebalance")
    ap.add_argument("--pools", action="store_true")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--json")
    args = ap.parse_args()
    lo, hi = map(int, args.seeds.split("-"))
    records = []
    for seed in range(lo, hi + 1):
        rec = run(seed, args.mode, args.pools or args.mode == "migrate-pool")
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
    left = [r["repaired"] for r in records if "repaired" in r]
    for goal, what in (("rack_awareness", "partitions crowding a rack"),
                       ("capacity", "limits exceeded (a broker's disk, network or count)")):
        if left:
            print(f"plans leaving the start's breaks: {what} {sum(x[goal][0] for x in left):g} -> "
                  f"{sum(x[goal][1] for x in left):g}")
    spread = [r["topic spread"] for r in records if "topic spread" in r]
    if spread:
        print(f"per-topic replica spread over each pool's brokers, summed over {len(spread)} plans: "
              f"{sum(x[0] for x in spread):,} -> {sum(x[1] for x in spread):,} (rack floor "
              f"{sum(x[2] for x in spread):,}); plans above twice their floor: "
              f"{sum(1 for x in spread if x[1] > 2 * x[2])}")
    dead = [r for r in records if r.get("dead kept")]
    print(f"plans that change a partition and keep its replica on a dead broker: {len(dead)} "
          f"({sum(r['dead kept'] for r in dead)} partitions)")
    look = [r for r in records if r["outcome"] in ("planned, a rule broken", "refused, greedy error alone")
            or (r["outcome"].startswith("refused, proved") and r.get("oracle", {}).get("others move"))]
    for r in look:
        print(f"look at seed {r['seed']}: {r['outcome']}: {r.get('broken') or r.get('error')} {r.get('oracle', '')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
