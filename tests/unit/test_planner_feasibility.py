"""The planner against an exact feasibility oracle (max-flow) on adversarial clusters.

If the oracle says a plan meeting every hard goal exists, the planner must produce one (and
the oracle's own checker, not the planner's bookkeeping, must find it clean); if the oracle
says none exists, the planner must refuse with an error naming the partition (or topic) and
the rule. These tests FAIL when the planner refuses a feasible cluster.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.planner import PlannerOptions, optimizer, plan_rebalance, plan_remove_brokers
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import CapacityGoal
from kafka_ops.planner.state import WorkingState
from kafka_ops.pools import Pool, PoolSet
from kafka_ops.testing.drain_oracle import drain_breaks, drain_fits
from kafka_ops.testing.feasibility import (
    broker_limits,
    broker_loads,
    check_hard_goals,
    count_spread_floor,
    disk_splits_fit,
    feasibility,
    fits_every_limit,
    rack_key,
    rack_limit,
)
from kafka_ops.testing.grown import grown_pools, grown_removal, grown_spec
from kafka_ops.testing.strategies import adversarial_clusters, tight_mixed_clusters

GiB = 1024**3

# derandomize: CI runs the same 300 clusters every time (a red main must mean a regression);
# KAFKA_OPS_HYPOTHESIS_RANDOM=1 explores new ones, as the run that found the case below did.
SETTINGS = settings(max_examples=300, deadline=None,
                    derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def plan(cluster: ClusterModel, pools: PoolSet | None, max_replicas: int | None):
    return plan_rebalance(cluster, pools, PlannerOptions(max_replicas_per_broker=max_replicas))


def _packed() -> tuple[ClusterModel, None, int]:
    """Racks of three and two live brokers, a replica limit of 7 that leaves two slots spare,
    RF-4 partitions that need two brokers of each rack, 500 GiB replicas that broker 2 (24 GiB)
    cannot hold: a plan exists (the oracle's search finds it), the greedy repairs missed it."""
    brokers = [Broker(i, f"rack-{'0110011'[i]}", alive=i not in (0, 5),
                      capacity=BrokerCapacity(disk_bytes=30 * GiB if i == 2 else 0)) for i in range(7)]
    spec = [((3, 6, 2, 5), 0), ((4, 2, 3, 5), 5), ((4, 1, 2, 3), 500), ((0, 3, 4, 1), 500),
            ((2, 5, 6, 3), 1), ((1, 2, 0, 6), 1), ((4,), 1), ((4,), 500), ((6,), 1), ((1,), 1),
            ((4,), 0), ((6,), 0), ((4,), 500), ((1,), 2)]
    partitions = [Partition(f"t{min(i // 6, 2)}", i, reps, leader=reps[0], size_bytes=size * GiB)
                  for i, (reps, size) in enumerate(spec)]
    partitions.append(Partition("t2", 99, (4, 3), leader=4, size_bytes=50 * GiB,
                                adding_replicas=(3,), removing_replicas=(4,)))
    return ClusterModel(brokers, partitions), None, 7


@SETTINGS
@given(adversarial_clusters())
# Bin packing under a tight replica limit: every greedy repair refused ("t0-0 has 3 replicas in
# one rack"); the exhaustive search (packing.py) places it.
@example(_packed())
def test_planner_agrees_with_the_feasibility_oracle(case) -> None:
    cluster, pools, max_replicas = case
    verdict = feasibility(cluster, pools, max_replicas)
    event(f"feasible: {verdict.feasible}")
    if verdict.feasible is False:
        with pytest.raises(ValidationError) as error:
            plan(cluster, pools, max_replicas)
        message = str(error.value)
        # The error names one of them (or its topic), or a pool or rack whose replicas weigh
        # more than its brokers' limits add up to: as exact, and said first.
        if verdict.partitions and not message.startswith(("capacity: the replicas of", "capacity: rack")):
            assert any(str(tp) in message or repr(tp.topic) in message
                       for tp in verdict.partitions), (verdict.reason, message)
        else:
            assert "capacity" in message, (verdict.reason, message)
        assert "may not move" not in message
        return
    try:
        result = plan(cluster, pools, max_replicas)
    except ValidationError as e:
        if verdict.feasible is None and "capacity" in str(e):
            assume(False)  # disk capacity is bin packing: the oracle cannot say
        raise
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after, pools, max_replicas) == []
    in_flight = [p.tp for p in cluster if p.reassignment_in_progress]
    assert not set(in_flight) & set(result.plan.replicas)
    if in_flight:
        assert any("in flight" in w for w in result.summary.warnings)


def _racked(racks: str, *replicas: tuple[int, ...]) -> tuple[ClusterModel, None, None]:
    """Brokers 0.. in the racks named by one letter each; partitions t-0.. of empty logs."""
    return (ClusterModel([Broker(i, rack=r) for i, r in enumerate(racks)],
                         [Partition("t", i, reps, leader=reps[0]) for i, reps in enumerate(replicas)]),
            None, None)


@SETTINGS
@given(adversarial_clusters())
# Broker 2 (rack c) must give, but both its partitions have their rack a and b replicas
# already: broker 3 gives its RF-2 partition's replica to an empty broker and takes one of 2's.
@example(_racked("abcabcab", (3, 2, 7), (2, 4, 6), (5, 3)))
# The RF-4 partitions must hold both brokers of rack b (1 and 7); the rack repair fills broker 7
# with replicas that came to it, and only they can go.
@example(_racked("abaaaaab", (0, 1, 3, 2), (0, 2, 3), (0, 2, 3), (0, 1, 3, 2), (0,), (0,), (0,),
                 (1,)))
