"""The byte-savings pass: a copied replica goes home for a smaller one, within every goal's bounds.

Checked three ways: by hand on a cluster small enough to know the answer; against the plan the
goals made without the pass, on generated clusters (never more bytes or moves, every goal's
bounds as kept); and on the issue's crowded-medium seed 27, where the pass brings the bytes
under the issue's 1.10 x bound.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import kafka_ops.planner.optimizer as optimizer
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.planner import PlannerOptions, plan_rebalance
from kafka_ops.planner.context import Run
from kafka_ops.planner.goals import HARD_GOALS, SOFT_GOALS
from kafka_ops.planner.savings import save_bytes
from kafka_ops.planner.state import WorkingState

GiB = 1024**3


def _cluster() -> ClusterModel:
    """Brokers 0-3 without racks; broker 0 holds a 40 GiB follower and followers of 1-8 GiB."""
    brokers = [Broker(b) for b in range(4)]
    parts = [Partition("big", 0, (1, 0), leader=1, size_bytes=40 * GiB)]
    parts += [Partition("small", i, (2, 0), leader=2, size_bytes=(i + 1) * GiB) for i in range(8)]
    return ClusterModel(brokers, parts)


def _run(c: ClusterModel) -> tuple[Run, int]:
    st = WorkingState(c)
    run = Run(st, PlannerOptions())
    run.vetoes = list(HARD_GOALS)
    big = st.tps.index(next(p.tp for p in c if p.topic == "big"))
    st.move(big, 0, 3)  # what a goal did: copy the 40 GiB follower from 0 to 3
    return run, big


def test_the_smallest_replica_goes_in_place_of_the_copied_one() -> None:
    run, big = _run(_cluster())
    st = run.state
    counts = list(st.count)
    assert save_bytes(run) == 39 * GiB
    assert st.replicas[big] == [1, 0]  # home again: nothing copied for it
    assert st.moved_bytes == GiB and st.moves == 1  # small-0 (1 GiB) went to 3 instead
    assert st.count == counts


def test_the_disk_bounds_limit_how_much_smaller_the_stand_in_may_be() -> None:
    """With the disk goal vetoing, broker 0 may end at most 34 GiB above where the copy left
    it: only stand-ins of 6 GiB or more keep it within bounds, and 6 GiB saves the most."""
    run, big = _run(_cluster())
    st = run.state
    disk = SOFT_GOALS["disk"]
    run.bounds[("disk", 0)] = (0.0, st.disk[0] + 34 * GiB)
    run.vetoes.append(disk)
    assert save_bytes(run) == 34 * GiB
    assert st.moved_bytes == 6 * GiB
    assert st.disk[0] <= run.bounds[("disk", 0)][1]


def test_nothing_changes_when_no_stand_in_is_allowed() -> None:
    run, big = _run(_cluster())
    st = run.state
    run.bounds[("disk", 0)] = (0.0, float(st.disk[0]))  # broker 0 may not gain a byte
    run.vetoes.append(SOFT_GOALS["disk"])
    replicas = [list(r) for r in st.replicas]
    assert save_bytes(run) == 0
    assert st.replicas == replicas


def _plans(c: ClusterModel, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """The plan with and without this pass. The exact passes after it (move_exact.py) are off
    in both: they re-solve from whatever they are given, so two plans that differ going in may
    come out differing in either direction; their own tests hold them to the goals' plan."""
    monkeypatch.setattr(optimizer, "lower_loads", lambda run, goals: False)
    monkeypatch.setattr(optimizer, "save_moves", lambda run, goals: False)
    monkeypatch.setattr(optimizer, "spread_topics", lambda run, goals: False)
    with_pass = plan_rebalance(c, options=PlannerOptions())
    with monkeypatch.context() as m:
        m.setattr(optimizer, "save_bytes", lambda run: 0)
        without = plan_rebalance(c, options=PlannerOptions())
    return with_pass, without


@pytest.mark.parametrize("preset,seed", [("small", s) for s in range(8)]
                         + [("crowded-medium", 3), ("medium", 5)])
def test_the_pass_copies_less_and_keeps_every_goal_as_the_goals_left_it(
        preset: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the same plan without the pass: never more bytes or moves; the hard goals as
    they were; counts and per-topic spreads no worse; no more brokers out of a load goal's
    bounds than the goals left."""
    c = generate_cluster(preset, seed=seed)
    with_pass, without = _plans(c, monkeypatch)
    s, w = with_pass.summary, without.summary  # type: ignore[attr-defined]
    assert s.bytes_moved <= w.bytes_moved
    assert s.replica_moves <= w.replica_moves
    before = {g.name: g.after for g in w.goals}
    for g in s.goals:
        if g.hard:
            assert g.after == before[g.name], g.name
        elif g.name.startswith("topic_") or g.name in ("replica_count", "leader_count"):
            for k, v in g.after.items():  # per-topic counts and broker counts: not a replica worse
                assert v <= before[g.name][k], (g.name, k)
        else:  # loads may shift within the bounds, never out of them
            assert g.after["brokers_out_of_bounds"] <= before[g.name]["brokers_out_of_bounds"], g.name


def test_crowded_medium_seed_27_copies_within_the_issues_bound() -> None:
    """The goals copy 1.103 x the bytes bound here (the count goal sheds large replicas of
    brokers the disk goal later finds light); sending the smaller replicas in their place
    brings it to 1.091, under the issue's 1.10."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-medium", seed=27)
    result = plan_rebalance(c, options=PlannerOptions())
    cost = metrics.moves(c, result.plan.replicas)
    assert cost["bytes"] <= 1.10 * cost["bytes_bound"]
