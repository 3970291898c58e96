"""Network and leader-load balance: what only count-neutral trades can reach, and the warning
when one partition makes a bound unreachable.

The count goals (replicas, leaders) run first with threshold 0, so on these clusters every
single replica move or leadership transfer breaks them: only a leadership trade (p's leadership
one way, q's the other) or a replica swap of the same role and about the same size keeps them.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
from pathlib import Path

import pytest

from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.planner import PlannerOptions, plan_rebalance
from kafka_ops.planner.context import Run
from kafka_ops.planner.goals import HARD_GOALS, SOFT_GOALS
from kafka_ops.planner.state import WorkingState
from kafka_ops.planner.trades import BrokerReplicas, best_replica_swap, trade_cost

GiB, MiB = 1024**3, 1024**2


def part(topic: str, p: int, replicas: tuple[int, ...], size: int = GiB, rate: float = 1.0,
         out: float = 1.0) -> Partition:
    return Partition(topic, p, replicas, leader=replicas[0], size_bytes=size,
                     bytes_in_per_sec=rate, bytes_out_per_sec=out)


def after(result: object, name: str) -> dict[str, float]:
    return next(g.after for g in result.summary.goals if g.name == name)  # type: ignore[attr-defined]


def test_default_network_thresholds_are_the_issue_targets() -> None:
    assert SOFT_GOALS["network_in"].default_threshold == 0.05  # type: ignore[attr-defined]
    assert SOFT_GOALS["network_out"].default_threshold == 0.05  # type: ignore[attr-defined]
    assert SOFT_GOALS["leader_bytes_in"].default_threshold <= 0.10  # type: ignore[attr-defined]
    assert SOFT_GOALS["disk"].default_threshold <= 0.025  # type: ignore[attr-defined]


def test_network_out_needs_a_leadership_trade() -> None:
    """Broker 0 sends 100, broker 1 sends 50; each leads one partition of each topic.

    Any single transfer breaks the exact leader count (and a topic's leader spread); trading
    a-0 (60) for a-1 (35), or b-0 (40) for b-1 (15), evens it out.
    """
    brokers = [Broker(0), Broker(1)]
    c = ClusterModel(brokers, [
        part("a", 0, (0, 1), rate=0.0, out=60.0),
        part("b", 0, (0, 1), rate=0.0, out=40.0),
        part("a", 1, (1, 0), rate=0.0, out=35.0),
        part("b", 1, (1, 0), rate=0.0, out=15.0),
    ])
    result = plan_rebalance(c)
    assert result.summary.replica_moves == 0
    assert after(result, "leader_count")["max_minus_min"] == 0
    assert after(result, "network_out")["max_over_mean"] <= 1.05
    assert not result.summary.warnings
    leaders = {(tp.topic, tp.partition): reps[0] for tp, reps in result.plan.replicas.items()}
    assert leaders in ({("a", 0): 1, ("a", 1): 0}, {("b", 0): 1, ("b", 1): 0})


def test_network_in_needs_a_size_matched_replica_swap() -> None:
    """Two brokers with four replicas and 40 GiB each; broker 0 takes 7 bytes/s, broker 1 five.

    A single move breaks the replica count and a swap of different sizes the disk bound (2.5%):
    only a trade of two 10 GiB replicas whose rates differ by about one evens traffic out.
    """
    c = ClusterModel([Broker(0), Broker(1)], [
        part("a", 0, (0,), size=10 * GiB, rate=4.0),
        *(part("f", i, (0,), size=10 * GiB, rate=1.0) for i in range(3)),
        part("c", 0, (1,), size=10 * GiB, rate=2.8),
        part("g", 0, (1,), size=5 * GiB, rate=1.0),
        part("g", 1, (1,), size=15 * GiB, rate=1.0),
        part("g", 2, (1,), size=10 * GiB, rate=0.2),
    ])
    result = plan_rebalance(c)
    assert result.summary.replica_moves == 2
    assert after(result, "replica_count")["max_minus_min"] == 0
    assert after(result, "disk")["max_over_mean"] == 1.0
    assert after(result, "network_in")["max_over_mean"] <= 1.05


def test_one_partition_too_big_is_named_in_a_warning() -> None:
    """t-0 alone takes 100 of 105 bytes/s of traffic: no plan gets network in within 5%."""
    brokers = [Broker(b) for b in range(3)]
    parts = [part("t", 0, (0,), rate=100.0, out=0.0)]
    parts += [part("u", i, (i % 3,), rate=1.0, out=0.0) for i in range(5)]
    result = plan_rebalance(ClusterModel(brokers, parts))
    warning = next(w for w in result.summary.warnings if w.startswith("network_in:"))
    assert "t-0" in warning and "not reachable" in warning
    assert "network_in" in result.summary.format_text()


def test_a_broker_pinned_above_the_floor_of_its_giant_partition_says_where_it_ends() -> None:
    """t-0 alone sends 100 of 110 bytes/s: broker 0 leads it and u-0 (10), and with its share
    of two leaders it could carry 100 (2.73x the mean) had it led a v partition instead. Every
    such swap breaks the disk goal (a 10 GiB replica for a 20 GiB one), so it ends at 110 (3x):
    the warning names the floor and says where the broker ended, and why."""
    brokers = [Broker(b) for b in range(3)]
    parts = [part("t", 0, (0,), size=30 * GiB, rate=0.0, out=100.0),
             part("u", 0, (0,), size=10 * GiB, rate=0.0, out=10.0),
             *(part("v", i, (1 + i // 2,), size=20 * GiB, rate=0.0, out=0.0) for i in range(4))]
    result = plan_rebalance(ClusterModel(brokers, parts))
    warning = next(w for w in result.summary.warnings if w.startswith("network_out:"))
    assert warning == (
        "network_out: t-0 alone is 2.73x a broker's mean; with its share of leaders the broker "
        "holding it carries at least 2.73x, so 1.05 is not reachable; broker 0 ends at 3.000x: "
        "no trade the earlier goals accept brings it nearer")
    assert after(result, "disk")["max_over_mean"] == 1.0


def test_a_rack_the_rack_rule_holds_above_the_bound_is_named_in_a_warning() -> None:
    """Racks a and b have three brokers, rack c two: each of the 30 RF-3 partitions puts a
    replica in each rack, so brokers 6 and 7 carry 15 of the 96 equal replicas, 1.25x the mean
    disk and traffic, whatever the plan. The summary said "not reached ... no trade the earlier
    goals accept evens it out" (crowded-medium seed 515: a rack of 7 forced to 1.048x the mean
    disk); it says the rack holds that much and the bound is not reachable."""
    brokers = [Broker(b, rack) for b, rack in enumerate("aaabbbcc")]
    parts = [part("t", i, (i % 3, 3 + (i + 1) % 3, 6 + i % 2)) for i in range(30)]
    parts += [part("u", i, (0,)) for i in range(6)]
    warnings = plan_rebalance(ClusterModel(brokers, parts)).summary.warnings
    for goal, limit in (("disk", "1.025"), ("network_in", "1.05")):
        warning = next(w for w in warnings if w.startswith(f"{goal}:"))
        assert warning.startswith(f"{goal}: {limit} not reachable: the rack of brokers 6, 7 holds at "
                                  "least 1.250x the mean per broker"), warning


def test_balanced_loads_give_no_warning() -> None:
    brokers = [Broker(b) for b in range(3)]
    parts = [part("t", i, (i % 3, (i + 1) % 3)) for i in range(6)]
    result = plan_rebalance(ClusterModel(brokers, parts))
    assert not result.summary.warnings


def test_grown_cluster_reaches_every_load_target() -> None:
    """A generator cluster (grown over years, new empty brokers): every load goal within bounds."""
    c = generate_cluster("medium", seed=3, partitions=3000, brokers=12, new_brokers=2)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "replica_count")["max_minus_min"] <= 1
    assert after(result, "leader_count")["max_minus_min"] <= 1
    assert after(result, "disk")["max_over_mean"] <= 1.03
    assert after(result, "network_in")["max_over_mean"] <= 1.05


def test_a_rack_short_of_replicas_that_may_cross_keeps_them_for_other_racks() -> None:
    """Crowded-medium seed 43 again: the crowded rack must shed 702 replicas to other racks and
    holds 1,036 that may cross (RF-2), 52 of them giants. Moves inside the rack, to its two new
    brokers, took 169 of the small ones, so the giants crossed instead (32 of 52) and the disk
    goal copied most of them back: bytes 1.647 x the bound. Kept for the crossing moves
    (replica_racks.short_racks): 1.149, moves 1.053 -> 1.036 x their bound; with givers left
    without disk excess giving their smallest replicas and takers past the mean disk refusing
    large ones (replica_count._wish): bytes 1.081, moves 1.045. With the rack shedding its
    smallest such replicas first, from any of its brokers (_shed_scarce_racks): bytes 1.066,
    moves 1.050 (some of its brokers give one and take another back from inside the rack)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-medium", seed=43)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.06 * cost["moves_bound"]
    assert after(result, "network_out")["max_over_mean"] <= 1.05
    assert after(result, "leader_bytes_in")["max_over_mean"] <= 1.10
    assert not [w for w in result.summary.warnings if "network" in w]


