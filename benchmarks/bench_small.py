"""Small clusters: the planner against what the loads allow, decided exactly (exact_targets.py).

    .venv/bin/python benchmarks/bench_small.py [--seeds A-B] [--json OUT]

Each seed draws a cluster from the generator's small preset with its size and shape overridden
(6-12 brokers, 40-300 partitions, 2-30% hot topics, 0-2 empty new brokers, 0-15% hand-moved
replicas): the clusters most operators run, where one partition is a large share of a broker's
load. Every plan is scored by plan_metrics (as bench_planner and the peers are); each load
target it misses, and that no single partition explains, is put to CP-SAT: could any
assignment meet it, within the rack rule, capacity and even counts, with the goals before it
(disk, network in, network out, leader bytes-in, in the planner's order) no worse than the plan
left them? A miss it calls attainable is the planner's gap; the rest is what the loads allow.
A miss that a single partition explains (plan_metrics' floor) is the floor's only where the
plan is within 0.01 of it; above that, CP-SAT is asked whether any assignment gets 0.01 nearer
("gap above floor" if one does).

``--moves`` also puts each plan's moves to CP-SAT (exact_targets.fewest_moves): the fewest any
assignment needs to reach the same loads, counts as even. Its proven lower bound is a tighter
yardstick than plan_metrics' count bound, which ignores the moves the load goals need.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from exact_targets import TARGETS, attainable, fewest_moves  # noqa: E402
from plan_metrics import moves, score, targets_missed  # noqa: E402

from kafka_ops.errors import ValidationError  # noqa: E402
from kafka_ops.generator import generate_cluster  # noqa: E402
from kafka_ops.planner import plan_rebalance  # noqa: E402

_METRIC = {"disk": "disk_max_mean", "network_in": "net_in_max_mean",
           "network_out": "net_out_max_mean", "leader_bytes_in": "leader_in_max_mean"}
_FLOOR = {"disk": "disk_floor", "network_in": "net_in_floor", "network_out": "net_out_floor",
          "leader_bytes_in": "leader_in_floor"}
_NEAR = 0.01  # a plan this close above a floor is at it
_LABEL = {"disk": "disk", "network_in": "network in", "network_out": "network out",
          "leader_bytes_in": "leader bytes-in"}


def shape(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    return {"brokers": rng.choice([6, 6, 9, 12]), "partitions": rng.choice([40, 80, 150, 300]),
            "hot_topic_share": rng.choice([0.02, 0.1, 0.3]), "new_brokers": rng.choice([0, 1, 2]),
            "hand_moved_share": rng.choice([0.0, 0.05, 0.15])}


def run_seed(seed: int, with_moves: bool = False) -> dict[str, Any]:
    cluster = generate_cluster("small", seed, **shape(seed))
    cpu = time.process_time()
    try:
        result = plan_rebalance(cluster)
    except ValidationError as e:
        return {"seed": seed, "refused": str(e).splitlines()[0]}
    cpu = time.process_time() - cpu
    after, cost = score(cluster, result.plan.replicas), moves(cluster, result.plan.replicas)
    missed = targets_missed(after, cost)
    verdicts: dict[str, str] = {}
    earlier: dict[str, float] = {}  # the goals before each target, no worse than the plan left them
    for target, limit in TARGETS.items():
        if after[_METRIC[target]] <= limit + 1e-9:
            verdicts[target] = "met"
        elif any(m.startswith(_LABEL[target]) and "allow no better" in m for m in missed):
            # The floor explains the target, not the plan above it: could any assignment get
            # nearer the floor than the plan?
            verdicts[target] = "floor" if after[_METRIC[target]] <= after[_FLOOR[target]] + _NEAR else {
                True: "gap above floor", False: "floor", None: "undecided"}[
                attainable(cluster, target, earlier, limit=after[_METRIC[target]] - _NEAR)]
        else:
            verdicts[target] = {True: "gap", False: "not attainable", None: "undecided"}[
                attainable(cluster, target, earlier)]
        earlier[target] = max(limit, after[_METRIC[target]])
    out = {"seed": seed, "cpu_s": cpu, "after": after, "cost": cost, "missed": missed,
           "verdicts": verdicts}
    if with_moves:
        out["fewest_moves"] = fewest_moves(cluster, result.plan.replicas)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-99")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--moves", action="store_true", help="each plan's moves against CP-SAT's fewest")
    args = parser.parse_args()
    a, b = (int(x) for x in args.seeds.split("-"))
    results = []
    for seed in range(a, b + 1):
        r = run_seed(seed, args.moves)
        results.append(r)
        line = (r.get("refused") or " ".join(f"{t}={v}" for t, v in r["verdicts"].items() if v != "met")
                or "every load target met")
        if "fewest_moves" in r:
            found, least = r["fewest_moves"]
            line += f"  moves {r['cost']['moves']} (fewest found {found}, at least {least})"
        print(f"seed {seed:4d}  {line}", flush=True)
    planned = [r for r in results if "verdicts" in r]
    print(f"\n{len(results)} clusters, {len(planned)} planned, {len(results) - len(planned)} refused "
          "(capacity: a partition too large for the brokers' 80%)")
    print(f"{'target':<16} {'met':>5} {'floor':>6} {'not attainable':>15} {'gap':>5} {'gap above floor':>16} "
          f"{'undecided':>10}")
    for target in TARGETS:
        c = Counter(r["verdicts"][target] for r in planned)
        print(f"{_LABEL[target]:<16} {c['met']:>5} {c['floor']:>6} {c['not attainable']:>15} "
              f"{c['gap']:>5} {c['gap above floor']:>16} {c['undecided']:>10}")
    other = Counter(re.sub(r" [\d.]+.*", "", m) for r in planned for m in r["missed"]
                    if not m.startswith(tuple(_LABEL.values())))
    print("other targets missed:", dict(sorted(other.items())) or "none")
    cpu = sorted(r["cpu_s"] for r in planned)
    print(f"planner CPU: mean {statistics.mean(cpu):.2f} s, p90 {cpu[int(0.9 * len(cpu))]:.2f} s, "
          f"max {cpu[-1]:.2f} s")
    if args.moves:
        ratios = [r["cost"]["moves"] / max(1, r["fewest_moves"][1]) for r in planned]
        exact = sum(r["fewest_moves"][0] == r["fewest_moves"][1] for r in planned)
        print(f"moves / CP-SAT's lower bound: mean {statistics.mean(ratios):.3f}, max {max(ratios):.3f}; "
              f"within 1.10: {sum(x <= 1.10 + 1e-9 for x in ratios)} of {len(planned)} "
              f"(count bound: {sum(r['cost']['moves'] <= 1.10 * r['cost']['moves_bound'] + 1e-9 for r in planned)}); "
              f"fewest proved on {exact}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
