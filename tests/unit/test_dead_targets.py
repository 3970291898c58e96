"""No plan, in any mode, changes a partition and keeps a replica on a dead broker.

Kafka completes a reassignment only once every target replica is in sync, and a new replica
order is a reassignment too; the executor refuses such a plan whole. Offline partitions (no
replica on a live broker) have no leader to copy from, so every mode leaves them as they are
and says so. These tests FAIL when a mode plans such a partition, or refuses a plan because of
a dead broker it was not asked about. The checks read the plan and the cluster only.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.planner import (
    PlannerOptions,
    PlanResult,
    plan_add_brokers,
    plan_demote,
    plan_fix_offline,
    plan_migrate_pool,
    plan_rebalance,
    plan_remove_brokers,
    plan_replace_broker,
    plan_set_replication_factor,
)
from kafka_ops.planner.context import Run
from kafka_ops.planner.optimizer import optimize
from kafka_ops.planner.state import WorkingState
from kafka_ops.testing.feasibility import stays
from kafka_ops.testing.grown import grown_pools, grown_removal, grown_spec
from kafka_ops.testing.strategies import adversarial_clusters

TP = TopicPartition


def _offline_targets(cluster: ClusterModel, result: PlanResult, gone: set[int] = frozenset()) -> list[str]:
    """The plan's partitions with a target replica on a dead (or removed) broker."""
    down = {b for b, x in cluster.brokers.items() if not x.alive} | gone
    return [f"{tp}: {target}" for tp, target in result.plan.replicas.items() if down & set(target)]


def _modes(cluster: ClusterModel, seed: int) -> dict[str, Callable[[], PlanResult]]:
    """Every mode on a grown cluster, with its arguments drawn from the seed."""
    r = random.Random(seed)
    live = sorted(b for b, x in cluster.brokers.items() if x.alive)
    holding = [b for b in live if cluster.partitions_on(b)]
    empty = [b for b in live if not cluster.partitions_on(b)]
    dead = sorted(b for b, x in cluster.brokers.items() if not x.alive)
    old = dead[0]
    twin = next((b for b in empty if cluster.brokers[b].rack == cluster.brokers[old].rack), None)
    topics = sorted({p.topic for p in cluster})
    modes: dict[str, Callable[[], PlanResult]] = {
        "rebalance": lambda: plan_rebalance(cluster),
        "add-brokers": lambda: plan_add_brokers(cluster, empty),
        "demote": lambda: plan_demote(cluster, r.sample(holding, 3)),
        "set-rf": lambda: plan_set_replication_factor(cluster, r.sample(topics, 20), 2),
        "fix-offline": lambda: plan_fix_offline(cluster),
        "migrate-pool": lambda: plan_migrate_pool(cluster, grown_pools(cluster, seed)),
    }
    if twin is not None:  # a new broker in the dead one's rack
        modes["replace-broker"] = lambda: plan_replace_broker(cluster, old, twin)
    return modes


@pytest.mark.parametrize("seed", [34, 74, 76])
def test_no_mode_plans_a_partition_onto_a_dead_broker(seed: int) -> None:
    """Grown starts with dead brokers and empty new ones: before,
    demote reordered partitions with a dead follower, set-rf kept dead replicas (down to a
    dead leader alone) and replace-broker refused for another dead broker's replicas."""
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    planned = 0
    for mode, plan in _modes(cluster, seed).items():
        try:
            result = plan()
        except ValidationError as e:
            assert "dead" not in str(e) and "could never complete" not in str(e), (mode, str(e))
            continue
        planned += 1
        assert _offline_targets(cluster, result) == [], mode
    gone = grown_removal(cluster, seed)
    result = plan_remove_brokers(cluster, sorted(gone))
    assert _offline_targets(cluster, result, gone) == []
    assert planned >= 5


def _cluster(dead: tuple[int, ...], parts: list[tuple[str, int, tuple[int, ...]]]) -> ClusterModel:
    """Six brokers on racks r0, r1, r2 (broker b on r{b % 3})."""
    brokers = [Broker(b, rack=f"r{b % 3}", alive=b not in dead) for b in range(6)]
    return ClusterModel(brokers, [Partition(t, i, reps, leader=next((b for b in reps if b not in dead), -1),
                                            size_bytes=100, bytes_in_per_sec=1.0, bytes_out_per_sec=1.0)
                                  for t, i, reps in parts])


