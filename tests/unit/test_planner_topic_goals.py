"""The per-topic goals (issue 9): replica spread by count-neutral swaps, leader dispersion, and a
summary that scores them as the benchmark's metric script does. Every number is recomputed from
the cluster after the plan, not taken from the planner's bookkeeping."""

from __future__ import annotations

import importlib
import math
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.planner import PlannerOptions, plan_rebalance, topic_paths, topic_relax, topic_swaps
from kafka_ops.planner import topic as topic_goal
from kafka_ops.planner.context import Run
from kafka_ops.planner.goals import HARD_GOALS, SOFT_GOALS
from kafka_ops.planner.state import WorkingState
from kafka_ops.planner.topic import TopicGoal
from kafka_ops.testing.grown import grown_pools, grown_spec

GiB = 1024**3


def part(topic: str, p: int, replicas: tuple[int, ...], size: int = GiB) -> Partition:
    return Partition(topic, p, replicas, leader=replicas[0], size_bytes=size,
                     bytes_in_per_sec=1.0, bytes_out_per_sec=1.0)


def spreads(cluster: ClusterModel, leaders: bool) -> dict[str, int]:
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    per: dict[str, Counter[int]] = {}
    for p in cluster:
        c = per.setdefault(p.topic, Counter())
        for b in (p.replicas[:1] if leaders else p.replicas):
            c[b] += 1
    return {t: max(c[b] for b in live) - min(c[b] for b in live) for t, c in per.items()}


def count_spread(cluster: ClusterModel, leaders: bool) -> int:
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    c = Counter({b: 0 for b in live})
    for p in cluster:
        for b in (p.replicas[:1] if leaders else p.replicas):
            c[b] += 1
    return max(c.values()) - min(c.values())


def test_an_optimum_only_swaps_reach_keeps_counts_racks_and_leaders() -> None:
    # Two racks, RF 2: every partition keeps one replica per rack, so a replica can only move
    # within its rack. Counts and leaders are even; topic a sits on brokers 0/2, b on 1/3.
    # Only swaps a <-> b inside each rack spread both topics (2 per broker).
    brokers = [Broker(0, "r0"), Broker(1, "r0"), Broker(2, "r1"), Broker(3, "r1")]
    parts = [part("a", i, (0, 2) if i % 2 else (2, 0)) for i in range(4)]
    parts += [part("b", i, (1, 3) if i % 2 else (3, 1)) for i in range(4)]
    c = ClusterModel(brokers, parts)
    assert sum(spreads(c, leaders=False).values()) == 8
    result = plan_rebalance(c, options=PlannerOptions(topic_swaps=True))
    after = c.with_assignment(result.plan.replicas)
    assert sum(spreads(after, leaders=False).values()) == 0
    assert count_spread(after, leaders=False) == 0 and count_spread(after, leaders=True) == 0
    for p in after:
        assert {after.brokers[b].rack for b in p.replicas} == {"r0", "r1"}
    assert result.summary.replica_moves == 8  # four swaps (2 replicas of each topic per rack), no more
    status = {g.name: g.status for g in result.summary.goals}
    assert status["topic_replica_distribution"] == "satisfied"