def _within_the_issues_bounds(preset: str, seed: int) -> None:
    """The plan's moves and bytes within 1.10 x plan_metrics' bounds, its disk within 1.03."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster(preset, seed=seed)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.10 * cost["moves_bound"]
    assert after(result, "disk")["max_over_mean"] <= 1.03


@pytest.mark.parametrize("seed", [175, 273])
def test_a_rack_above_its_disk_share_keeps_scarce_replicas_that_may_cross(seed: int) -> None:
    """Crowded-medium seeds 175 and 273: the crowded rack also holds more than its share of
    disk, so replicas that may cross to other racks (RF 2) were not kept for that, and moves
    inside the rack used up the small ones. On seed 273 the rack had 1,127 of them for 763
    replicas to shed; after its disk excess was gone it still sent 81 GB replicas across, and
    the disk goal copied bytes back: 1.112 x the bytes bound (seed 175: 1.135). Kept while
    they are that scarce (replica_racks.short_racks): 1.079 and 1.076."""
    _within_the_issues_bounds("crowded-medium", seed)


@pytest.mark.parametrize("seed", [92, 245, 371])
def test_a_rack_short_of_replicas_that_may_cross_sheds_those_its_disk_needs_gone(seed: int) -> None:
    """Crowded-medium seeds 245 and 371 (unseen until the sweep that found them): a rack of 7
    brokers must send some 550-580 replicas to other racks and holds few more that may go (RF
    2), at about its share of disk. Its fullest brokers sent all of theirs, giants included
    (seed 371: 0.97 x the mean disk for 596 replicas; the 582 smallest carry 0.16), and the
    disk goal copied bytes back: 1.114 and 1.236 x the bytes bound. Seed 92's rack is 0.56 x
    the mean above its share of disk and those replicas carry 0.41: 1.106. Shed first, the
    smallest or the largest, from any of the rack's brokers
    (ReplicaCountGoal._shed_scarce_racks): 1.041, 1.063 and 1.091."""
    _within_the_issues_bounds("crowded-medium", seed)


@pytest.mark.parametrize("seed", [560, 587])
def test_a_scarce_rack_whose_crossing_replicas_are_mostly_giants_sheds_the_smallest(seed: int) -> None:
    """Crowded-medium seeds 560 and 587 (unseen until the sweep that found them): a rack of 7
    brokers must send some 600 replicas to other racks, 0.19 and 0.36 x the mean disk above
    its share, and those that may go (RF 2) carry 3.1 and 2.6: mostly giants. Left to its
    givers, who pick by topic, the giants went (seed 560: 2.8 x the mean disk across, the
    rack's brokers down to 0.53) and the disk goal copied them back: 1.235 and 1.125 x the
    bytes bound. The smallest shed first (ReplicaCountGoal._shed_scarce_racks, _SKEWED):
    1.073 and 1.037."""
    _within_the_issues_bounds("crowded-medium", seed)


def test_disk_gaps_the_count_goal_left_are_closed_by_re_targeting_its_own_moves() -> None:
    """Crowded-medium seed 221: the count goal filled brokers that needed many replicas and
    few bytes (18: 423 -> 1,241 replicas) with the sizes their givers shed, up to 1.10-1.13 x
    the mean disk, while two brokers added empty ended at 0.82-0.85. The disk goal evened
    each pair out with a giant replica copied whole: bytes 1.142 x the bound. A swap of two
    replicas the plan moved already (each still moves once) copies nothing: the count goal's
    moves re-targeted close those gaps (BalanceGoal._retarget), 1.089."""
    _within_the_issues_bounds("crowded-medium", 221)


def test_a_re_target_swap_moves_only_replicas_the_plan_moved_already() -> None:
    """best_replica_swap(moved_only=True) weighs only replicas on brokers they did not start
    on: b (moved 2 -> 0) for d (moved 3 -> 1) copies nothing new. Had d started on broker 1,
    every swap there would copy, and it offers none."""
    disk = SOFT_GOALS["disk"]
    for d_moved in (True, False):
        parts = [part("a", 0, (0,), size=10 * GiB), part("b", 0, (2,), size=11 * GiB),
                 part("c", 0, (1,)), part("d", 0, (3,) if d_moved else (1,)), part("e", 0, (1,))]
        st = WorkingState(ClusterModel([Broker(i) for i in range(4)], parts))
        b, d = (next(i for i, tp in enumerate(st.tps) if tp.topic == t) for t in "bd")
        st.move(b, 2, 0)
        if d_moved:
            st.move(d, 3, 1)
        run = Run(st, PlannerOptions())
        run.vetoes = list(HARD_GOALS)
        reps = BrokerReplicas(disk, run, 0)
        delta = (st.disk[0] - st.disk[1]) / 2
        assert best_replica_swap(run, reps, 0, 1, delta, 2 * delta) is not None
        swap = best_replica_swap(run, reps, 0, 1, delta, 2 * delta, moved_only=True)
        if d_moved:
            assert swap == ((b, 0, 1), (d, 1, 0)) and trade_cost(st, swap) == (0, 0)
        else:
            assert swap is None


def test_a_disk_gap_only_giant_swaps_close_at_once_is_closed_in_smaller_trades() -> None:
    """Broker 0 holds a 500 GiB replica and twenty of 40, broker 1 a 400 GiB one, ten of 19 and
    ten of 1 (1,300 against 600 GiB, equal counts). Aimed at the whole gap (350 GiB each way),
    the swap search offers only the giant, for a 19 GiB one: every such trade copies more than
    it closes, the goal took it anyway, and broker 1 ended at 1,081 GiB (1.138 x the mean)
    where nothing evened it out again (crowded-medium seed 667: 533 GiB replicas for 405 GiB
    ones inside a crowded rack, bytes 1.373 x the bound). A quarter of the gap at a time, the
    40 GiB replicas go for the 1 GiB ones: both brokers within the bound, the giant stays."""
    gib = GiB
    parts = [part("g", 0, (0,), size=500 * gib), *(part("a", i, (0,), size=40 * gib) for i in range(20)),
             part("h", 0, (1,), size=400 * gib), *(part("b", i, (1,), size=gib) for i in range(10)),
             *(part("c", i, (1,), size=19 * gib) for i in range(10))]
    result = plan_rebalance(ClusterModel([Broker(0), Broker(1)], parts))
    assert after(result, "disk")["max_over_mean"] <= 1.025
    assert ("g", 0) not in result.plan.replicas
    assert result.summary.replica_moves <= 20


def test_a_rack_forced_just_below_the_disk_bound_evens_its_brokers_out_below_it() -> None:
    """Crowded-medium seed 119: the rack rule makes a rack of 7 hold 1.0298 x the mean disk
    per broker, a hair under the 1.03 target. Its brokers evened out to within 0.0002 x the
    mean of each other left one at 1.0301 (BalanceGoal._even_rack); within 0.0001, 1.02996."""
    c = generate_cluster("crowded-medium", seed=119)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "disk")["max_over_mean"] <= 1.03


def test_a_rack_just_below_the_network_in_bound_evens_its_brokers_out_within_it() -> None:
    """Crowded-medium seed 506 (unseen while the goals were tuned): a rack of 7 brokers that
    holds a replica of every RF-3 partition ends at 1.0499 x the mean network in, its brokers
    1.0492-1.0506, and no other rack may take its replicas. Trades of 0.001 x the mean inside
    it would push the partner over the bound: evened out in finer ones, as a rack above the
    bound is (BalanceGoal._even_rack), every broker ends within 1.05."""
    c = generate_cluster("crowded-medium", seed=506)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_in")["max_over_mean"] <= 1.05


def test_a_rack_at_its_disk_floor_sheds_the_last_network_in_in_small_trades() -> None:
    """Crowded-medium seed 602 (unseen while the goals were tuned): a rack of 7 brokers pinned
    at its disk floor (1.059 x the mean) ended at 1.0514 x the mean network in, every broker of
    it. Its swaps with other racks that keep its disk each close 0.0004 x the mean, less than
    the 0.001 a trade had to; the rack's floor given that disk is 1.045 (a linear program)."""
    c = generate_cluster("crowded-medium", seed=602)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_in")["max_over_mean"] <= 1.05
    assert after(result, "disk")["max_over_mean"] <= 1.059


def test_a_giver_without_disk_excess_left_gives_its_smallest_replicas() -> None:
    """Medium seed 43: six new brokers, and old ones whose replica counts differ 4x at equal
    disk. The count goal weighed each move's size by the taker's wish too, so givers that had
    shed their disk excess went on giving a third of the taker's size: six ended at 0.94-0.96 x
    the mean disk, and the disk goal refilled them with giants (bytes 1.159 x the bound)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("medium", seed=43)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.10 * cost["moves_bound"]
    assert after(result, "disk")["max_over_mean"] <= 1.03


def test_a_taker_past_the_mean_disk_takes_no_large_replica_for_topic_evenness() -> None:
    """Crowded-medium seed 73: brokers added mid-life needed hundreds of replicas more but
    already held their share of disk; the count goal weighed a large replica beyond the ideal
    size as a small cost against evening a topic out, and they ended far above the mean disk
    for the disk goal (and then the network-in goal) to move it on: bytes 1.115 x the bound."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-medium", seed=73)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.10 * cost["moves_bound"]