def test_demote_leaves_a_partition_with_a_dead_follower_led_where_it_is_and_says_why() -> None:
    c = _cluster((2,), [("t", 0, (0, 1, 2)), ("t", 1, (0, 1, 5)), ("t", 2, (1, 0, 2))])
    result = plan_demote(c, [0])
    assert set(result.plan.replicas) == {TP("t", 1)}
    assert result.plan.replicas[TP("t", 1)][0] != 0
    assert sorted(result.plan.replicas[TP("t", 1)]) == [0, 1, 5]
    assert any("1 partition(s) keep a demoted leader: a replica on a dead broker" in w and "t-0" in w
               for w in result.summary.warnings)


def test_set_rf_replaces_the_topics_dead_replicas_and_drops_a_dead_leader_first() -> None:
    c = _cluster((2,), [("t", 0, (2, 0, 1)), ("t", 1, (0, 2)), ("u", 0, (0, 1, 2))])
    down = plan_set_replication_factor(c, ["t"], 1)
    assert down.plan.replicas == {TP("t", 0): (0,), TP("t", 1): (0,)}  # not (2,): a dead leader alone
    up = plan_set_replication_factor(c, ["t"], 3)
    after = c.with_assignment(up.plan.replicas)
    assert all(len(p.replicas) == 3 and 2 not in p.replicas for p in after.topic("t"))
    assert TP("u", 0) not in up.plan.replicas  # another topic's dead replica is fix-offline's
    same = plan_set_replication_factor(c, ["t"], 2)  # t-1 is at 2, but its dead replica is replaced
    assert 2 not in same.plan.replicas[TP("t", 1)] and len(same.plan.replicas[TP("t", 1)]) == 2


def test_set_rf_refuses_to_grow_an_offline_partition_naming_it() -> None:
    c = _cluster((2, 5), [("t", 0, (2, 5)), ("t", 1, (0, 1))])
    with pytest.raises(ValidationError, match=r"^set-rf: 1 partition\(s\) of the topics are offline .*: t-0; "):
        plan_set_replication_factor(c, ["t"], 3)


def test_replace_broker_is_not_refused_for_another_dead_brokers_replicas() -> None:
    """Broker 2 is replaced by 5 (rack r2) while 1 is dead too: t-1 (on both) leaves 1 as well,
    wherever the rules allow; t-2, on 1 alone, is fix-offline's and stays. It used to be
    refused: 1's replicas could go to 5 only."""
    c = _cluster((1, 2), [("t", 0, (2, 0)), ("t", 1, (0, 1, 2)), ("t", 2, (1, 3)), ("t", 3, (2, 1))])
    result = plan_replace_broker(c, 2, 5)
    assert result.plan.replicas[TP("t", 0)] == (5, 0)
    t1 = result.plan.replicas[TP("t", 1)]
    assert t1[0] == 0 and t1[2] == 5 and t1[1] in (3, 4)
    assert TP("t", 2) not in result.plan.replicas
    assert TP("t", 3) not in result.plan.replicas  # offline: no replica to copy from
    assert any("1 partition(s) (t-3) offline" in w for w in result.summary.warnings)
    assert _offline_targets(c, result) == []


def test_offline_partitions_are_left_as_they_are_with_a_warning_in_every_repair() -> None:
    c = _cluster((0, 3), [("t", 0, (0, 3)), ("t", 1, (0, 1)), ("t", 2, (4, 5))])
    for result in (plan_fix_offline(c), plan_rebalance(c)):
        assert TP("t", 0) not in result.plan.replicas
        assert 0 not in result.plan.replicas[TP("t", 1)]
        assert any("1 partition(s) (t-0) offline (no replica on a live broker) left as they are" in w
                   for w in result.summary.warnings)


def test_a_mode_that_would_reorder_a_partition_with_a_dead_replica_gets_an_error_not_a_plan() -> None:
    """The last line: whatever a mode's own step does, the plan never holds such a partition."""
    c = _cluster((2,), [("t", 0, (0, 1, 2))])
    st = WorkingState(c)

    def reorder(run: Run) -> None:
        st.make_leader(0, st.index[1])

    with pytest.raises(ValidationError, match=r"^test: the plan would change t-0 and keep its replica on "
                                              r"broker 2, which is dead: its reassignment could never complete"):
        optimize(st, PlannerOptions(), "test", prepare=reorder, soft=False, fix=())


