"""Goal behaviour on tiny hand-built clusters named after their scenario (Cruise Control's
DeterministicCluster style): satisfiable and unsatisfiable hard goals, leadership before
moves, small replicas first, goal order and thresholds, and the summary."""

from __future__ import annotations

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.planner import PlannerOptions, PlanResult, plan_rebalance

GiB = 1024**3


def part(topic: str, p: int, replicas: tuple[int, ...], size: int = GiB, rate: float = 1.0) -> Partition:
    return Partition(topic, p, replicas, leader=replicas[0], size_bytes=size,
                     bytes_in_per_sec=rate, bytes_out_per_sec=rate)


def rack_aware_satisfiable() -> ClusterModel:
    """Both replicas of t-0 in rack r0 although r1 has a broker with room."""
    brokers = [Broker(0, "r0"), Broker(1, "r0"), Broker(2, "r1")]
    return ClusterModel(brokers, [part("t", 0, (0, 1))])


def test_rack_violation_is_repaired() -> None:
    c = rack_aware_satisfiable()
    result = plan_rebalance(c)
    (reps,) = result.plan.replicas.values()
    assert 2 in reps and len({c.rack_of(b) for b in reps}) == 2
    rack = next(g for g in result.summary.goals if g.name == "rack_awareness")
    assert (rack.before["violations"], rack.after["violations"]) == (1, 0)


def test_rack_violation_that_capacity_forbids_fixing_names_both_goals() -> None:
    full = BrokerCapacity(disk_bytes=GiB)  # 80% of 1 GiB cannot take a 1 GiB replica
    brokers = [Broker(0, "r0"), Broker(1, "r0"), Broker(2, "r1", capacity=full)]
    c = ClusterModel(brokers, [part("t", 0, (0, 1))])
    # Only one broker in r0 may hold t-0 and broker 2 (r1) is too small: exact before planning.
    with pytest.raises(ValidationError, match=r"^capacity: t-0 .*only 2 of the 3 live brokers in "
                                              r"'cluster' have it, and at most 1 per rack "
                                              r"\(rack_awareness\) they hold only 1"
                                              r".*broker 2 disk limit 0.8 GiB"):
        plan_rebalance(c)


def test_capacity_exceeded_everywhere_fails_clearly() -> None:
    cap = BrokerCapacity(disk_bytes=10 * GiB)
    brokers = [Broker(i, capacity=cap) for i in range(2)]
    c = ClusterModel(brokers, [part("t", p, (p % 2,), size=9 * GiB) for p in range(2)])
    with pytest.raises(ValidationError, match="capacity"):
        plan_rebalance(c)


def test_a_pool_heavier_than_its_brokers_limits_together_fails_at_once_naming_the_totals() -> None:
    # Each 7 GiB replica fits under a broker's 8 GiB limit, but four of them do not fit under
    # three: the capacity goal tried an ejection chain per replica, and on a 24-broker cluster
    # at 85% disk the plan ran for hours.
    cap = BrokerCapacity(disk_bytes=10 * GiB)
    brokers = [Broker(i, capacity=cap) for i in range(3)]
    c = ClusterModel(brokers, [part("t", p, (0,), size=7 * GiB) for p in range(4)])
    with pytest.raises(ValidationError, match=r"^capacity: the replicas of 'cluster' take 28.0 GiB of disk, more "
                                              r"than its 3 live brokers' limits add up to \(24.0 GiB"):
        plan_rebalance(c)


def test_a_crowded_cluster_beyond_its_disk_limits_is_refused_before_planning() -> None:
    # Crowded-medium at 85% disk (its dead broker's share on the 23 others, six of them new):
    # some brokers start at 1.8 x their disk, and no plan brings them all under 80%.
    c = generate_cluster("crowded-medium", seed=0, disk_utilisation=0.85, new_brokers=6)
    with pytest.raises(ValidationError, match=r"^capacity: the replicas of 'cluster' take 83,283.9 GiB of disk"):
        plan_rebalance(c)