def test_brokers_given_up_on_trade_again_once_their_rack_sheds_elsewhere() -> None:
    """Crowded-medium seed 71: the disk goal gave up on three brokers of the crowded rack at
    1.0315 x mean while the rack's other four sat at its bound (no room to take); those four
    then shed small replicas to other racks and fell to 1.025, but nothing retried the three.
    Retried after trades elsewhere, the rack ends at 1.029 (its floor: 1.0277)."""
    result = plan_rebalance(generate_cluster("crowded-medium", seed=71), options=PlannerOptions())
    assert after(result, "disk")["max_over_mean"] <= 1.03
    assert after(result, "replica_count")["max_minus_min"] <= 1


def test_hot_network_estimate_from_the_spark_e2e_balances() -> None:
    """The cluster the metrics e2e test planned from when CI failed (network in 1.21).

    Rack repair empties brokers 0-3 onto 4 and 5; which replicas the count goal then picks to
    even them out decides whether the disk and network goals can still swap (no replica moves
    twice). With the vetoes asked after the search's early stops (a vetoed candidate ending the
    search), the count goal picked another replica and both goals were left without a swap:
    disk 1.12, network in 1.21. Reachable here: disk and network in within their bounds.
    """
    data = json.loads((Path(__file__).parent / "data" / "hot_network_estimate.json").read_text())
    model = ClusterModel(
        [Broker(b, rack) for b, rack in data["brokers"]],
        [part(t, p, tuple(replicas), size, rate, out)
         for t, p, replicas, size, rate, out in data["partitions"]])
    result = plan_rebalance(model)
    assert after(result, "replica_count")["max_minus_min"] == 0
    assert after(result, "disk")["max_over_mean"] <= 1.025
    assert after(result, "network_in")["max_over_mean"] <= 1.06