def test_a_perfectly_spread_cluster_is_left_as_it_is() -> None:
    brokers = [Broker(b, f"r{b % 3}") for b in range(6)]
    parts = [part(t, i, (i % 6, (i + 1) % 6, (i + 2) % 6)) for t in ("a", "b", "c") for i in range(6)]
    c = ClusterModel(brokers, parts)
    result = plan_rebalance(c)
    assert len(result.plan) == 0
    assert all(g.status == "satisfied" for g in result.summary.goals if g.name.startswith("topic"))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_generated_clusters_topic_goals_never_worse_and_summary_agrees(seed: int) -> None:
    cluster = generate_cluster("small", seed=seed, partitions=240, max_partitions_per_topic=32)
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    goals = {g.name: g for g in result.summary.goals}
    rep_before, rep_after = spreads(cluster, False), spreads(after, False)
    lead_before, lead_after = spreads(cluster, True), spreads(after, True)
    # Not worse than the start, by the metric issue 9 scores ...
    assert sum(rep_after.values()) <= sum(rep_before.values())
    assert sum(1 for s in lead_after.values() if s > 1) <= sum(1 for s in lead_before.values() if s > 1)
    # ... and the summary reports the same numbers.
    assert goals["topic_replica_distribution"].after["sum_max_minus_min"] == sum(rep_after.values())
    assert goals["topic_leader_dispersion"].after["topics_out_of_bounds"] == sum(
        1 for s in lead_after.values() if s > 1)
    # The count goals' balance survives the count-neutral swaps.
    assert count_spread(after, leaders=False) <= 1 and count_spread(after, leaders=True) <= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grown_cluster_topics_spread_within_the_move_budget(seed: int) -> None:
    # A grown 6-broker cluster (old topics on the first brokers, one new empty broker). The
    # count goal's moves alone leave about half of the topic spread (the planner before the
    # swap search: 0.43-0.53 of the start; leaders 0.36-0.56); swaps, free and paid, must do
    # better without going over 1.10 x the moves the replica counts force.
    cluster = generate_cluster("small", seed=seed, partitions=600, max_partitions_per_topic=32)
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    counts = Counter({b: 0 for b in live})
    for p in cluster:
        counts.update(p.replicas)
    mean = sum(counts.values()) / len(live)
    bound = sum(max(0, c - math.ceil(mean)) for c in counts.values())
    result = plan_rebalance(cluster)
    after = cluster.with_assignment(result.plan.replicas)
    assert result.summary.replica_moves <= 1.10 * bound
    assert sum(spreads(after, False).values()) <= 0.45 * sum(spreads(cluster, False).values())
    out_before = sum(1 for s in spreads(cluster, True).values() if s > 1)
    assert sum(1 for s in spreads(after, True).values() if s > 1) <= 0.25 * out_before
    assert count_spread(after, leaders=False) <= 1 and count_spread(after, leaders=True) <= 1


def test_a_topic_leader_is_passed_along_a_chain_when_no_trade_or_triangle_helps() -> None:
    # Broker 0 leads two of t's four partitions, both followed by broker 1, which leads its one
    # already; 1 -> 2 -> 3 likewise, and only 3 leads none of t. Leader counts are even (two
    # each), so every change must keep them: t0 goes 0 -> 1, t2 1 -> 2, t3 2 -> 3, and 3 pays
    # 0 back with v0 (which evens v out too: 3 led two of v).
    c = ClusterModel([Broker(b) for b in range(4)], [
        part("t", 0, (0, 1)), part("t", 1, (0, 1)), part("t", 2, (1, 2)), part("t", 3, (2, 3)),
        part("v", 0, (3, 0)), part("v", 1, (1, 2)), part("v", 2, (2, 1)), part("v", 3, (3, 2)),
    ])
    result = plan_rebalance(c, options=PlannerOptions(goals=("leader_count", "topic_leader_dispersion")))
    after = c.with_assignment(result.plan.replicas)
    assert result.summary.replica_moves == 0
    for topic in ("t", "v"):
        assert sorted(p.replicas[0] for p in after.topic(topic)) == [0, 1, 2, 3]
    assert Counter(p.replicas[0] for p in after) == {0: 2, 1: 2, 2: 2, 3: 2}
    status = {g.name: g.status for g in result.summary.goals}
    assert status["topic_leader_dispersion"] == "satisfied"