# Both partitions crowd rack a on brokers 0 and 3; the rack repair sends 3's replicas off, and
# the counts need one of 0's to go to 3, where its partition started.
@example(_racked("abca", (0, 3, 1), (0, 3, 1)))
# Rack a's five brokers may hold one replica of each of the 18 partitions, 3.6 each; racks b and
# c share the other 30: max - min 5 at best. The count goal held rack a to the floor of the mean
# (5) and left brokers 2-4 below it: 7.
@example(_racked("aaaaabbcc", *((i % 2, 5 + i % 2, 7 + i % 2) for i in range(12)),
                 *((j % 2, 5 + j % 2) for j in range(6))))
# Racks of three, four and two brokers; every RF-3 partition holds one replica per rack, and the
# rack of two (2, 8) one too many. Only an RF-4 partition's replica may leave it, to the rack of
# three, which must pass one on to the rack of four: 8 -> 2 -> 0 -> 7 (_chain). Ended 5..3.
@example(_racked("abcaabbbc", (2, 1, 8), (2, 1, 8), (0, 1, 3), (0, 1, 2), (0, 1, 3, 2), (0, 1, 3, 2),
                 (0, 1, 3), (1, 0, 5), (0, 1, 4, 2), (0, 1, 2), (0,), (0,)))
def test_replica_counts_end_as_close_as_the_racks_allow(case) -> None:
    # The same hostile starts (crowded racks, dead and new brokers, uneven racks) without the
    # constraints the count goal yields to (pools, limits, disk capacity, partitions in flight):
    # then only the rack rule stands between a plan and counts one apart, and the flow oracle
    # says exactly how close they can get. Found failing: new brokers filled to the ceiling of
    # the mean before the last was at its floor, a surplus broker whose partitions all had a
    # replica in the only taker's rack (it must give through a third broker), and a rack that
    # may hold less than the floor of the mean (above).
    drawn, _, _ = case
    cluster = ClusterModel(
        [replace(b, capacity=BrokerCapacity()) for b in drawn.brokers.values()],
        [replace(p, adding_replicas=(), removing_replicas=()) for p in drawn])
    assume(feasibility(cluster).feasible)
    floor = count_spread_floor(cluster)
    event(f"counts can be even: {floor <= 1}")
    after = cluster.with_assignment(plan_rebalance(cluster).plan.replicas)
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    counts = [len(after.partitions_on(b)) for b in live]
    assert max(counts) - min(counts) <= max(1, floor), counts


def rack(ids: dict[int, str]) -> list[Broker]:
    return [Broker(id=b, rack=r) for b, r in ids.items()]


def test_crowded_rack_with_spare_brokers_is_repaired_across_racks() -> None:
    # The case: [15, 3, 4] with 15 and 3 in rack a; rack a has empty brokers, so a
    # same-rack move looks attractive but never repairs the rack.
    brokers = rack({3: "a", 15: "a", 20: "a", 21: "a", 4: "b", 5: "b", 6: "c"})
    cluster = ClusterModel(brokers, [Partition("t", 28, (15, 3, 4), 15, (15, 3, 4))])
    result = plan_rebalance(cluster)
    new = result.plan.replicas[("t", 28)]
    assert sorted(cluster.rack_of(b) for b in new) == ["a", "b", "c"]
    assert [g.status for g in result.summary.goals if g.name == "rack_awareness"] == ["satisfied"]


def test_a_crowded_rack_gives_up_the_replica_on_its_fullest_broker_even_a_leader() -> None:
    # X = [0, 1, 2] crowds rack a. Broker 0 holds one replica too many (4; the mean is 2.25),
    # 1 and 3 one too few: the counts force 2 moves. Repairing the rack with 0's replica (the
    # leader) is one of them; with the follower on 1 the plan needs 3 (crowded-xl moved 1.023x
    # the count bound that way, 1.006x this way).
    cluster = _racked("aabc", (0, 1, 2), (0, 2), (0, 3), (0, 2))[0]
    result = plan_rebalance(cluster, options=PlannerOptions(goals=("replica_count",)))
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    counts = [len(after.partitions_on(b)) for b in range(4)]
    assert max(counts) - min(counts) <= 1, counts
    assert result.summary.replica_moves == 2


def test_rf_above_rack_count_and_a_one_broker_rack() -> None:
    # RF 4 over racks of sizes 3 and 1: at most 3 in rack a is the best any plan can do.
    brokers = rack({1: "a", 2: "a", 3: "a", 4: "b", 5: "a"})
    cluster = ClusterModel(brokers, [Partition("t", 0, (1, 2, 3, 5), 1, (1, 2, 3, 5))])
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    assert 4 in after.partitions[("t", 0)].replicas


def test_infeasible_pool_names_the_partition_and_what_is_missing() -> None:
    brokers = [Broker(1), Broker(2), Broker(3, alive=False), Broker(4)]
    pools = PoolSet([Pool("p", frozenset({1, 2, 3}), topics=("t",)),
                     Pool("q", frozenset({4}), topics=("u",))])
    cluster = ClusterModel(brokers, [Partition("t", 0, (1, 2, 3), 1, (1, 2)),
                                     Partition("u", 0, (4,), 4, (4,))])
    with pytest.raises(ValidationError) as error:
        plan_rebalance(cluster, pools)
    message = str(error.value)
    assert "t-0" in message and "broker 3" in message and "only 2 live brokers" in message