def test_crowded_racks_disk_ends_near_what_the_racks_allow() -> None:
    """Grown clusters with a hand-crowded rack left one broker short by a dead broker: the rack
    of fewer brokers holds a replica of every RF-3 partition, so its brokers carry more disk (and
    more replicas: on 11 brokers the counts cannot end one apart) and only replicas of
    partitions absent from the other rack may cross. Scored against the rack floor of the
    benchmark's metric script (plan_metrics: what each rack's forced replicas and the lightest
    replicas that may join them put on its brokers; a lower bound). Before the swap search kept
    only replicas that may cross, the gap to the floor was 0.12 x mean on average over these
    seeds, up to 0.25; now at most 0.001. The topic goals then trade within the range the disk
    goal kept for the short rack's brokers (it could not bring them within its bounds): the
    per-topic spread ends at 2.51 x its floor on average, 2.84 when those brokers were frozen;
    disk trades that move less than 0.1% of the mean are not made, which keeps the moves
    within 1.10 x their lower bound (up to 1.124 without)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    gaps, spreads, moves = [], [], []
    for seed in range(8):
        c = generate_cluster("crowded-medium", seed=seed, brokers=12, partitions=1500)
        result = plan_rebalance(c, options=PlannerOptions())
        s = metrics.score(c, result.plan.replicas)
        cost = metrics.moves(c, result.plan.replicas)
        assert s["rack_violations"] == 0
        gaps.append(s["disk_max_mean"] - s["disk_floor"])
        spreads.append(s["topic_spread_sum"] / s["topic_spread_floor_racks"])
        moves.append(cost["moves"] / cost["moves_bound"])
    assert max(gaps) <= 0.01, gaps
    assert sum(spreads) / len(spreads) <= 2.6, spreads
    assert max(moves) <= 1.10, moves


def test_a_load_goal_left_above_its_bounds_lets_later_goals_trade_within_what_it_kept() -> None:
    """Rack c has 2 brokers, racks a and b 3: every RF-3 partition puts a replica on broker 6
    or 7, which end at 24 and 28 GiB where the bound is 1.025 x 19.5. Later goals may move
    load between the two (up to the 28 GiB the disk goal kept: the max does not grow); before,
    both were frozen (no broker above its bound could gain a byte), so the topic goals could
    not touch a replica of rack c."""
    sizes = {6: [4, 4, 4, 4, 4, 4], 7: [8, 4, 4, 4, 4, 4]}
    parts = [part("t", 2 * i + (c == 7), (i % 3, 3 + (i + c) % 3, c), size * GiB)
             for c, row in sizes.items() for i, size in enumerate(row)]
    st = WorkingState(ClusterModel([Broker(b, rack) for b, rack in enumerate("aaabbbcc")], parts))
    run = Run(st, PlannerOptions())
    run.vetoes = list(HARD_GOALS)
    disk = SOFT_GOALS["disk"]
    disk.optimize(run)
    lo, hi = disk.bounds(run, 0)
    assert hi < st.disk[6] < st.disk[7] == 28 * GiB  # the rack forces them; no swap evens them
    low, high = disk.limits(run, 0, 6)
    assert (high, low) == (28 * GiB, min(st.disk[:6]))  # the range of the loads it ended with
    big = next(p for p in range(st.np) if st.replicas[p][2] == 7 and st.size[p] == 8 * GiB)
    small = next(p for p in range(st.np) if st.replicas[p][2] == 6)
    assert disk.accepts(run, [(big, 7, 6), (small, 6, 7)])  # 6 ends at 28 GiB, 7 at 24
    assert not disk.accepts(run, [(big, 7, 6)])  # 6 would end at 32 GiB: above what was kept


def test_a_broker_at_the_disk_bound_sheds_traffic_by_a_swap_of_equal_size() -> None:
    """Crowded-medium seed 15: a broker ends the disk goal at its lower bound with network in
    above 1.05 x mean. Its hot replicas need partners at least as large and the lightest
    replicas of every other broker are small: the swap search also weighs the replicas nearest
    the size the disk bounds allow (before, network in ended at 1.054)."""
    c = generate_cluster("crowded-medium", seed=15)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_in")["max_over_mean"] <= 1.05


def test_a_broker_at_the_disk_bound_whose_hot_replicas_are_its_large_ones_sheds_traffic_through_a_relay() -> None:
    """Medium seed 132 (first run after the goals were tuned on seeds 0-95): broker 13 ends the
    disk goal at its lower bound (0.9752 x mean) with network in at 1.0605 x mean. Its hot
    replicas are its large ones, and a brute-force search over every swap with every lighter
    broker found none keeping both disks within the bounds. A network-in trade with its disk
    limit widened, repaid by a swap that brings a larger, cold replica back from a broker of its
    rack (disk_relay.py), ends it within 1.05; the disk goal stays satisfied and the plan within
    its move and byte bounds."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("medium", seed=132)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_in")["max_over_mean"] <= 1.05
    assert after(result, "disk")["brokers_out_of_bounds"] == 0
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.10 * cost["moves_bound"]