@pytest.mark.parametrize(("preset", "seed", "partitions", "largest"), [
    ("small", 11, 2000, 200),  # one pass over the topics: 42 -> 43 out of bounds ("worse")
    ("small", 0, 600, 32), ("medium", 0, None, None), ("crowded-medium", 0, None, None),
])
def test_topic_leader_dispersion_never_ends_worse_on_any_of_its_measures(
        preset: str, seed: int, partitions: int | None, largest: int | None) -> None:
    # Issue 9's "not worse" rule: earlier goals (the leader count, the leader-load trades) may
    # crowd a topic's leaders, and the dispersion goal must repair at least that much, on each
    # of its numbers (worst topic, sum over topics, topics out of bounds); the summary calls any
    # growth "worse".
    kwargs = {"partitions": partitions, "max_partitions_per_topic": largest} if partitions else {}
    cluster = generate_cluster(preset, seed=seed, **kwargs)
    result = plan_rebalance(cluster)
    goal = next(g for g in result.summary.goals if g.name == "topic_leader_dispersion")
    for k, v in goal.after.items():
        assert v <= goal.before[k], (k, goal.before, goal.after)
    assert goal.status != "worse"
    after = cluster.with_assignment(result.plan.replicas)
    lead_before, lead_after = spreads(cluster, True), spreads(after, True)
    assert max(lead_after.values()) <= max(lead_before.values())
    assert sum(1 for s in lead_after.values() if s > 1) <= sum(1 for s in lead_before.values() if s > 1)


def test_a_topic_piled_up_beyond_the_starts_worst_is_levelled_back_to_it() -> None:
    # Issue 9's "not worse" for the worst topic: t starts with at most two leaders a broker
    # (max - min 2, the cluster's worst). An earlier goal (simulated: two leadership changes)
    # piles three of t's leaders on broker 1; its only followers, 3 and 4, lead one of t each,
    # so t's bounds (0..1 a broker: 5 partitions on 6 brokers) leave no transfer, trade, triangle
    # or chain. Levelling may pass one to a broker at least two below the max: 1 -> 3.
    c = ClusterModel([Broker(b) for b in range(6)], [
        part("t", 0, (3, 1)), part("t", 1, (4, 1)), part("t", 2, (1, 3)), part("t", 3, (3, 4)),
        part("t", 4, (4, 5)),
    ])
    st = WorkingState(c)
    run = Run(st, PlannerOptions())
    run.vetoes = list(HARD_GOALS)
    goal = TopicGoal("topic_leader_dispersion", leaders=True)
    assert goal.measure(run)["max_minus_min"] == 2
    st.make_leader(0, 1)
    st.make_leader(1, 1)
    assert goal.measure(run)["max_minus_min"] == 3
    goal.optimize(run)
    leaders = Counter(reps[0] for reps in st.replicas)
    assert goal.measure(run)["max_minus_min"] == 2
    assert max(leaders.values()) == 2  # the paths of leadership changes may level it elsewhere
    assert all(sorted(reps) == sorted(orig) for reps, orig in zip(st.replicas, st.original, strict=True))


def test_the_free_swap_pass_stops_at_its_search_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # The free pass is bounded (xxl's 186,000 searches cost ~40 CPU s); past the budget the plan
    # still keeps every count goal's balance and ends no worse than the start.
    searches: list[int] = []
    spread = topic_swaps.TopicSpreader.spread

    def recording(self: topic_swaps.TopicSpreader, topics: list[int], bars: np.ndarray) -> None:
        spread(self, topics, bars)
        searches.append(self.searches)

    monkeypatch.setattr(topic_swaps.TopicSpreader, "spread", recording)
    cluster = generate_cluster("small", seed=0, partitions=600, max_partitions_per_topic=32)
    plan_rebalance(cluster)
    assert max(searches) > 3  # the budget below bites
    searches.clear()
    monkeypatch.setattr(topic_swaps, "_FREE_SEARCHES", 3)
    result = plan_rebalance(cluster)
    assert searches and max(searches) <= 3
    after = cluster.with_assignment(result.plan.replicas)
    assert sum(spreads(after, False).values()) <= sum(spreads(cluster, False).values())
    assert count_spread(after, leaders=False) <= 1 and count_spread(after, leaders=True) <= 1