def test_a_rack_heavier_than_its_brokers_limits_together_fails_at_once_naming_the_rack() -> None:
    # Rack a has one live broker (its other is dead) and every RF-3 partition keeps a replica in
    # each rack: broker 0 must hold six 2 GiB replicas under an 8 GiB limit, though the five live
    # brokers' 40 GiB of limits hold the 36 GiB of replicas. The goals blamed one partition
    # ("no broker can take the replica of t-4 on broker 1 (... 1 without disk room)"), and on
    # crowded-medium with 12 brokers at 70% disk (a rack of three) they ran for 73 s to fail with
    # "broker 3 is above its disk limit": neither says that no plan exists, nor why.
    cap = BrokerCapacity(disk_bytes=10 * GiB)
    brokers = [Broker(0, "a", capacity=cap), Broker(1, "a", alive=False, capacity=cap),
               *(Broker(i, "bbcc"[i - 2], capacity=cap) for i in range(2, 6))]
    c = ClusterModel(brokers, [part("t", p, (1, 2 + p % 2, 4 + p % 2), size=2 * GiB) for p in range(6)])
    with pytest.raises(ValidationError, match=r"^capacity: rack 'a' of 'cluster' must hold 12.0 GiB of disk "
                                              r"\(rack_awareness: .*more than its 1 live brokers' limits add "
                                              r"up to \(8.0 GiB"):
        plan_rebalance(c)
    # The same partitions fit when rack a's second broker is alive: nothing is refused wrongly.
    brokers[1] = Broker(1, "a", capacity=cap)
    assert plan_rebalance(c.with_brokers(brokers)).plan.replicas


def test_racks_heavier_than_their_brokers_limits_together_fail_at_once_naming_the_brokers() -> None:
    # RF 3 on racks of 3, 2, 1 and 1 brokers: at most one replica per rack. Rack a takes one of
    # each partition at most, so racks b, c and d hold the other two of every partition: 36 GiB
    # against their four brokers' 32 GiB of limits, though the pool (54 of 56 GiB) and every
    # rack alone fit. CP-SAT searched a pooled fuzz start of this shape (grown seed 8) for 60
    # deterministic seconds without deciding it.
    cap = BrokerCapacity(disk_bytes=10 * GiB)
    brokers = [Broker(i, "aaabbcd"[i], capacity=cap) for i in range(7)]
    c = ClusterModel(brokers, [part("t", p, (p % 3, 3 + p % 2, 5 + p % 2), size=2 * GiB) for p in range(9)])
    with pytest.raises(ValidationError, match=r"^capacity: brokers 3, 4, 5, 6 of 'cluster' must hold 36.0 GiB "
                                              r"of disk \(on racks 'b', 'c', 'd': .*\), more than their 4 live "
                                              r"brokers' limits add up to \(32.0 GiB"):
        plan_rebalance(c)
    # Seven partitions fit (28 of 32 GiB there): nothing is refused wrongly.
    assert plan_rebalance(ClusterModel(brokers, list(c)[:7])).plan.replicas


def _after(result: PlanResult) -> dict[str, float]:
    """Per goal, its max - min or max / mean once planned."""
    return {g.name: g.after.get("max_minus_min", g.after.get("max_over_mean", 0.0))
            for g in result.summary.goals}


def test_a_cluster_near_its_disk_limits_gets_its_counts_and_leader_loads_even() -> None:
    # Crowded-medium at 70% disk with six new brokers: ten brokers start above their limit and
    # a dead broker's share must go. Capacity relief sent each largest replica to the broker
    # with the fewest replicas, filling four new brokers to their disk limit with 233-246
    # replicas where the counts need 1,220: replica count max - min 1,336, network out 1.37 x
    # and leader bytes-in 1.44 x the mean, in 14 s. Now to the broker using least of its limit.
    c = generate_cluster("crowded-medium", seed=3, disk_utilisation=0.7, new_brokers=6)
    after = _after(plan_rebalance(c))
    assert after["replica_count"] <= 1 and after["leader_count"] <= 1
    assert after["disk"] <= 1.03 and after["network_in"] <= 1.05
    assert after["network_out"] <= 1.05 and after["leader_bytes_in"] <= 1.10