@pytest.mark.parametrize("seed", [11, 14])
def test_giant_replicas_move_with_the_counts_and_the_disk_goal_copies_no_waste(seed: int) -> None:
    """Medium seeds 11 and 14: the givers' disk excess is largely replicas of giant topics
    (10-16% of a broker's mean disk each), never near the count goal's per-move ideal size.
    Skipped by the count goal, they cost the disk goal trades of two moves each: seed 14's bytes
    moved ended at 1.169 x the bound. Moved by the count goal where one fits both brokers' disk
    gaps: 1.130 (1.150 once the topic-led first phase spent some count moves on whole topic
    steps). The rest was the disk goal's: a giant overshooting its pair's gap closed little and
    left its giver to be refilled by another copy (seed 11: 1.134, seed 14: 1.150); weighed by
    the bytes it copies beyond the gap it closes (balance._WASTE): 1.099 and 1.091."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("medium", seed=seed)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
    assert cost["moves"] <= 1.10 * cost["moves_bound"]


def test_a_crowded_rack_sheds_disk_in_small_re_targeted_replicas() -> None:
    """Crowded-medium seed 25: one rack's seven brokers hold a replica of nearly every RF-3
    partition and end the disk goal at 1.039 x mean, every broker of the rack alike; only small
    RF-2 replicas may cross to other racks, each trade closing less than the 0.1% of the mean a
    trade must. Trades of replicas this plan moved already copy nothing and may be that small:
    1.028-1.031 over versions of the count goal (each changes which replicas are re-targeted).
    The last four stopped at 1.0304, 0.0007 above the bound, beside brokers of their own rack
    with 0.0007 of room each: a trade closing its pair's whole delta may be that small too
    (balance._CLOSES), and the rack ends within the issue's 1.03."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-medium", seed=25)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "disk")["max_over_mean"] <= 1.03
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["moves"] <= 1.10 * cost["moves_bound"]


