"""Repair modes refuse at once where their pools or brokers cannot hold what must move.

CapacityGoal.drain_short is a relaxation of the repair modes' rules (a broker ends within
its limit or its start; racks as crowded as the start at most), so its refusal is a proof.
These tests FAIL when it refuses where the drain oracle (drain_oracle.drain_fits, a CP-SAT
model written apart from the planner) finds a drain or migration, or when it misses the
grown starts that CP-SAT used to prove for seconds.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, event, example, given, settings

from kafka_ops.errors import ValidationError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.planner import plan_fix_offline, plan_migrate_pool
from kafka_ops.pools import Pool, PoolSet
from kafka_ops.testing.drain_oracle import drain_fits
from kafka_ops.testing.grown import grown_pools, grown_spec
from kafka_ops.testing.strategies import tight_mixed_clusters

GiB = 1024**3
PROOF = "no plan fits them"
SETTINGS = settings(max_examples=300, deadline=None, derandomize=not os.environ.get("KAFKA_OPS_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tight_mixed_clusters(pooled=True))
def test_a_migration_refused_up_front_has_no_migration_in_the_oracle(case) -> None:
    """Any start, over its limits or not: a proof before any search is never contradicted."""
    cluster, pools, _ = case
    try:
        plan_migrate_pool(cluster, pools)
    except ValidationError as e:
        event(f"proved up front: {PROOF in str(e)}")
        if PROOF in str(e):
            assert drain_fits(cluster, set(), others_move=True, seconds=10, pools=pools) is not True, str(e)


def _outside_dead() -> tuple[ClusterModel, PoolSet, None]:
    """x-0's replica on dead broker 2, outside its pool x, fits in x only with 16.5 GiB on
    16 GiB of limits; a drain may also keep it outside its pool, on broker 3 (the oracle
    without pools does): no proof may count it in x."""
    brokers = [Broker(b, alive=b != 2, capacity=BrokerCapacity(10 * GiB)) for b in range(4)]
    pools = PoolSet([Pool("x", frozenset({0, 1}), ("x",)), Pool("y", frozenset({2, 3}), ("y",))])
    return ClusterModel(brokers, [Partition("x", 0, (0, 2), leader=0, size_bytes=GiB),
                                  Partition("x", 1, (0,), leader=0, size_bytes=7 * GiB),
                                  Partition("x", 2, (1,), leader=1, size_bytes=int(7.5 * GiB))]), pools, None


@SETTINGS
@given(tight_mixed_clusters())
@example(_outside_dead())
def test_a_fix_offline_refused_up_front_has_no_drain_in_the_oracle(case) -> None:
    cluster, pools, _ = case
    try:
        plan_fix_offline(cluster, pools)
    except ValidationError as e:
        event(f"proved up front: {PROOF in str(e)}")
        if PROOF in str(e):
            assert drain_fits(cluster, set(), others_move=True, seconds=10, pools=pools, migrate=False) \
                is not True, str(e)


@pytest.mark.parametrize(("seed", "claim"), [
    # pool-0's 4 brokers: 13,864.1 GiB of disk to hold, 13,107.2 GiB of limits (CP-SAT: 3.1 s).
    (1, r"^capacity: the replicas of 'pool-0' take 13,864.1 GiB of disk, more than its 4 live brokers' "
        r"limits add up to \(13,107.2 GiB; limits are capacity x capacity_threshold, or a broker's load "
        r"at the start where above\): no plan fits them"),
    # Broker 7, alone in rack b of pool-0, must hold a replica of what the others may not (2.2 s).
    (28, r"^capacity: brokers 7 of 'pool-0' must hold 3,431.2 GiB of disk \(on racks 'rack-b': .* \(or its "
         r"crowding at the start\)\), more than their 1 live brokers' limits add up to \(3,276.8 GiB"),
])
def test_a_migration_its_pool_cannot_hold_is_refused_at_once_and_the_oracle_agrees(seed: int, claim: str) -> None:
    cluster = generate_cluster("medium", seed=seed, **grown_spec(seed))
    pools = grown_pools(cluster, seed)
    with pytest.raises(ValidationError, match=claim):
        plan_migrate_pool(cluster, pools)
    assert drain_fits(cluster, set(), others_move=True, seconds=30, pools=pools) is False


def test_a_broker_over_its_limit_at_the_start_may_stay_there_in_a_drain() -> None:
    """16.5 GiB on brokers whose limits add up to 16: a rebalance could not fit it, but
    fix-offline only moves t-0's replica off dead broker 0, onto broker 2 (7 of 8 GiB);
    broker 1 stays at 9.5 GiB, above its 8, as it started. Refused with the limits alone."""
    brokers = [Broker(0, alive=False, capacity=BrokerCapacity(10 * GiB)),
               *(Broker(b, capacity=BrokerCapacity(10 * GiB)) for b in (1, 2))]
    cluster = ClusterModel(brokers, [Partition("t", 0, (0, 1), leader=1, size_bytes=GiB),
                                     Partition("u", 0, (1,), leader=1, size_bytes=int(8.5 * GiB)),
                                     Partition("u", 1, (2,), leader=2, size_bytes=6 * GiB)])
    assert plan_fix_offline(cluster).plan.replicas == {TopicPartition("t", 0): (2, 1)}