def test_takers_near_their_disk_limit_take_replicas_their_room_allows() -> None:
    # 18 brokers at 70% disk, four new: the count goal sent the new brokers replicas by the
    # disk gaps alone, and two reached their limit short of their count (max - min 67).
    c = generate_cluster("crowded-medium", seed=0, brokers=18, partitions=5000, disk_utilisation=0.7,
                         new_brokers=4)
    after = _after(plan_rebalance(c))
    assert after["replica_count"] <= 1 and after["leader_count"] <= 1


def test_a_full_new_broker_trades_a_large_replica_for_small_ones() -> None:
    # 21 brokers at 70% disk, four new: capacity relief filled a new broker to its disk limit
    # with large replicas, and its rack's other brokers were full as well: no single move
    # reached it, and it ended far below the count (max - min 308).
    c = generate_cluster("crowded-medium", seed=2, brokers=21, partitions=6000, disk_utilisation=0.7,
                         new_brokers=4)
    after = _after(plan_rebalance(c))
    assert after["replica_count"] <= 1 and after["leader_count"] <= 1


def test_a_full_taker_trades_with_its_own_rack_when_no_source_may_cross_into_it() -> None:
    # 18 brokers at 70% disk, three new: a broker full of large replicas below the count, its
    # rack mates all at the lower bound, and nothing the brokers above the upper bound hold may
    # cross into its rack. It ended 90 below; a rack mate now trades with it and is topped up.
    c = generate_cluster("crowded-medium", seed=1, brokers=18, partitions=5000, disk_utilisation=0.7,
                         new_brokers=3)
    assert _after(plan_rebalance(c))["replica_count"] <= 1


def test_givers_left_above_the_bound_after_the_exchanges_fill_the_takers_they_made_room_on() -> None:
    # 21 brokers at 70% disk, four new: the exchanges gave every full taker room, but the fill
    # had run before them, and broker 4 ended 10 above the others (846 against 836).
    c = generate_cluster("crowded-medium", seed=1, brokers=21, partitions=6000, disk_utilisation=0.7,
                         new_brokers=4)
    assert _after(plan_rebalance(c))["replica_count"] <= 1


def test_full_rack_mates_trade_until_the_counts_reach_the_floor_the_racks_allow() -> None:
    # 15 brokers at 70% disk, three new, a dead one in rack a: its four live brokers all at
    # their disk limit, the rack forced to 800..862 replicas a broker (the floor is 62).
    # Broker 9 (626 replicas) weighed only its largest replicas (~70 GiB) for an exchange, more
    # than its rack mates' smallest could pay for: the counts ended 357 apart (234 with the
    # next fix alone). Then the new broker 12, filled to 965 by the drain of the dead broker,
    # had no replica that might move again: 165 apart until its drained replicas were
    # re-targeted to a full rack mate for one large replica back.
    c = generate_cluster("crowded-medium", seed=0, brokers=15, partitions=4000, disk_utilisation=0.7,
                         new_brokers=3)
    assert _after(plan_rebalance(c))["replica_count"] == 62


def test_leadership_changes_are_preferred_over_replica_moves() -> None:
    # Replicas balanced (each broker holds 4), every leader on broker 0.
    c = ClusterModel([Broker(i) for i in range(3)],
                     [part("t", p, (0, 1 + p % 2)) for p in range(4)]
                     + [part("u", p, (1, 2)) for p in range(2)])
    result = plan_rebalance(c)
    assert result.summary.replica_moves == 0
    after = c.with_assignment(result.plan.replicas)
    leaders = [len(after.leaders_on(b)) for b in range(3)]
    assert max(leaders) - min(leaders) <= 1
    # Two changes even the leader counts; the topic leader goal's path of leadership changes
    # adds a third that evens both topics too (u led once by 1 and once by 2; t's four
    # partitions at most two a broker), where two left both topics out of their bounds.
    assert result.summary.leader_changes == 3
    dispersion = next(g for g in result.summary.goals if g.name == "topic_leader_dispersion")
    assert dispersion.after["topics_out_of_bounds"] == 0