@pytest.mark.parametrize("pooled", [False, True])
def test_partition_larger_than_the_only_broker_left_is_refused_naming_capacity(pooled: bool) -> None:
    # Found by the property test above (a fresh random run): broker 0 is dead, so t0-2 must sit
    # on the two live brokers of its pool, and broker 2's disk limit (30 GiB x 0.8) is below the
    # partition's 50 GiB. No plan exists; the error once blamed broker_exclusions and the plan's
    # mode. It must name the partition, the rule (capacity) and the broker that falls short.
    gib = 1024**3
    brokers = [Broker(0, alive=False), Broker(1),
               Broker(2, capacity=BrokerCapacity(disk_bytes=30 * gib)), Broker(3), Broker(4)]
    if not pooled:  # the shrunk form: only brokers 0-2
        brokers = brokers[:3]
    parts = [Partition("t0", 0, (1, 2), 1, (1, 2)), Partition("t0", 1, (0, 1), 0, (0, 1)),
             Partition("t0", 2, (0, 2), 0, (0, 2), size_bytes=50 * gib)]
    pools = PoolSet([Pool("even", frozenset({0, 2, 4}), topics=("t0",)),
                     Pool("odd", frozenset({1, 3}), topics=("t1",))]) if pooled else None
    if pooled:
        parts = [Partition("t0", 2, (0, 2), 0, (0, 2), size_bytes=50 * gib),
                 Partition("t1", 0, (1, 3), 1, (1, 3), size_bytes=gib)]
    cluster = ClusterModel(brokers, parts)
    verdict = feasibility(cluster, pools)
    assert verdict.feasible is False and verdict.partitions == (TopicPartition("t0", 2),)
    with pytest.raises(ValidationError) as error:
        plan_rebalance(cluster, pools)
    message = str(error.value)
    assert message.startswith("capacity: t0-2 (50.0 GiB")
    assert "needs 2 brokers" in message and "only 1 of the 2 live brokers" in message
    assert "broker 2 disk limit 24.0 GiB" in message
    assert "broker_exclusions" not in message and "mode" not in message


def _in_flight(topic: str, n: int, replicas: tuple[int, ...]) -> Partition:
    """A partition being reassigned as the strategy draws one: its last replica is being added
    in place of the one before it (Kafka's AR and RR)."""
    return Partition(topic, n, replicas, replicas[0], replicas,
                     adding_replicas=replicas[-1:], removing_replicas=replicas[-2:-1])


@pytest.mark.parametrize("found", [False, True])
def test_a_broker_full_of_replicas_in_flight_is_no_room_for_a_partition_too_big(found: bool) -> None:
    # Found by a fresh random run of the property test (``found``: that cluster; else its
    # essence). Broker 0 holds two partitions in flight, which this plan leaves in place, and
    # max_replicas_per_broker is 2: every other replica must leave it, t0-2 (50 GiB, RF 3)
    # included, and broker 3's disk limit (30 GiB x 0.8) is below its size, so only two brokers
    # can hold it. The error named no partition ("broker 0 is above its replica count limit").
    gib = 1024**3
    small = BrokerCapacity(disk_bytes=30 * gib)
    pools = None
    if found:
        brokers = [Broker(b, rack=f"rack-{r}", capacity=small if b == 4 else BrokerCapacity())
                   for b, r in enumerate((0, 1, 2, 3, 0, 0, 0))]
        parts = [_in_flight("t0", 0, (0, 1, 2, 3)), Partition("t0", 1, (0, 1, 2), 0, (0, 1, 2)),
                 Partition("t0", 2, (0, 1, 2), 0, (0, 1, 2), size_bytes=50 * gib),
                 _in_flight("t1", 0, (1, 0)), Partition("t1", 1, (0,), 0, (0,)),
                 Partition("t1", 2, (0,), 0, (0,))]
        pools = PoolSet([Pool("even", frozenset({0, 2, 4, 6}), topics=("t0",)),
                         Pool("odd", frozenset({1, 3, 5}), topics=("t1",))])
        short = "only 2 of the 4 live brokers in 'even'"
    else:
        brokers = [Broker(0), Broker(1), Broker(2), Broker(3, capacity=small)]
        parts = [_in_flight("t0", 0, (1, 0)), _in_flight("t0", 1, (2, 0)),
                 Partition("t0", 2, (0, 1, 2), 0, (0, 1, 2), size_bytes=50 * gib)]
        short = "only 2 of the 4 live brokers"
    cluster = ClusterModel(brokers, parts)
    verdict = feasibility(cluster, pools, 2)
    assert verdict.feasible is False and TopicPartition("t0", 2) in verdict.partitions
    with pytest.raises(ValidationError) as error:
        plan(cluster, pools, 2)
    message = str(error.value)
    assert message.startswith("capacity: t0-2 (50.0 GiB") and "needs 3 brokers" in message
    assert short in message
    assert "broker 0 replica limit 2 filled by 2 replicas this plan leaves in place" in message
    assert "disk limit 24.0 GiB" in message


def test_a_pool_too_small_is_named_before_a_partition_too_big() -> None:
    # Found by a fresh random run of the property test: two reasons, both real. The pool that
    # cannot hold t0-0 at all is the more basic gap and is named first (as the oracle does).
    gib = 1024**3
    brokers = [Broker(0), Broker(1, capacity=BrokerCapacity(disk_bytes=30 * gib)),
               Broker(2, alive=False), Broker(3), Broker(4, alive=False), Broker(5)]
    pools = PoolSet([Pool("even", frozenset({0, 2, 4}), topics=("t0",)),
                     Pool("odd", frozenset({1, 3, 5}), topics=("t1",))])
    cluster = ClusterModel(brokers, [
        Partition("t0", 0, (0, 2), 0, (0,)),
        Partition("t1", 0, (1, 3, 5), 1, (1, 3, 5), size_bytes=50 * gib)])
    verdict = feasibility(cluster, pools)
    assert verdict.feasible is False and verdict.partitions == (TopicPartition("t0", 0),)
    with pytest.raises(ValidationError, match=r"^broker_exclusions: t0-0 has 2 replicas .* only 1 live"):
        plan_rebalance(cluster, pools)


def test_partition_too_big_for_most_brokers_moves_to_one_that_can_hold_it() -> None:
    # The capacity pre-check is exact per partition: enough brokers can hold it, so it plans.
    gib = 1024**3
    small = BrokerCapacity(disk_bytes=30 * gib)
    brokers = [Broker(0, alive=False), Broker(1, capacity=small), Broker(2, capacity=small),
               Broker(3), Broker(4)]
    cluster = ClusterModel(brokers, [
        Partition("t", 0, (0, 3), 0, (0, 3), size_bytes=50 * gib),
        *(Partition("t", i, (1, 2), 1, (1, 2), size_bytes=gib) for i in range(1, 4))])
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    assert sorted(after.partitions[("t", 0)].replicas) == [3, 4]
    assert check_hard_goals(cluster, after) == []