def test_plan_bounds_count_the_bytes_a_new_empty_broker_must_receive() -> None:
    # Brokers 0 and 1 hold 10 GiB each in 1 GiB replicas, broker 2 none. Counts: 3 replicas
    # above ceil(20/3) on each, 6 GiB. Disk: 2 x (10 - 1.03 x 20/3) = 6.27 GiB must leave the
    # full brokers, but 0.97 x 20/3 = 6.47 GiB must arrive on the empty one: the bound.
    c = ClusterModel([Broker(0), Broker(1), Broker(2)],
                     [part(f"t{i}", 0, (i % 2,)) for i in range(20)])
    moves, nbytes = topic_swaps.plan_bounds(Run(WorkingState(c), PlannerOptions()))
    assert moves == 6
    assert nbytes == int(0.97 * 20 / 3 * GiB)


def test_a_topic_is_spread_by_one_move_where_the_counts_leave_room_for_it() -> None:
    # Counts 2, 2, 1 are balanced (bounds 1..2); topic a sits 2, 1, 0 (its share is 1 each).
    # A swap with b's replica on broker 2 costs two moves; moving a's second replica from
    # broker 0 (at the upper bound) to broker 2 (at the lower) keeps every count within bounds
    # for one.
    c = ClusterModel([Broker(0), Broker(1), Broker(2)],
                     [part("a", 0, (0,)), part("a", 1, (0,)), part("a", 2, (1,)),
                      part("b", 0, (1,)), part("b", 1, (2,))])
    result = plan_rebalance(c, options=PlannerOptions(topic_swaps=True))
    after = c.with_assignment(result.plan.replicas)
    assert spreads(after, False) == {"a": 0, "b": 1}
    assert result.summary.replica_moves == 1
    assert count_spread(after, leaders=False) <= 1 and count_spread(after, leaders=True) <= 1


def test_the_paid_pass_steps_only_topics_still_out_of_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # A topic queued for a paid step may have been evened out since, as the other topic of
    # someone else's swaps: stepping it then would spend moves on a topic within its bounds
    # (medium seed 1 spent 57 moves on 4 such steps).
    stale: list[int] = []
    step = topic_swaps.TopicSpreader._step

    def checked(self: topic_swaps.TopicSpreader, t: int, side: int) -> bool:
        k, now = self._steps(t)
        if not k or now != side:
            stale.append(t)
        return step(self, t, side)

    monkeypatch.setattr(topic_swaps.TopicSpreader, "_step", checked)
    plan_rebalance(generate_cluster("medium", seed=1))
    assert stale == []