def test_when_balance_is_equal_the_smaller_replica_moves() -> None:
    c = ClusterModel([Broker(0), Broker(1)],
                     [part("t", 0, (0,), size=100 * GiB), part("t", 1, (0,), size=GiB)])
    result = plan_rebalance(c, options=PlannerOptions(goals=("replica_count",)))
    assert dict(result.plan.replicas) == {c.partitions[next(iter(result.plan.replicas))].tp: (1,)}
    assert next(iter(result.plan.replicas)).partition == 1


def test_goal_order_decides_what_gives() -> None:
    # Broker 0: two small replicas; broker 1: one big one. Counts are within 1 already, disk is not.
    c = ClusterModel([Broker(0), Broker(1), Broker(2)],
                     [part("t", 0, (0,), size=GiB), part("t", 1, (0,), size=GiB),
                      part("t", 2, (1,), size=30 * GiB)])
    only_counts = plan_rebalance(c, options=PlannerOptions(goals=("replica_count",)))
    assert only_counts.summary.replica_moves == 1  # 2,1,0 -> 1,1,1
    disk_first = plan_rebalance(c, options=PlannerOptions(goals=("disk", "replica_count")))
    after = disk_first.plan.replicas
    assert all(reps != (1,) or tp.partition != 2 for tp, reps in after.items())


def test_unknown_and_misplaced_goal_names_are_errors() -> None:
    c = rack_aware_satisfiable()
    with pytest.raises(ValidationError, match="unknown goal 'nope'"):
        plan_rebalance(c, options=PlannerOptions(goals=("nope",)))
    with pytest.raises(ValidationError, match="'rack_awareness' is a hard goal"):
        plan_rebalance(c, options=PlannerOptions(goals=("rack_awareness",)))
    with pytest.raises(ValidationError, match="listed twice"):
        plan_rebalance(c, options=PlannerOptions(goals=("disk", "disk")))


def test_threshold_widens_what_counts_as_balanced() -> None:
    c = ClusterModel([Broker(0), Broker(1)],
                     [part("t", p, (0,)) for p in range(6)] + [part("t", 9, (1,))])
    strict = plan_rebalance(c, options=PlannerOptions(goals=("replica_count",)))
    loose = plan_rebalance(c, options=PlannerOptions(goals=("replica_count",),
                                                     thresholds={"replica_count": 0.3}))
    assert strict.summary.replica_moves == 2  # 6/1 -> 4/3 (within one)
    assert loose.summary.replica_moves == 1  # mean 3.5 +/- 30%, rounded out: 2..5, so 5/2


def test_summary_estimates_duration_from_the_busiest_broker() -> None:
    c = ClusterModel([Broker(0), Broker(1), Broker(2)],
                     [part("t", p, (0,), size=10 * GiB) for p in range(3)])
    result = plan_rebalance(c, options=PlannerOptions(goals=("replica_count",)))
    s = result.summary
    assert s.replica_moves == 2 and s.bytes_moved == 20 * GiB
    # Broker 0 leads both moved partitions: it sends 20 GiB; each new replica fetches 10 GiB.
    assert s.estimated_seconds(GiB) == pytest.approx(20.0)
    data = s.to_dict(GiB)
    assert data["estimated_seconds"] == 20.0 and data["replica_moves"] == 2
    text = s.format_text(GiB)
    assert "replica_count" in text and "estimated duration" in text


def test_nothing_to_do_gives_an_empty_plan() -> None:
    c = ClusterModel([Broker(0), Broker(1)], [part("t", 0, (0, 1)), part("t", 1, (1, 0))])
    result = plan_rebalance(c)
    assert len(result.plan) == 0
    assert all(g.status == "satisfied" for g in result.summary.goals if g.hard)