def test_in_flight_partition_is_skipped_and_planned_from_its_target() -> None:
    brokers = rack({1: "a", 2: "b", 3: "a", 4: "b"})
    moving = Partition("t", 0, (1, 2, 3), 1, (1, 2), adding_replicas=(3,), removing_replicas=(1,))
    others = [Partition("t", i, (1, 2), 1, (1, 2)) for i in range(1, 5)]
    cluster = ClusterModel(brokers, [moving, *others])
    result = plan_rebalance(cluster)
    assert ("t", 0) not in result.plan.replicas
    after = cluster.with_assignment(result.plan.replicas)
    # RF unchanged everywhere; the in-flight partition still carries its union until it ends.
    assert all(len(after.partitions[("t", i)].replicas) == 2 for i in range(1, 5))
    assert "t-0" in result.summary.warnings[0] and "in flight" in result.summary.warnings[0]
    # Planned from the target (2, 3): brokers 3 and 4 got load, broker 1 gave some up.
    counts = {b: sum(b in after.partitions[("t", i)].replicas for i in range(1, 5))
              for b in (1, 2, 3, 4)}
    assert counts[3] + counts[4] >= 3


def test_a_pool_whose_only_load_is_another_pools_partition_in_flight() -> None:
    # Found by a fresh random run of the oracle test: t0-0 (pool even) is moving onto broker 1
    # (pool odd), which has no topics of its own. The plan leaves the partition in flight where
    # it is; the disk goal's summary of pool odd crashed looking for odd's largest partition.
    gib = 1024**3
    pools = PoolSet([Pool("even", frozenset({0, 2}), topics=("t0",)), Pool("odd", frozenset({1, 3}))])
    cluster = ClusterModel([Broker(b) for b in range(4)], [
        Partition("t0", 0, (0, 1), 0, (0, 1), size_bytes=gib, adding_replicas=(1,), removing_replicas=(0,))])
    result = plan_rebalance(cluster, pools)
    assert result.plan.replicas == {}
    warnings = "\n".join(result.summary.warnings)
    assert "t0-0" in warnings and "in flight" in warnings
    assert "disk: 1.025 not reached: broker 1 ends at 2.000x the mean" in warnings
    assert "other pools" in warnings


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0])
def test_grown_cluster_with_hand_crowded_racks_and_a_dead_broker_is_planned(seed: int) -> None:
    # The starting point at scale: 24 brokers, ~28,000 replicas, ~5% of partitions
    # with a follower moved by hand into the leader's rack, one dead broker.
    from kafka_ops.generator import generate_cluster

    cluster = generate_cluster("crowded-medium", seed=seed)
    # Feasible by construction: 23 live brokers on 3 racks of 7+ each, RF <= 3, no limits
    # (the max-flow oracle is for test-sized clusters: too slow here).
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    statuses = {g.name: g.status for g in result.summary.goals}
    assert all(statuses[g] == "satisfied" for g in ("rack_awareness", "broker_exclusions"))


@pytest.mark.slow
def test_partitions_nearly_a_broker_in_size_are_packed_where_the_greedy_repair_is_stuck() -> None:
    # Found by a fuzz of grown clusters: 36 brokers on 3 racks, 1,087 RF-2 partitions up to
    # 3.2 TiB on brokers of 3.3 TiB limit (80% of 4 TiB), five brokers at about twice their
    # limit, disk at 60% of the limits overall. The greedy capacity repair is stuck, and the
    # start is too large for packing.py to try every assignment: it was refused with "one may
    # still exist". CP-SAT finds a placement of 56 moves (packing_cp.py); the check below
    # recomputes every hard goal from the plan.
    cluster = generate_cluster(
        "medium", seed=61, brokers=36, racks=3, partitions=1087, replication_factors=((2, 1.0),),
        new_brokers=2, hot_topic_share=0.1, zipf_exponent=0.9814512186196882,
        max_partitions_per_topic=8, disk_utilisation=0.6, hand_moved_share=0.05)
    result = plan_rebalance(cluster, options=PlannerOptions(goals=()))
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    statuses = {g.name: g.status for g in result.summary.goals}
    assert statuses["capacity"] == statuses["rack_awareness"] == "satisfied"


@st.composite
def _tight_racked_clusters(draw: st.DrawFn) -> ClusterModel:
    """Three to six brokers in up to three racks, each with a small disk (3-8 GiB: the sums
    per rack and per cluster bind), one maybe dead; one to three partitions of 1-3 GiB."""
    n = draw(st.integers(3, 6))
    racks = draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    dead = draw(st.sampled_from([None, *range(n)]))
    brokers = [Broker(i, racks[i], alive=i != dead,
                      capacity=BrokerCapacity(disk_bytes=draw(st.sampled_from([3, 5, 8])) * GiB))
               for i in range(n)]
    live = n - (dead is not None)
    partitions = []
    for i in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(3, live)))
        reps = tuple(draw(st.permutations(range(n)))[:rf])
        partitions.append(Partition("t", i, reps, leader=reps[0], size_bytes=draw(st.sampled_from([1, 2, 3])) * GiB))
    return ClusterModel(brokers, partitions)


@SETTINGS
@given(_tight_racked_clusters())
# Rack a's one live broker must hold one replica of both RF-3 partitions (2 x 3 GiB) under its
# 2.4 GiB limit: the rack check refuses it, naming the rack.
@example(ClusterModel([Broker(0, "a", capacity=BrokerCapacity(3 * GiB)),
                       Broker(1, "a", alive=False, capacity=BrokerCapacity(8 * GiB)),
                       *(Broker(i, "bbcc"[i - 2], capacity=BrokerCapacity(8 * GiB)) for i in range(2, 6))],
                      [Partition("t", i, (1, 2 + i, 4 + i), leader=1, size_bytes=3 * GiB) for i in range(2)]))