def test_a_rack_held_above_the_disk_bound_ends_even_at_its_mean() -> None:
    """Crowded-medium seed 147 (unseen while the goals were tuned): one rack of seven brokers
    must hold more disk than the goal's bound (1.025 x mean) allows. Its brokers gave up one by
    one while the rack's mean still fell (other brokers traded with other racks), and trades
    closing less than 0.1% of the mean were refused: they ended 1.0264-1.0304 x mean around a
    rack mean of 1.0297, above the issue's 1.03. Evened out to within 0.02% of the rack's mean
    (balance._even_rack), every broker ends at 1.0294."""
    c = generate_cluster("crowded-medium", seed=147)
    result = plan_rebalance(c, options=PlannerOptions())
    disk = dict.fromkeys(b for b, broker in c.brokers.items() if broker.alive)
    for tp, p in c.partitions.items():
        for b in result.plan.replicas.get(tp, p.replicas):
            disk[b] = (disk[b] or 0) + p.size_bytes
    mean = sum(disk.values()) / len(disk)
    top = max(disk, key=lambda b: disk[b])
    rack = [disk[b] / mean for b in disk if c.rack_of(b) == c.rack_of(top)]
    assert max(rack) <= 1.03
    assert max(rack) - min(rack) <= 0.001
    assert after(result, "disk")["max_over_mean"] <= 1.03


def test_a_light_rack_takes_load_through_its_fuller_brokers() -> None:
    """Crowded-medium seed 43 (a fresh seed: the sweep over 0-31 never had one like it): a giant
    RF-2 topic (80 partitions of 0.12 x a broker's mean disk) and one rack of 7 live brokers
    that must hold a replica of every RF-3 partition. The count goal sent the giants out of
    that rack (before replica_racks.short_racks; it still sends some); its lightest brokers
    then hold nothing that may leave it (0-1 replicas each may
    cross to the heavy rack) and its fuller ones sit at the disk bound, so no pair of brokers
    has a trade: the rack ended at 0.77 x the mean, the other racks' brokers stuck at 1.176.
    A relay (balance._rack_relay: a giant into a fuller broker of the light rack for one that
    may cross back, that broker's load on to the lightest inside the rack) ends disk at 1.025
    and network in at 1.045 (was 1.060)."""
    c = generate_cluster("crowded-medium", seed=43)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "disk")["max_over_mean"] <= 1.03
    assert after(result, "network_in")["max_over_mean"] <= 1.05


