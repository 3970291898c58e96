"""The planner's incremental indexes agree with a from-scratch recomputation after random actions.

Speed work (issue 9) keeps per-broker structures up to date instead of rescanning every
replica; each one is checked here against the plain computation after a random sequence of
leadership changes and replica moves on a generated cluster.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafka_ops.generator import generate_cluster
from kafka_ops.planner import balance, plan_rebalance
from kafka_ops.planner.context import PlannerOptions, Run
from kafka_ops.planner.leader_scan import LeaderIndex, TakerScan, worst_count
from kafka_ops.planner.state import WorkingState


def _fresh_index(run: Run) -> tuple[list[list[int]], list[list[int]]]:
    st = run.state
    on = run.replicas_on()
    led = [[p for p in on[b] if st.replicas[p][0] == b] for b in range(st.nb)]
    followed = [[p for p in on[b] if st.replicas[p][0] != b] for b in range(st.nb)]
    return led, followed


def test_leader_index_matches_a_recomputation_after_random_leadership_changes() -> None:
    st = WorkingState(generate_cluster("small", seed=3))
    run = Run(st, PlannerOptions(), movable=lambda p: p % 7 != 0)  # some partitions frozen
    index = LeaderIndex(st, run.replicas_on())
    rng = random.Random(5)
    changed = 0
    for _ in range(2000):
        p = rng.randrange(st.np)
        if not run.partition_movable[p]:
            continue
        old = st.replicas[p][0]
        new = rng.choice(st.replicas[p])
        st.make_leader(p, new)
        index.moved(p, old, new)
        changed += old != new
    assert changed > 500
    led, followed = _fresh_index(run)
    assert index.led == led
    assert index.followed == followed


def _worst_by_scan(load: list[int], brokers: list[int], lo: int, hi: int,
                   stuck: set[int]) -> tuple[int, bool] | None:
    best, best_dist, above = -1, 0, False
    for b in brokers:
        if b in stuck:
            continue
        v = load[b]
        dist = v - hi if v > hi else lo - v
        if dist > best_dist:
            best, best_dist, above = b, dist, v > hi
    return (best, above) if best >= 0 else None


def test_worst_count_picks_the_same_broker_as_a_scan() -> None:
    rng = random.Random(11)
    for _ in range(3000):
        n = rng.randint(1, 12)
        brokers = rng.sample(range(20), n)
        load = [rng.randint(0, 8) for _ in range(20)]
        lo = rng.randint(2, 5)
        hi = lo + rng.randint(0, 2)
        stuck = set(rng.sample(brokers, rng.randint(0, n)))
        assert worst_count(load, brokers, lo, hi, stuck) == _worst_by_scan(load, brokers, lo, hi, stuck)


def test_topic_index_fullest_order_matches_a_recomputation_after_random_moves() -> None:
    from kafka_ops.planner.replica_index import REORDER, TOPIC_SCAN, BySize, TopicIndex

    st = WorkingState(generate_cluster("small", seed=4))
    run = Run(st, PlannerOptions())
    on = run.movable_replicas()
    cands = {b: BySize(sorted((st.size[p], p) for p in on[b])) for b in range(st.nb)}
    index = TopicIndex(st, cands)
    dropped: dict[int, set[int]] = {b: set() for b in range(st.nb)}  # dropped for good, as fullest()
    rng = random.Random(9)
    nb = st.nb
    moves = 0
    for _ in range(3000):
        p = rng.randrange(st.np)
        src = rng.choice(st.replicas[p])
        dst = rng.randrange(nb)
        if dst in st.replicas[p]:
            continue
        st.move(p, src, dst)
        index.moved(p, src, dst)
        moves += 1
        for b in (src, dst):
            index._age[b] = REORDER  # force a refresh: compare with the plain computation
            got = index.fullest(b)
            topics = [t for t in index._topics_seen.get(b, []) if t not in dropped[b]]
            alive = [t for t in topics if st.topic_count.get(t * nb + b, 0) >= 2]
            dropped[b] |= set(topics) - set(alive)
            want = sorted(alive, key=lambda t: st.topic_count[t * nb + b] - index.mean[t],
                          reverse=True)[:TOPIC_SCAN]
            assert got == want
    assert moves > 1000


def _plan_with_taker_scan(monkeypatch: pytest.MonkeyPatch, preset: str, vector: bool,
                          goals: tuple[str, ...] | None = None,
                          ) -> tuple[dict[str, list[int]], dict[str, int]]:
    calls = {"best": 0, "give": 0}
    for name in calls:
        real = getattr(TakerScan, name)

        def counted(self: TakerScan, *args: Any, name: str = name,
                    real: Any = real) -> tuple[int, int] | None:
            calls[name] += 1
            return real(self, *args)

        monkeypatch.setattr(TakerScan, name, counted)
    monkeypatch.setattr(balance, "_VECTOR_MIN", 0 if vector else 1 << 40)
    monkeypatch.setattr(balance, "_VECTOR_SCAN", 0 if vector else 1 << 40)
    result = plan_rebalance(generate_cluster(preset, seed=1), options=PlannerOptions(goals=goals))
    plan = {str(tp): list(reps) for tp, reps in result.plan.replicas.items()}
    return plan, dict(calls)


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "goals"), [
    ("small", None), ("medium", None),
    # After the network out goal its bounds veto many transfers: the scans' can_lead path.
    ("medium", ("replica_count", "network_out", "leader_count")),
])
def test_leader_count_numpy_scans_make_the_loops_plan(
        monkeypatch: pytest.MonkeyPatch, preset: str, goals: tuple[str, ...] | None) -> None:
    looped, none = _plan_with_taker_scan(monkeypatch, preset, False, goals)
    vectored, calls = _plan_with_taker_scan(monkeypatch, preset, True, goals)
    assert none == {"best": 0, "give": 0}
    # The numpy scans of both sides chose transfers ...
    assert calls["best"] > 0 and calls["give"] > 0
    assert vectored == looped  # ... and every one was the loop's