# Only broker 5 may hold a 3 GiB replica, and there are two (one on dead broker 4): none fits.
# The exact repair put the dead broker's on broker 1 for the one there, both above its 2.4 GiB
# limit; its load no higher than at the start, that passed for no violation.
@example(ClusterModel([Broker(i, "accacb"[i], alive=i != 4, capacity=BrokerCapacity((3 + 2 * (i > 3)) * GiB))
                       for i in range(6)],
                      [Partition("t", 0, (4,), leader=4, size_bytes=3 * GiB),
                       Partition("t", 1, (1,), leader=1, size_bytes=3 * GiB),
                       Partition("t", 2, (5,), leader=5, size_bytes=2 * GiB)]))
# The greedy capacity goal sent t-1's replica off broker 2 (3 GiB, limit 2.4) to broker 1 or 4,
# the only brokers with room for one of t-0's 3 GiB replicas beside 3, and then t-0 had none:
# t-0 on 3 and 1, t-1 on 0 and 4 fits (exact packing, packing.py).
@example(ClusterModel([Broker(i, "babbc"[i], capacity=BrokerCapacity((3 + 2 * (i in (1, 3, 4))) * GiB))
                       for i in range(5)],
                      [Partition("t", 0, (0, 3), leader=0, size_bytes=3 * GiB),
                       Partition("t", 1, (3, 2), leader=3, size_bytes=2 * GiB)]))
def test_disk_limits_refuse_a_plan_exactly_when_no_assignment_fits(cluster: ClusterModel) -> None:
    """Against every assignment tried: where one fits, the planner finds one; where none fits,
    it refuses, saying which capacity ran out."""
    fits = fits_every_limit(cluster, None, None)
    event(f"fits: {fits}")
    try:
        result = plan_rebalance(cluster)
    except ValidationError as e:
        assert not fits, f"refused though an assignment fits: {e}"
        assert str(e).startswith("capacity: "), str(e)
        return
    assert fits
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    for b, broker in cluster.brokers.items():
        if broker.alive:
            assert sum(p.size_bytes for p in after if b in p.replicas) <= 0.8 * broker.capacity.disk_bytes


def test_bin_packing_with_no_fit_names_the_partition_left_without_room() -> None:
    """Each limit alone has room (12 GiB of replicas, 12.8 GiB of limits; each partition fits
    two brokers), but broker 2 holds two 3 GiB replicas and broker 1 one: the fourth has none.
    Only trying every assignment shows it; the error says so and names the partition left out."""
    cluster = ClusterModel([Broker(i, "c", alive=i != 3, capacity=BrokerCapacity((3, 5, 8, 5)[i] * GiB))
                            for i in range(4)],
                           [Partition("t", 0, (3, 2), leader=3, size_bytes=3 * GiB),
                            Partition("t", 1, (2, 3), leader=2, size_bytes=3 * GiB)])
    assert not fits_every_limit(cluster, None, None)
    with pytest.raises(ValidationError, match=r"^capacity: no assignment of the 2 movable partitions "
                       r".*\(every one tried\); most often t-1 "
                       r"\(3\.0 GiB, 0 B/s in\) found no 2 brokers with room"):
        plan_rebalance(cluster)


@SETTINGS
@given(tight_mixed_clusters())
def test_every_limit_together_refuses_a_plan_exactly_when_no_assignment_fits(case) -> None:
    """Disk, network and replica limits, racks (some brokers without one), pools and a dead
    broker at once, against every assignment and leader tried: a plan where one fits, within every limit
    and rule; a refusal, naming what ran out, where none does."""
    cluster, pools, max_replicas = case
    fits = fits_every_limit(cluster, pools, max_replicas)
    event(f"fits: {fits}")
    try:
        result = plan(cluster, pools, max_replicas)
    except ValidationError as e:
        assert not fits, f"refused though an assignment fits: {e}"
        return
    assert fits
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after, pools, max_replicas) == []
    for b, broker in cluster.brokers.items():
        if broker.alive:
            on = [p for p in after if b in p.replicas]
            assert sum(p.size_bytes for p in on) <= 0.8 * (broker.capacity.disk_bytes or float("inf"))
            assert sum(p.bytes_in_per_sec for p in on) <= 0.8 * (broker.capacity.network_in_bytes_per_sec
                                                                 or float("inf"))
            out = sum(p.bytes_out_per_sec + p.bytes_in_per_sec * (len(p.replicas) - 1)
                      for p in on if p.replicas[0] == b)
            assert out <= 0.8 * (broker.capacity.network_out_bytes_per_sec or float("inf"))


def _drains(cluster: ClusterModel, gone: set[int], limit: float = 0.8) -> bool:
    """Whether the replicas on ``gone`` can go to other live brokers with every other replica
    where it is, within the rack rule and each receiving broker's disk limit: every
    placement tried (a plan that also moves other replicas may exist where this says no)."""
    inf = float("inf")
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive and b not in gone)
    room = {b: (cluster.brokers[b].capacity.disk_bytes * limit or inf)
            - sum(p.size_bytes for p in cluster if b in p.replicas) for b in live}
    todo = sorted((p for p in cluster if set(p.replicas) & gone), key=lambda p: -p.size_bytes)

    def place(i: int) -> bool:
        if i == len(todo):
            return True
        p = todo[i]
        keep = [b for b in p.replicas if b not in gone]
        for more in combinations([b for b in live if b not in keep], len(p.replicas) - len(keep)):
            racks = Counter(rack_key(cluster, b) for b in (*keep, *more))
            if any(room[b] < p.size_bytes for b in more) or max(racks.values()) > rack_limit(
                    cluster, live, len(p.replicas)):
                continue
            for b in more:
                room[b] -= p.size_bytes
            if place(i + 1):
                return True
            for b in more:
                room[b] += p.size_bytes
        return False

    return place(0)