def test_an_over_filled_broker_gives_back_what_it_received_before_what_it_held() -> None:
    """Crowded-medium seed 27: the count goal over-fills brokers added mid-life (16 ends at
    1.19 x the mean disk). The disk goal's best swaps sent their large original replicas, each
    copied anew, since the small re-targeted ones closed under 30% of the best swap's gap and were
    never weighed: bytes 1.134 x the bound. Weighed down to 10% (trades._FREE_EFFICIENT):
    1.122. The issue's target is 1.10; what is left is the count goal's (it ends at 1.088),
    and the byte-savings pass takes it under (test_planner_savings)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-medium", seed=27)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.125 * cost["bytes_bound"]


def test_the_network_out_goal_may_crowd_a_topics_leaders_to_reach_its_bound() -> None:
    """Medium seed 11: held, like the leader bytes-in goal, to one leadership above each topic's
    share on a broker (LeaderLoads.piles), the network-out goal stalled at 1.10 x the mean. Its
    trades are not held so; the topic leader goal evens out after it."""
    c = generate_cluster("medium", seed=11)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_out")["max_over_mean"] <= 1.05
    assert after(result, "leader_bytes_in")["max_over_mean"] <= 1.10


def test_the_leader_count_goal_does_not_pile_a_topics_leaderships_on_one_broker() -> None:
    """Medium seed 376 (unseen until then): topic-00108 has 24 partitions on 24 brokers, each
    0.27-0.47 x a broker's mean network out. The leader count goal, earlier than the leader
    loads, passed them in transfers it counted as crowding nothing (a broker leading two gives
    one to a broker leading two), and broker 6 ended leading three, 1.0 x the mean by
    themselves: the network-out goal found no trade shedding one and stopped at 1.062. A
    transfer now crowds by how far above its share the new leader ends."""
    c = generate_cluster("medium", seed=376)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "network_out")["max_over_mean"] <= 1.05
    assert after(result, "leader_count")["max_minus_min"] <= 1


@pytest.mark.slow
def test_leadership_trades_for_leader_bytes_in_keep_network_out_within_its_bounds() -> None:
    """Crowded-xl seed 6: 20 partitions of one RF-2 topic each carry 0.43-0.78x a broker's mean
    leader bytes-in, and the 15 brokers leading them sit at the network-out goal's lower bound.
    Nearest the ideal leader bytes-in alone, network out refused 3,568 of the goal's leadership
    trades and the brokers ended at 1.189 x mean. Weighing more of each partner's leaderships,
    filtered by both brokers' network-out room (trades._OUT_WINDOW): 1.164. Where no partner
    has such a trade, two transfers with different partners (trades.leader_relay): 1.134. The
    issue's 1.10 takes replica moves carrying a hot leadership to a broker with room
    (leader_loads.leader_replica_swap: seven swaps); the summary then warns of nothing."""
    c = generate_cluster("crowded-xl", seed=6)
    result = plan_rebalance(c, options=PlannerOptions())
    assert after(result, "leader_bytes_in")["max_over_mean"] <= 1.10 + 1e-9
    assert after(result, "network_out")["max_over_mean"] <= 1.05
    assert not [w for w in result.summary.warnings if w.startswith("leader_bytes_in")]


def test_a_broker_whose_cheapest_swaps_close_too_little_takes_a_larger_one() -> None:
    """Broker 0 takes 1,052 bytes/s, broker 1 948; each holds 7 replicas and 161 GiB.

    Only same-size swaps keep the disk within 2.5%: a-0 for a-1 (1 GiB each) moves 0.9 bytes/s,
    below the 0.001 x mean a trade must move; b-0 for b-1 (10 GiB each) moves 2.9, enough.
    The a swap copies less per byte/s closed: the search must not offer it alone and give up
    (crowded-xl seed 10 ended network in at 1.101 x the mean that way).
    """
    c = ClusterModel([Broker(0), Broker(1)], [
        part("a", 0, (0,), size=GiB, rate=1.9),
        part("a", 1, (1,), size=GiB, rate=1.0),
        part("b", 0, (0,), size=10 * GiB, rate=3.9),
        part("b", 1, (1,), size=10 * GiB, rate=1.0),
        *(part("f", i, (0,), size=s * GiB, rate=236.5) for i, s in enumerate((20, 22, 25, 33))),
        *(part("f", 4 + i, (1,), size=s * GiB, rate=236.5) for i, s in enumerate((26, 28, 31, 35))),
        part("h", 0, (0,), size=50 * GiB, rate=100.2),
        part("h", 1, (1,), size=30 * GiB, rate=0.0),
    ])
    result = plan_rebalance(c)
    assert result.summary.replica_moves == 2
    assert sorted(tp.topic for tp in result.plan.replicas) == ["b", "b"]
    assert after(result, "disk")["max_over_mean"] == 1.0
    assert after(result, "network_in")["max_over_mean"] <= 1.05
    assert not result.summary.warnings


def test_a_broker_at_the_disk_bound_finds_a_swap_partner_near_its_replicas_size() -> None:
    """Broker 0 sits at the disk goal's lower bound (0.976 x mean) with network in 1.052 x.

    Its only useful swap is x (10 GiB, 4 bytes/s) for c (10.05 GiB, 0.5) on broker 1, which
    also holds 50 tiny idle replicas (the lightest loads, too small to take x's place) and 60
    replicas of 10.3-16 GiB, all hotter than x. The disk bounds let broker 0 take up to 0.05 x
    the mean disk more: the middle of that range (x's size + 19 GiB) is past every replica, so
    a search there sees only the 10.3-16 GiB ones; c is next to x's own size.
    """
    on1 = [part(f"t{i}", 0, (1,), size=GiB // 10, rate=0.0) for i in range(50)]
    on1.append(part("c", 0, (1,), size=int(10.05 * GiB), rate=0.5))
    on1 += [part(f"m{i}", 0, (1,), size=int((10.3 + 5.7 * i / 59) * GiB), rate=5.0) for i in range(60)]
    on0 = [part("x", 0, (0,), size=10 * GiB, rate=4.0)]
    on0 += [part(f"h{i}", 0, (0,), size=int(18.735 * GiB), rate=8.2375) for i in range(40)]
    on0 += [part(f"u{i}", 0, (0,), size=GiB // 10, rate=0.0) for i in range(70)]
    result = plan_rebalance(ClusterModel([Broker(0), Broker(1)], on0 + on1))
    assert {tp.topic: reps for tp, reps in result.plan.replicas.items()} == {"x": (1,), "c": (0,)}
    assert after(result, "network_in")["max_over_mean"] <= 1.05
    assert after(result, "disk")["max_over_mean"] <= 1.025
    assert not result.summary.warnings


def test_a_swap_of_a_leader_for_a_follower_hands_a_leadership_back() -> None:
    """Broker 0 holds 22 GiB, broker 1 holds 2; every broker leads two partitions.

    The only swap evening out the disk in two moves is big-0 (0 leads it) for new-0 (1 follows
    it); alone it moves a leadership from 0 to 1, which the exact leader counts refuse. h-0,
    led by 1 with its follower on 0, hands one back: two moves and one leadership change,
    where the swaps keeping both roles took four moves through brokers 2 and 3.
    """
    c = ClusterModel([Broker(i) for i in range(4)], [
        part("big", 0, (0, 2), size=10 * GiB), part("big", 1, (0, 3), size=10 * GiB),
        part("new", 0, (3, 1), size=0), part("new", 1, (2, 1), size=0),
        part("h", 0, (1, 0)), part("h", 1, (1, 0)),
        part("f", 0, (2, 3)), part("f", 1, (3, 2)),
    ])
    result = plan_rebalance(c)
    assert result.summary.replica_moves == 2
    assert after(result, "leader_count")["max_minus_min"] == 0
    assert after(result, "disk")["max_over_mean"] == 1.0
    assert {str(tp): reps for tp, reps in result.plan.replicas.items()} == {
        "big-0": (1, 2), "new-0": (3, 0), "h-0": (0, 1)}


def test_new_hot_topics_on_a_cluster_with_a_crowded_rack_even_out_disk_and_network_in() -> None:
    """Six brokers on three racks, 12 replicas and 6 leaderships each after the rack repair.

    Twelve partitions crowd rack c (brokers 4 and 5); three new hot topics (no data yet, 1.4-2.6
    MiB/s each) are led from rack a and followed on rack b. The replicas that may leave rack c
    for rack b end up leaders and those of rack b that may enter rack c followers: every swap
    keeping both roles is refused, and leader counts are exact. Without a leadership handed
    back the plan left disk at 1.125 and network in at 1.195 x the mean (the Spark end-to-end
    test met it when the analysed window put the hot topics' log sizes near zero).
    """
    rng = random.Random(7)
    hot_pairs = [(0, 2), (1, 3), (0, 3), (1, 2)]
    parts = [part(f"hot-{t}", p, pair, size=0, rate=2 * MiB * rng.uniform(0.7, 1.3))
             for t in range(3) for p, pair in enumerate(hot_pairs)]
    cold = [(4, 5), (5, 4)] * 6 + [(0, 3), (1, 2), (2, 0), (3, 1)] * 3
    parts += [part(f"cold-{i // 6}", i % 6, pair, rate=20 * 1024 * rng.uniform(0.7, 1.3))
              for i, pair in enumerate(cold)]
    result = plan_rebalance(ClusterModel([Broker(i, "abc"[i // 2]) for i in range(6)], parts))
    assert after(result, "rack_awareness")["violations"] == 0
    assert after(result, "leader_count")["max_minus_min"] == 0
    assert after(result, "disk")["max_over_mean"] <= 1.025
    assert after(result, "network_in")["max_over_mean"] <= 1.05