def test_add_brokers_leaves_a_dead_replica_no_new_broker_may_take_to_fix_offline() -> None:
    """t-0's replica on dead broker 2 must leave, and the only new broker (4) is in the rack of
    its other replica (r1). The refusal said "capacity and rack_awareness together leave no
    placement ... under max_replicas_per_broker=None", naming neither; then it named them, and
    refused the new broker. Now the plan balances onto broker 4, leaves t-0 to fix-offline, and
    its first warning says why, naming the replica."""
    c = _cluster((2,), [("t", 0, (2, 1)), ("t", 1, (0, 1)), ("t", 2, (1, 3))])
    c = ClusterModel([b for b in c.brokers.values() if b.id != 5], list(c))
    result = plan_add_brokers(c, [4])
    assert result.summary.warnings[0] == (
        "the new brokers alone cannot repair what the start breaks (broker_exclusions: t-0 has no placement: "
        "it has 2 replicas, and only 1 fit on distinct live brokers of those it holds or this plan may add "
        "replicas to (4) in 'cluster' within the rack limit of 1 a rack; its replica on broker 2, which is "
        "dead, must leave; fix-offline places it on any live broker): this plan repairs what they can, "
        "leaves the rest no worse and balances onto them; 1 partition(s) with a replica on a dead broker are "
        "left to fix-offline; a rebalance may use every broker")
    assert TopicPartition("t", 0) not in result.plan.replicas
    assert 4 in {b for reps in result.plan.replicas.values() for b in reps}
    assert _offline_targets(c, result) == []
    assert _offline_targets(c, plan_fix_offline(c)) == []


@settings(max_examples=300, deadline=None, derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow])
@given(adversarial_clusters(), st.data())
def test_no_mode_on_an_adversarial_start_changes_a_partition_it_cannot_complete(case, data) -> None:
    """Every mode, with its arguments drawn, on starts with dead brokers, offline partitions,
    partitions in flight, crowded racks and pools: a plan changes no offline or in-flight
    partition and puts no changed partition on a dead or drained broker; a refusal is never
    the last check's (that would be a mode planning such a partition)."""
    cluster, pools, max_replicas = case
    options = PlannerOptions(max_replicas_per_broker=max_replicas)
    live = sorted(b for b, x in cluster.brokers.items() if x.alive)
    assume(live)
    dead = sorted(set(cluster.brokers) - set(live))
    # Arguments where the rule bites: leaders and topics of partitions with a dead replica.
    hurt = [p for p in cluster if set(p.replicas) & set(dead) and not stays(cluster, p)]
    leaders = sorted({p.replicas[0] for p in hurt} & set(live)) or live
    blocked = {p.topic for p in cluster if stays(cluster, p)}  # set-rf refuses these topics
    topics = sorted({p.topic for p in hurt} - blocked) or sorted(cluster.topics)
    gone: set[int] = set()
    mode = data.draw(st.sampled_from(["rebalance", "add-brokers", "demote", "replace-broker", "set-rf",
                                      "fix-offline", "remove-brokers", "migrate-pool"]))
    event(mode)
    try:
        if mode == "rebalance":
            result = plan_rebalance(cluster, pools, options)
        elif mode == "add-brokers":
            result = plan_add_brokers(cluster, data.draw(st.lists(st.sampled_from(live), min_size=1, unique=True)),
                                      pools, options)
        elif mode == "demote":
            result = plan_demote(cluster, [data.draw(st.sampled_from(leaders))], pools, options)
        elif mode == "replace-broker":
            old = data.draw(st.sampled_from(dead or live))
            gone = {old}
            result = plan_replace_broker(cluster, old, data.draw(st.sampled_from(live)), pools, options)
        elif mode == "set-rf":
            topic = data.draw(st.sampled_from(topics))
            result = plan_set_replication_factor(cluster, [topic], data.draw(st.integers(1, 3)), pools, options)
        elif mode == "fix-offline":
            result = plan_fix_offline(cluster, pools, options)
        elif mode == "remove-brokers":
            gone = {data.draw(st.sampled_from(live))}
            result = plan_remove_brokers(cluster, sorted(gone), pools, options)
        else:
            assume(pools is not None)
            assert pools is not None
            result = plan_migrate_pool(cluster, pools, options=options)
    except ValidationError as e:
        event("refused")
        assert "could never complete" not in str(e), (mode, str(e))
        return
    event("planned")
    assert _offline_targets(cluster, result, gone) == [], mode
    for tp in result.plan.replicas:
        assert not stays(cluster, cluster.partitions[tp]), (mode, tp)