@st.composite
def _tight_drains(draw: st.DrawFn) -> tuple[ClusterModel, set[int]]:
    """Four to seven brokers of 0 (unknown), 3, 5 or 8 GiB, in up to three racks or none, one
    to five partitions of 1-3 GiB within the rack rule (some brokers over their limit at the
    start), and one or two brokers to remove, three staying."""
    n = draw(st.integers(4, 7))
    racks = (draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n)) if draw(st.booleans())
             else [None] * n)
    brokers = [Broker(i, racks[i], capacity=BrokerCapacity(draw(st.sampled_from([0, 3, 5, 8])) * GiB))
               for i in range(n)]
    empty = ClusterModel(brokers, [])
    partitions = []
    for i in range(draw(st.integers(1, 5))):
        reps = tuple(draw(st.permutations(range(n)))[:draw(st.integers(1, 3))])
        assume(max(Counter(rack_key(empty, b) for b in reps).values()) <= rack_limit(empty, list(range(n)), len(reps)))
        partitions.append(Partition("t", i, reps, leader=reps[0], size_bytes=draw(st.sampled_from([1, 2, 3])) * GiB))
    gone = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=min(2, n - 3)))
    return ClusterModel(brokers, partitions), gone


@SETTINGS
@given(_tight_drains())
# Removing 0 and 1: t-0 needs two of 2, 3 and 5 (broker 4, over its 2.4 GiB limit already,
# keeps its replica), t-3's 2 GiB replica one of 2 and 4. The greedy drain gave broker 2 what
# only it could take last (refused: "no broker can take the replica of t-3 on broker 1").
@example((ClusterModel([Broker(i, None, capacity=BrokerCapacity((8, 5, 8, 5, 3, 8)[i] * GiB)) for i in range(6)],
                       [Partition("t", 0, (0, 4, 1), leader=0, size_bytes=3 * GiB),
                        Partition("t", 1, (0,), leader=0, size_bytes=GiB),
                        Partition("t", 2, (1, 5, 3), leader=1, size_bytes=GiB),
                        Partition("t", 3, (1, 5, 3), leader=1, size_bytes=2 * GiB)]), {0, 1}))
def test_removing_brokers_is_planned_whenever_their_replicas_fit_elsewhere(case) -> None:
    """Decommissioning on a full cluster: where the removed brokers' replicas fit on the
    others with every other replica in place, the drain is planned, within the limits and the
    rack rule (the planner may also move others to make room, so it may plan where this
    check says no)."""
    cluster, gone = case
    fits = _drains(cluster, gone)
    event(f"fits: {fits}")
    try:
        result = plan_remove_brokers(cluster, sorted(gone))
    except ValidationError as e:
        assert not fits, f"refused though the replicas fit: {e}"
        return
    # The rules as they stand once the brokers are gone (rack limits count live brokers).
    drained = ClusterModel([replace(b, alive=b.alive and b.id not in gone) for b in cluster.brokers.values()],
                           list(cluster))
    after = cluster.with_assignment(result.plan.replicas)
    assert not any(set(p.replicas) & gone for p in after)
    assert check_hard_goals(drained, drained.with_assignment(result.plan.replicas), removed=gone) == []
    for b, broker in cluster.brokers.items():
        took = [p for p in after if b in p.replicas and b not in cluster.partitions[p.tp].replicas]
        if took and broker.capacity.disk_bytes:
            assert sum(p.size_bytes for p in after if b in p.replicas) <= 0.8 * broker.capacity.disk_bytes


def _fuzz_drain(seed: int, gone: set[int], **spec: Any) -> tuple[ClusterModel, set[int]]:
    """A grown cluster from the repair-mode fuzz (random generator specs, 1-3 brokers removed)."""
    return generate_cluster("medium", seed=seed, **spec), gone


def _assert_drained(cluster: ClusterModel, gone: set[int], replicas: dict, pools: PoolSet | None = None) -> None:
    # Every rule holds except what the start broke already (hand moves crowd racks, replicas
    # outside their pool): those may stay, not grow.
    assert drain_breaks(cluster, gone, replicas, pools) == []


@pytest.mark.slow
def test_a_grown_cluster_is_drained_where_the_greedy_drain_is_stuck() -> None:
    # Fuzz seed 311: 8 brokers in 4 racks, 1,807 partitions of RF 3 and 4, 20% hand-moved.
    # The greedy drain of broker 3 refused ("no broker can take the replica of topic-00196-5
    # on broker 3"), and the start is too large for packing.py. The drain oracle (an
    # independent model) says the leaving replicas alone fit; CP-SAT places them.
    cluster, gone = _fuzz_drain(311, {3}, brokers=8, racks=4, partitions=1807,
                                replication_factors=((4, 0.3), (3, 0.7)), new_brokers=0,
                                hot_topic_share=0.1, zipf_exponent=1.625311977244608,
                                max_partitions_per_topic=128, disk_utilisation=0.6, hand_moved_share=0.2)
    assert drain_fits(cluster, gone, others_move=False)
    result = plan_remove_brokers(cluster, sorted(gone))
    _assert_drained(cluster, gone, result.plan.replicas)
    moved = {tp for tp, reps in result.plan.replicas.items() if set(reps) != set(cluster.partitions[tp].replicas)}
    assert moved == {p.tp for p in cluster if set(p.replicas) & gone}