def _evenable(cluster: ClusterModel) -> bool:
    """By brute force: is there a choice of leaders (among each partition's replicas) with every
    broker's leader count and every topic's leaders per broker within floor..ceil of the mean?"""
    import itertools

    parts = list(cluster)
    brokers = list(cluster.brokers)
    n = len(brokers)
    k_t = Counter(p.topic for p in parts)
    lo, hi = len(parts) // n, -(-len(parts) // n)
    for choice in itertools.product(*(p.replicas for p in parts)):
        per = Counter(choice)
        if not all(lo <= per[b] <= hi for b in brokers):
            continue
        per_topic = Counter(zip((p.topic for p in parts), choice, strict=True))
        if all(k_t[t] // n <= per_topic[t, b] <= -(-k_t[t] // n) for t in k_t for b in brokers):
            return True
    return False


@pytest.mark.parametrize("seed", range(150))
def test_leaders_even_out_per_topic_whenever_leadership_alone_can(seed: int) -> None:
    """Random small clusters (4-5 brokers, up to three topics, nine partitions of RF 2-3, all
    leaders piled on few brokers). Whenever some choice of leaders (found by brute force) keeps
    the leader counts and every topic within their bounds, the leader goals reach one: the
    topic goal's augmenting paths find the way the short trades and triangles miss."""
    import random

    rng = random.Random(seed)
    n = rng.choice((4, 5))
    parts = []
    for i in range(9):
        topic = f"t{rng.randrange(3)}"
        reps = rng.sample(range(n), rng.choice((2, 3)))
        if rng.random() < 0.7:  # piled: broker 0 leads where it holds a replica
            reps.sort(key=lambda b: b != 0)
        parts.append(Partition(topic, i, tuple(reps), leader=reps[0], size_bytes=GiB,
                               bytes_in_per_sec=0.0, bytes_out_per_sec=0.0))
    c = ClusterModel([Broker(b) for b in range(n)], parts)
    result = plan_rebalance(c, options=PlannerOptions(goals=("leader_count", "topic_leader_dispersion")))
    after = c.with_assignment(result.plan.replicas)
    assert result.summary.replica_moves == 0
    if _evenable(c):
        assert count_spread(after, leaders=True) <= 1
        k_t = Counter(p.topic for p in parts)
        for t, s in spreads(after, leaders=True).items():
            assert s <= (0 if k_t[t] % n == 0 else 1), (t, s)


def test_a_topic_sheds_a_leader_along_its_own_partitions_with_a_hand_back() -> None:
    # Topic t (6 partitions on 6 brokers: one leader each) has two on broker 0 and none on 5;
    # every follower on the way leads its one already, so the leadership travels
    # 0 -> 1 -> 2 -> 3 -> 4 -> 5 along t's partitions. Every broker leads two partitions and the
    # leader count goal (threshold 0) allows no other count, so 5 hands 0 back u0, the one
    # partition of topic u it leads that 0 follows (u stays one leader a broker).
    c = ClusterModel([Broker(b) for b in range(6)], [
        part("t", 0, (0, 1)), part("t", 1, (0, 1)), part("t", 2, (1, 2)), part("t", 3, (2, 3)),
        part("t", 4, (3, 4)), part("t", 5, (4, 5)),
        part("u", 0, (5, 0)), part("u", 1, (1, 2)), part("u", 2, (2, 3)), part("u", 3, (3, 4)),
        part("u", 4, (4, 1)), part("u", 5, (5, 2)),
    ])
    st = WorkingState(c)
    run = Run(st, PlannerOptions())
    run.vetoes = [*HARD_GOALS, SOFT_GOALS["leader_count"]]
    goal = TopicGoal("topic_leader_dispersion", leaders=True)
    run.memo[topic_paths.TOP] = {r: max(st.load(r)) for r in ("network_out", "leader_bytes_in")}
    t = st.topics.index("t")
    on, trades = topic_goal._topic_replicas(run), topic_goal._leader_pairs(run)

    assert topic_paths.topic_path(goal, run, t, 0, goal.bounds(run, t), on, trades)

    for name in ("t", "u"):
        k = st.topics.index(name) * st.nb
        assert [st.topic_leaders.get(k + b, 0) for b in range(6)] == [1] * 6, name
    assert st.leaders == [2] * 6
    assert st.leader_changes == 6  # five along t, one handed back
    assert all(sorted(reps) == sorted(orig) for reps, orig in zip(st.replicas, st.original, strict=True))


def test_a_dead_end_is_searched_again_once_its_topic_changes() -> None:
    # Topic t leads twice on broker 0, once on 1, 2, 4 and 3, never on 5; with at most one a
    # broker, a leadership off 0 finds no broker with room along t's partitions (0 -> 1 -> 2
    # -> back to 0), and the search remembers 0, 1 and 2 as a dead end. Moving t2's leadership
    # from 1 to 2 frees 1: the same search must now run, and pass one of 0's to 1.
    c = ClusterModel([Broker(b) for b in range(6)], [
        part("t", 0, (0, 1)), part("t", 1, (0, 1)), part("t", 2, (1, 2)), part("t", 3, (2, 0)),
        part("t", 4, (4, 3)), part("t", 5, (3, 5)),
    ])
    st = WorkingState(c)
    run = Run(st, PlannerOptions())
    run.vetoes = [*HARD_GOALS]
    goal = TopicGoal("topic_leader_dispersion", leaders=True)
    run.memo[topic_paths.TOP] = {r: max(st.load(r)) * 10 for r in ("network_out", "leader_bytes_in")}
    t = st.topics.index("t")
    on, trades = topic_goal._topic_replicas(run), topic_goal._leader_pairs(run)

    assert not topic_paths.topic_path(goal, run, t, 0, (0, 1), on, trades)
    assert run.memo[topic_paths.DEAD_ENDS][t, False, 0, 1][1] == {0, 1, 2}
    st.make_leader(2, 2)  # partitions are indexed in input order: t2 is 2
    assert topic_paths.topic_path(goal, run, t, 0, (0, 1), on, trades)
    assert [st.topic_leaders.get(t * st.nb + b, 0) for b in range(6)] == [1, 1, 2, 1, 1, 0]


def test_a_search_skipped_as_a_dead_end_would_have_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    # topic_path remembers the brokers a search of a topic found no path end from and skips
    # searches from them until the topic changes (on xxl with pools, 70,000 such searches
    # took 12 of the goal's 19.5 s). Each failure where the memo could have skipped is
    # checked here by the search itself, run again with the memo put aside: it must fail too,
    # changing nothing. The cluster is fuzz_grown's pooled
    # seed 20, where the goal skips hundreds of searches.
    search = topic_paths.topic_path
    skipped = 0

    def checked(goal: TopicGoal, run: Run, t: int, s: int, limits: tuple[int, int],
                on: Mapping[int, list[int]], trades: dict[tuple[int, int], list[int]],
                pull: bool = False) -> bool:
        nonlocal skipped
        known = run.memo.get(topic_paths.DEAD_ENDS, {}).get((t, pull, *limits))
        if known is None or s not in known[1]:
            return search(goal, run, t, s, limits, on, trades, pull)
        if search(goal, run, t, s, limits, on, trades, pull):
            return True
        memo = run.memo.pop(topic_paths.DEAD_ENDS)  # again, without it
        before = run.state.leader_changes
        assert not search(goal, run, t, s, limits, on, trades, pull)
        assert run.state.leader_changes == before
        run.memo[topic_paths.DEAD_ENDS] = memo
        skipped += 1
        return False

    monkeypatch.setattr(topic_goal, "topic_path", checked)
    cluster = generate_cluster("medium", seed=20, **grown_spec(20))
    plan_rebalance(cluster, grown_pools(cluster, 20))
    assert skipped > 100, skipped


def _pinned_broker_case(relax: bool) -> tuple[WorkingState, bool]:
    """Broker 0 leads no partition of topic t (four tiny partitions, one per broker), broker 1
    two. 0 sits at the highest leader bytes-in (31.5; the goal's start keeps every broker at or
    under it) and at the leader count goal's ceiling (3; threshold 0): taking t0 from 1 passes
    both. Handing 1 back the one partition of 0's that 1 follows (v0, 16) drops 0 below its
    lower bound (26.0), and the hand backs through a third broker overload or drain it. With 0's
    limits widened (one leader, 0.0005 x the mean loads) the fix is made, then repaired: 0 hands
    s0 (3.5) on to broker 3, which ends at 31.5, and 0 back within both limits."""
    def p(topic: str, i: int, reps: tuple[int, ...], b_in: float) -> Partition:
        return Partition(topic, i, reps, leader=reps[0], size_bytes=GiB, bytes_in_per_sec=b_in,
                         bytes_out_per_sec=0.0)
    tiny = 1 / 128  # binary fractions: the sums compare exactly
    c = ClusterModel([Broker(b) for b in range(4)], [
        p("t", 0, (1, 0), tiny), p("t", 1, (1, 3), tiny), p("t", 2, (2, 3), tiny), p("t", 3, (3, 2), tiny),
        p("u", 0, (0, 2), 12), p("v", 0, (0, 1), 16), p("s", 0, (0, 3), 3.5),
        p("x", 0, (1, 2), 28 - 2 * tiny), p("y", 0, (2, 3), 28 - tiny), p("z", 0, (3, 1), 28 - tiny),
    ])
    st = WorkingState(c)
    run = Run(st, PlannerOptions())
    run.vetoes = [*HARD_GOALS, SOFT_GOALS["leader_count"], SOFT_GOALS["leader_bytes_in"]]
    if not relax:
        run.memo[topic_relax._BUDGET_KEY] = 0
    goal = TopicGoal("topic_leader_dispersion", leaders=True)
    run.memo[topic_paths.TOP] = {r: max(st.load(r)) for r in ("network_out", "leader_bytes_in")}
    on, trades = topic_goal._topic_replicas(run), topic_goal._leader_pairs(run)
    t = st.topics.index("t")
    return st, goal._pass_leader(run, t, 0, on, run.replicas_on(), trades, pull=True)


def test_a_broker_pinned_by_the_leader_loads_takes_its_topic_share_and_repays_the_load() -> None:
    st, passed = _pinned_broker_case(relax=False)
    assert not passed and st.leader_changes == 0  # every way the search had before is refused

    st, passed = _pinned_broker_case(relax=True)
    assert passed
    t = st.topics.index("t") * st.nb
    assert [st.topic_leaders.get(t + b, 0) for b in range(4)] == [1] * 4
    assert st.leaders == [3, 2, 2, 3]
    leader = {f"{st.topics[st.topic[q]]}{st.tps[q].partition}": reps[0] for q, reps in enumerate(st.replicas)}
    assert leader == {"t0": 0, "t1": 1, "t2": 2, "t3": 3, "u0": 0, "v0": 0, "s0": 3, "x0": 1, "y0": 2, "z0": 3}
    assert st.leader_in[0] == 28 + 1 / 128 and max(st.leader_in) == 31.5
    assert st.leader_changes == 2


@pytest.mark.slow
def test_leadership_alone_leaves_few_topics_uneven_on_xl() -> None:
    """xl seed 0 (200 brokers, 272,000 replicas): of the topics whose leaders end more than one
    apart, few could be evened by a choice of leaders among their replicas (the metric script's
    own b-matching, each topic on its own). Before the topic's own alternating paths
    (topic_paths.py) 113 could, of 191 uneven; with them 13 of 91. The rest need the leader
    loads or counts the earlier goals settled to give way."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("xl", seed=0)
    s = metrics.score(c, plan_rebalance(c, options=PlannerOptions()).plan.replicas)
    assert s["topic_leader_evenable"] <= 30
    assert s["topic_leader_spread_over_1"] <= 120


@pytest.mark.slow
def test_brokers_pinned_by_the_leader_loads_leave_fewer_topics_uneven_than_the_start() -> None:
    """crowded-xl seed 6: thirteen brokers each lead a partition of a write-heavy RF-2 topic and
    sit at leader bytes-in 1.10 and network out 0.95x the mean, every leadership they could take
    or hand on for a topic refused by one of the two. With their limits widened for the fix and
    repaired after (topic_relax.py), topics with leaders over one apart end 206 where they ended
    255 before, worse than the 231 the cluster started with. Once the disk goal re-targeted its
    moves, the leader bytes-in goal's fine trades piled 6 leaderships of a 256-partition topic
    (share 1-2) on one such broker, and no trade could hand one back: that topic ended 5
    apart, wider than any at the start, and the goal "worse". Held to one above a topic's share
    (LeaderLoads.piles): 212, "improved"; held to the share, one above only for the brokers
    stuck so: 163."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    metrics = importlib.import_module("plan_metrics")
    c = generate_cluster("crowded-xl", seed=6)
    result = plan_rebalance(c, options=PlannerOptions())
    before, after = metrics.score(c), metrics.score(c, result.plan.replicas)
    assert after["topic_leader_spread_over_1"] <= before["topic_leader_spread_over_1"] - 50
    status = {g.name: g.status for g in result.summary.goals}
    assert status["topic_leader_dispersion"] == "improved"
    assert after["leader_in_max_mean"] <= 1.10 + 1e-9 and after["net_out_max_mean"] <= 1.05 + 1e-9
    assert after["leaders_max_min"] <= 1