def test_leadership_is_passed_along_a_chain_when_no_direct_transfer_helps() -> None:
    # Broker 0 leads four partitions followed only by 1; 1 leads two followed only by 2.
    # 2 can only get a leader from 1, and 1 can only take one from 0: a chain 0 -> 1 -> 2.
    c = ClusterModel([Broker(i) for i in range(3)],
                     [part("t", p, (0, 1)) for p in range(4)] + [part("u", p, (1, 2)) for p in range(2)])
    result = plan_rebalance(c, options=PlannerOptions(goals=("leader_count",)))
    after = c.with_assignment(result.plan.replicas)
    assert [len(after.leaders_on(b)) for b in range(3)] == [2, 2, 2]
    assert result.summary.replica_moves == 0


@pytest.mark.parametrize("racks,rows", [
    (None, [((0, 1), 18, 4), ((0,), 35, 2), ((0,), 40, 3), ((0,), 34, 4)]),
    ("ab", [((0, 1), 40, 3), ((0,), 40, 1), ((0,), 19, 3)]),
])
def test_a_partition_of_one_replica_moves_when_no_leadership_transfer_evens_the_leaders(
        racks: str | None, rows: list[tuple[tuple[int, ...], int, int]]) -> None:
    """Found by a random hunt (1,500 tiny clusters, each checked by trying every assignment):
    the replica count goal left two RF-1 partitions on broker 0, which then led 2 where a
    broker led none. An RF-1 partition changes leader only by moving, so the leader count goal
    moves one, within the replica count goal's bounds."""
    n = 4 if racks is None else 3
    c = ClusterModel([Broker(b, None if racks is None else racks[b % 2]) for b in range(n)],
                     [part(f"t{i}", 0, reps, size * GiB, rate) for i, (reps, rate, size) in enumerate(rows)])
    result = plan_rebalance(c)
    after = c.with_assignment(result.plan.replicas)
    leaders = [len(after.leaders_on(b)) for b in range(n)]
    replicas = [sum(b in p.replicas for p in after) for b in range(n)]
    assert max(leaders) - min(leaders) <= 1, leaders
    assert max(replicas) - min(replicas) <= 1, replicas
    assert next(g for g in result.summary.goals if g.name == "leader_count").after["max_minus_min"] <= 1


def test_topic_swaps_spread_a_topic_that_single_moves_cannot() -> None:
    # Counts and disk already even (4 and 4), but each topic sits on one broker.
    c = ClusterModel([Broker(0), Broker(1)],
                     [part("a", p, (0,)) for p in range(4)] + [part("b", p, (1,)) for p in range(4)])
    plain = plan_rebalance(c)
    assert plain.summary.replica_moves == 0
    swapped = plan_rebalance(c, options=PlannerOptions(topic_swaps=True))
    after = c.with_assignment(swapped.plan.replicas)
    for topic in ("a", "b"):
        on = [sum(1 for p in after.topic(topic) if b in p.replicas) for b in (0, 1)]
        assert on == [2, 2]
    assert swapped.summary.replica_moves == 4


def test_topic_leaders_are_evened_out_by_trades_that_keep_leader_counts() -> None:
    # Each broker leads two partitions (leader counts already even), but all of topic a's on
    # broker 0 and all of b's on broker 1. A single transfer would break the leader count
    # goal's bounds; a trade (a-0 to broker 1, b-0 to broker 0) keeps them.
    brokers = [Broker(0, "r0"), Broker(1, "r1")]
    c = ClusterModel(brokers, [part("a", 0, (0, 1)), part("a", 1, (0, 1)),
                               part("b", 0, (1, 0)), part("b", 1, (1, 0))])
    result = plan_rebalance(c)
    after = c.with_assignment(result.plan.replicas)
    for topic in ("a", "b"):
        assert sorted(after.partitions[(topic, i)].replicas[0] for i in (0, 1)) == [0, 1]
    assert result.plan.replicas and all(sorted(r) == [0, 1] for r in result.plan.replicas.values())
    dispersion = next(g for g in result.summary.goals if g.name == "topic_leader_dispersion")
    assert dispersion.after["topics_out_of_bounds"] == 0