@pytest.mark.slow
def test_a_drain_that_needs_room_made_moves_other_replicas_and_says_so() -> None:
    # Fuzz seed 347: removing 3 of 12 brokers. The oracle says the leaving replicas do not fit
    # with every other replica in place, but do when others move; the greedy drain refused.
    cluster, gone = _fuzz_drain(347, {9, 3, 6}, brokers=12, racks=3, partitions=1340,
                                replication_factors=((2, 0.5), (3, 0.5)), new_brokers=2,
                                hot_topic_share=0.02, zipf_exponent=0.5549189152910481,
                                max_partitions_per_topic=32, disk_utilisation=0.3, hand_moved_share=0.05)
    assert drain_fits(cluster, gone, others_move=False) is False
    assert drain_fits(cluster, gone, others_move=True)
    result = plan_remove_brokers(cluster, sorted(gone))
    _assert_drained(cluster, gone, result.plan.replicas)
    room = [tp for tp, reps in result.plan.replicas.items()
            if set(reps) != set(cluster.partitions[tp].replicas) and not set(cluster.partitions[tp].replicas) & gone]
    assert room
    assert any(w.startswith(f"{len(room)} partition(s) with no replica to move moved too, to make room")
               for w in result.summary.warnings)


def test_a_pooled_drain_may_move_a_dead_replica_outside_its_pool_into_it() -> None:
    # Grown seed 85 with its pools, broker 4 of 17 removed (2 dead): most topics start outside their
    # pool. CP-SAT's drain moved replicas from removed brokers outside a partition's pool into
    # it, which changes the text of the partition's pool violation but not its truth, and the
    # planner's check refused it on the text ("no broker can take the replica of
    # topic-00430-0 on broker 4"). Now a partition's replicas outside its pool may shrink.
    cluster = generate_cluster("medium", seed=85, **grown_spec(85))
    pools, gone = grown_pools(cluster, 85), grown_removal(cluster, 85)
    result = plan_remove_brokers(cluster, sorted(gone), pools)
    _assert_drained(cluster, gone, result.plan.replicas, pools)


def test_a_pool_whose_small_racks_are_short_together_is_refused_at_once_with_the_proof() -> None:
    # Grown seed 8 with its pools: pool-1's seven brokers sit on racks of 3, 2, 1 and 1, at 80%
    # of their disk limits. The two racks of one broker must hold together more than their
    # limits, though the pool and each rack alone fit. CP-SAT searched 60 deterministic seconds
    # without deciding; a linear program over split replicas, written apart from the planner,
    # finds no placement either.
    cluster = generate_cluster("medium", seed=8, **grown_spec(8))
    pools = grown_pools(cluster, 8)
    assert not disk_splits_fit(cluster, pools)
    with pytest.raises(ValidationError, match=r"^capacity: brokers 11, 13 of 'pool-1' must hold 6,674.1 GiB of "
                                              r"disk \(on racks 'rack-b', 'rack-f': .*\), more than their 2 "
                                              r"live brokers' limits add up to \(6,553.6 GiB.*no plan fits them"):
        plan_rebalance(cluster, pools)


def test_a_pool_migration_the_greedy_fills_wrongly_is_packed_largest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # Grown seed 12 with its pools: every topic starts outside its pool; pool-0's eight brokers
    # on three racks end at 77% of their disk limits, and its largest partition is 0.45 x a
    # broker's limit. The greedy repair, in partition order, found no broker for it; CP-SAT then
    # placed all 2,223 partitions in 39 s. Packed largest first against the loads leaving, the
    # plan needs no search at all.
    cluster = generate_cluster("medium", seed=12, **grown_spec(12))
    pools = grown_pools(cluster, 12)

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("CP-SAT was asked to place the pools")

    monkeypatch.setattr(optimizer, "pack_cp", no_search)
    result = plan_rebalance(cluster, pools)
    assert check_hard_goals(cluster, cluster.with_assignment(result.plan.replicas), pools) == []


@pytest.mark.slow
def test_a_pool_filled_to_99_percent_of_its_disk_limits_is_placed_by_any_placement_first() -> None:
    # Pooled rebalance fuzz seed 3054: pool-1's brokers 0, 2 and 9 must end at 99% of their
    # disk limits. Asked for the fewest moves, CP-SAT found no placement in its budget (nor in
    # 60 deterministic seconds), and the planner refused with "one may still exist". Asked for
    # any placement first, it finds one, then the fewest moves it can from there.
    cluster = generate_cluster("medium", seed=3054, **grown_spec(3054))
    pools = grown_pools(cluster, 3054)
    result = plan_rebalance(cluster, pools)
    assert check_hard_goals(cluster, cluster.with_assignment(result.plan.replicas), pools) == []


def test_a_drain_whose_last_broker_of_a_rack_is_short_is_refused_at_once() -> None:
    # Fuzz seed 163: removing 3 of 9 brokers in 3 racks leaves broker 8 alone in rack c, and
    # it must hold a replica of every RF-3 partition. The oracle says no drain exists even with
    # room made; CP-SAT used to prove it after the greedy drain was stuck.
    cluster, gone = _fuzz_drain(163, {3, 2, 5}, brokers=9, racks=3, partitions=1434,
                                replication_factors=((1, 0.2), (3, 0.8)), new_brokers=1,
                                hot_topic_share=0.02, zipf_exponent=1.4977261486496807,
                                max_partitions_per_topic=32, disk_utilisation=0.45, hand_moved_share=0.0)
    assert drain_fits(cluster, gone, others_move=True) is False
    with pytest.raises(ValidationError, match=r"^capacity: brokers 8 of 'cluster' must hold 5,243.1 GiB of disk "
                                              r"\(on racks 'rack-c': .*\), more than their 1 live brokers' limits "
                                              r"add up to \(3,276.8 GiB; .* or a broker's load at the start where "
                                              r"above\): no plan fits them"):
        plan_remove_brokers(cluster, sorted(gone))


