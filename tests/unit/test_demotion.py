"""demote under network-out limits, against an exhaustive check of every choice of leaders.

A new leader takes all of the partition's traffic out: its bytes out plus a copy of its bytes
in per follower. These tests FAIL when demote refuses brokers whose leaderships fit on other
replicas, touches a partition the demoted brokers do not lead, or leaves a broker over its
network-out limit.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.planner import PlannerOptions, plan_demote

# derandomize: CI runs the same clusters every time; KAFKA_OPS_HYPOTHESIS_RANDOM=1 explores
# new ones (3,000 random ones passed when this was written).
SETTINGS = settings(max_examples=300, deadline=None,
                    derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow])
INF = float("inf")


def _out(p: Partition) -> float:
    return p.bytes_out_per_sec + p.bytes_in_per_sec * (len(p.replicas) - 1)


def _limit(cluster: ClusterModel, b: int) -> float:
    return cluster.brokers[b].capacity.network_out_bytes_per_sec * 0.8 or INF


def _sends(cluster: ClusterModel) -> Counter[int]:
    sends: Counter[int] = Counter()
    for p in cluster:
        sends[p.replicas[0]] += _out(p)
    return sends


def _may_lead(cluster: ClusterModel, b: int, demoted: set[int]) -> bool:
    return b not in demoted and cluster.brokers[b].alive


def _leaders_fit(cluster: ClusterModel, demoted: set[int]) -> bool:
    """Whether every partition a demoted broker leads, with a live replica that is not
    demoted, can be led by one within the network-out limits: every choice tried."""
    sends = _sends(cluster)
    todo = [p for p in cluster if p.replicas[0] in demoted
            and any(_may_lead(cluster, b, demoted) for b in p.replicas)]
    for p in todo:
        sends[p.replicas[0]] -= _out(p)

    def place(i: int) -> bool:
        if i == len(todo):
            return True
        p = todo[i]
        for b in p.replicas:
            if _may_lead(cluster, b, demoted) and sends[b] + _out(p) <= _limit(cluster, b):
                sends[b] += _out(p)
                if place(i + 1):
                    return True
                sends[b] -= _out(p)
        return False

    return place(0)


@st.composite
def _demotions(draw: st.DrawFn) -> tuple[ClusterModel, list[int]]:
    """Three to six brokers, one in six dead, network-out limits of 4, 6.4 or 9.6 B/s or
    none; one to six partitions at RF 1-3 (some led by a dead broker); one or two to demote."""
    n = draw(st.integers(3, 6))
    brokers = [Broker(i, None, alive=draw(st.sampled_from([True] * 5 + [False])),
                      capacity=BrokerCapacity(network_out_bytes_per_sec=draw(st.sampled_from([0, 5, 8, 12]))))
               for i in range(n)]
    partitions = []
    for i in range(draw(st.integers(1, 6))):
        reps = tuple(draw(st.permutations(range(n)))[:draw(st.integers(1, 3))])
        partitions.append(Partition("t", i, reps, leader=reps[0],
                                    bytes_in_per_sec=draw(st.sampled_from([0.0, 1.0, 2.0])),
                                    bytes_out_per_sec=draw(st.sampled_from([0.0, 1.0, 2.0, 3.0]))))
    return ClusterModel(brokers, partitions), sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2)))


def _partition(i: int, replicas: tuple[int, ...], bytes_in: float, bytes_out: float) -> Partition:
    return Partition("t", i, replicas, leader=replicas[0], bytes_in_per_sec=bytes_in,
                     bytes_out_per_sec=bytes_out)


def _brokers(*limits: float, dead: tuple[int, ...] = ()) -> list[Broker]:
    return [Broker(b, None, alive=b not in dead, capacity=BrokerCapacity(network_out_bytes_per_sec=lim))
            for b, lim in enumerate(limits)]


@SETTINGS
@given(_demotions())
# Demoting 3: t-0 (3 B/s out) may go to 2 or 0, t-1 (5) to 0 or 1, t-3 (5) to 2 or 0, each of
# 0-2 under 6.4 (2 sends 2 already). The follower leading least took each in turn: t-0 to 0,
# t-1 to 1, and t-3 had no room left. t-0 to 2 and t-3 to 0 fit.
@example((ClusterModel(_brokers(8, 8, 8, 0, 0),
                       [_partition(0, (3, 2, 0), 1.0, 1.0), _partition(1, (3, 0, 1), 2.0, 1.0),
                        _partition(2, (2,), 0.0, 2.0), _partition(3, (3, 2, 0), 1.0, 3.0)]), [3]))
# Demoting 3 (t-1 goes to 0): t-2, led by dead broker 2, has only broker 1 to go to, and no
# room there. That refused the demotion, which never asked to move t-2.
@example((ClusterModel(_brokers(8, 5, 0, 0, 8, dead=(2, 4)),
                       [_partition(0, (1, 4, 2), 1.0, 1.0), _partition(1, (3, 0), 0.0, 0.0),
                        _partition(2, (2, 1), 2.0, 3.0)]), [3]))
def test_demote_is_planned_whenever_the_leaderships_fit_on_other_replicas(case) -> None:
    """Refused only where no choice of leaders fits; planned: only the partitions the demoted
    brokers lead change, each to a live replica that is not demoted where it has one, no
    replica moves, and no broker over its network-out limit that it kept."""
    cluster, demoted = case
    fits = _leaders_fit(cluster, set(demoted))
    event(f"fits: {fits}")
    try:
        result = plan_demote(cluster, demoted)
    except ValidationError as e:
        assert not fits, f"refused though the leaderships fit: {e}"
        return
    for tp, replicas in result.plan.replicas.items():
        old = cluster.partitions[tp].replicas
        assert sorted(replicas) == sorted(old) and old[0] in demoted, (tp, old, replicas)
    after = cluster.with_assignment(result.plan.replicas)
    for p in after:
        if any(_may_lead(cluster, b, set(demoted)) for b in p.replicas) and p.tp in result.plan.replicas:
            assert _may_lead(cluster, p.replicas[0], set(demoted)), p
        elif cluster.partitions[p.tp].replicas[0] in demoted:
            assert p.tp not in result.plan.replicas
    start, end = _sends(cluster), _sends(after)
    for b in cluster.brokers:
        assert end[b] <= max(_limit(cluster, b), start[b]) + 1e-9, (b, start[b], end[b])


def test_a_partition_no_follower_can_lead_is_named_with_the_followers_loads() -> None:
    """t-1 sends 9 B/s; broker 1, its only other replica, may send 8 and sends 2."""
    cluster = ClusterModel(_brokers(0, 10),
                           [_partition(0, (1,), 0.0, 2.0), _partition(1, (0, 1), 3.0, 6.0)])
    with pytest.raises(ValidationError, match=r"^demote: no replica of t-1 that may lead has network-out "
                                              r"room for it: it sends 9 B/s; broker 1 sends 2 B/s of 8 B/s$"):
        plan_demote(cluster, [0])


def test_leaderships_that_fit_one_by_one_but_not_together_say_every_choice_was_tried() -> None:
    """t-0 and t-1 (4 B/s out each) can each go to broker 1 (6.4), not both."""
    cluster = ClusterModel(_brokers(0, 8, 0),
                           [_partition(0, (0, 1), 0.0, 4.0), _partition(1, (2, 1), 0.0, 4.0)])
    with pytest.raises(ValidationError, match=r"^demote: no choice of new leaders for the 2 partitions "
                                              r"the demoted brokers lead fits the network-out limits "
                                              r"\(every one tried\); most often t-1 found no replica "
                                              r"with room$"):
        plan_demote(cluster, [0, 2])


def test_demote_within_the_cap_on_leader_changes_only() -> None:
    cluster = ClusterModel(_brokers(0, 0, 0), [_partition(i, (0, 1 + i % 2), 0.0, 1.0) for i in range(3)])
    with pytest.raises(ValidationError, match=r"^demote: the cap on leader changes leaves no room for the 3 "):
        plan_demote(cluster, [0], options=PlannerOptions(max_leader_changes=2))
    result = plan_demote(cluster, [0], options=PlannerOptions(max_leader_changes=3))
    assert result.plan.replicas == {TopicPartition("t", 0): (1, 0), TopicPartition("t", 1): (2, 0),
                                    TopicPartition("t", 2): (1, 0)}