def test_a_drain_proved_impossible_says_so_after_the_greedy_error() -> None:
    # Grown seed 187: removing brokers 12 and 16 of 27; topic-00228-0 has room nowhere, and
    # no sum over the pool or its racks shows it. The oracle says no drain exists even with
    # room made; the error keeps the greedy's partition and adds CP-SAT's proof.
    cluster = generate_cluster("medium", seed=187, **grown_spec(187))
    gone = grown_removal(cluster, 187)
    assert gone == {12, 16} and drain_fits(cluster, gone, others_move=True) is False
    with pytest.raises(ValidationError, match=r"^broker_exclusions: no broker can take the replica of "
                                              r"topic-00228-0 .*; capacity: no assignment of the \d+ movable "
                                              r"partitions fits .*proved by CP-SAT"):
        plan_remove_brokers(cluster, sorted(gone))


def test_a_pooled_drain_onto_brokers_over_their_limits_is_proved_impossible_at_once() -> None:
    # Grown seed 84 with its pools: brokers 10, 13 and 15 of 23 removed, brokers over their
    # disk limit at the start. Only the leaving replicas moving cannot fit; the model where
    # any replica may move ran its whole budget (10 s) without deciding, until a looser model
    # run only to prove (over-limit brokers receiving up to their start) proved it in 0.2 s.
    # The placement model now states the bound its veto rule implies (an over-limit broker
    # ends within the larger of its limit and its start), and proves it itself.
    cluster = generate_cluster("medium", seed=84, **grown_spec(84))
    pools, gone = grown_pools(cluster, 84), grown_removal(cluster, 84)
    with pytest.raises(ValidationError, match=r"; capacity: no assignment of the 217 movable partitions fits .*"
                                              r"proved by CP-SAT.*limits are capacity x capacity_threshold; a "
                                              r"broker above one at the start receives what needs it only if it "
                                              r"then ends within it\)"):
        plan_remove_brokers(cluster, sorted(gone), pools)


@pytest.mark.slow
def test_a_drain_the_placement_model_proves_impossible_is_refused_with_its_rule() -> None:
    # Fuzz seed 428: removing broker 5 of 8 (3 racks, 20% hand-moved, brokers over their
    # limits at the start). CP-SAT's placement model finds no drain, and a looser model then
    # run to prove (over-limit brokers receiving up to their start) found one: refused as "one
    # may still exist". The placement model holds the capacity veto's own rule, so its
    # "infeasible" is the proof; the drain oracle agrees that none exists. The error says
    # which rule over-limit brokers were held to.
    cluster, gone = _fuzz_drain(428, {5}, brokers=8, racks=3, partitions=1618,
                                replication_factors=((3, 1.0),), new_brokers=2, hot_topic_share=0.3,
                                zipf_exponent=0.8760413991814064, max_partitions_per_topic=32,
                                disk_utilisation=0.6, hand_moved_share=0.2)
    assert drain_fits(cluster, gone, others_move=True) is False
    with pytest.raises(ValidationError, match=r"^broker_exclusions: no broker can take the replica of .*; "
                                              r"capacity: no assignment of the 1618 movable partitions .*"
                                              r"proved by CP-SAT.*; a broker above one at the start receives "
                                              r"what needs it only if it then ends within it\)"):
        plan_remove_brokers(cluster, sorted(gone))


@pytest.mark.slow
def test_a_drain_neither_placed_nor_proved_impossible_says_one_may_still_exist() -> None:
    # Grown seed 3 with its pools: removing broker 3 of 20 (3 racks, disks 72% full, brokers
    # over their limits at the start). Neither CP-SAT model decides in its budget, so whether
    # a plan exists is unknown: the error must not say that none does.
    cluster = generate_cluster("medium", seed=3, **grown_spec(3))
    pools, gone = grown_pools(cluster, 3), grown_removal(cluster, 3)
    with pytest.raises(ValidationError, match=r"^broker_exclusions: no broker can take the replica of .* "
                                              r"\(no placement found: the greedy drain is stuck, and "
                                              r"CP-SAT neither placed the replicas nor proved that they "
                                              r"cannot fit, so one may still exist"):
        plan_remove_brokers(cluster, sorted(gone), pools)


def test_a_start_too_large_to_search_says_a_plan_may_still_exist() -> None:
    """The generator's small cluster filled to 78% of disk, 2% under the limits: the greedy
    repairs are stuck, and both the exhaustive packing and CP-SAT run out of budget. Whether a
    plan exists is unknown, and the error says so instead of implying that none does."""
    cluster = generate_cluster("small", seed=2, disk_utilisation=0.78)
    with pytest.raises(ValidationError, match=r"above its disk limit \(no placement found: the greedy "
                                              r"repair is stuck and the start is too large to try every "
                                              r"assignment or search to the end, so one may still exist: "
                                              r"'cluster' must hold "
                                              r"2,397.8 GiB of disk within its 6 live brokers' limits of "
                                              r"2,400.0 GiB \(99.91% full\)"):
        plan_rebalance(cluster)


@pytest.mark.slow
def test_a_start_this_full_in_one_rack_is_planned_and_its_rack_named_as_the_tightest() -> None:
    """15 brokers at 70% disk, three new, a dead broker in rack c: every partition of RF 3
    keeps a replica there, 13,089 GiB for four live brokers' 13,107 GiB of limits (99.86%).
    Draining the dead broker in partition order got stuck, and the packing was too large to
    search: the planner said a plan may exist, naming the rack. Drained largest first against
    the loads that leave (pool_pack.py), it is planned; the rack is still what an undecided
    error names. (The exact repair's flow, solved by cheapest paths in Python, took 6.5
    minutes here.)"""
    cluster = generate_cluster("crowded-medium", seed=2, brokers=15, partitions=4000, new_brokers=3,
                               disk_utilisation=0.7)
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    assert check_hard_goals(cluster, after) == []
    assert all(loads[0] <= broker_limits(after, b, None)[0]
               for b, loads in broker_loads(after).items() if after.brokers[b].alive)
    run = Run(WorkingState(cluster), PlannerOptions())
    assert CapacityGoal().tightest_fill(run) == ("rack 'rack-c' of 'cluster' must hold 13,089.4 GiB of disk "
                                                 "within its 4 live brokers' limits of 13,107.2 GiB (99.86% full)")
