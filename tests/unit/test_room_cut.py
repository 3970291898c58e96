"""room_cut.short_brokers against a linear program over the same rules, written apart from it.

The flow's minimum cut names brokers that must hold more than their room; here GLOP decides
the fractional placement directly (each class's bytes split over brokers, at most its size per
broker, at most the rack limit x size per rack, no broker above fill x room). The two must agree
on every drawn pool, and a set the flow names must hold more than its room by the rules'
own count.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.linear_solver import pywraplp

from kafka_ops.planner.room_cut import short_brokers


def _placeable(rack: dict[int, int], room: dict[int, float], classes: dict[tuple[int, int], float],
               fill: float) -> bool:
    lp = pywraplp.Solver.CreateSolver("GLOP")
    x = {(c, b): lp.NumVar(0, w, f"x{i}_{b}") for i, (c, w) in enumerate(classes.items()) for b in rack}
    for c, w in classes.items():
        rf, limit = c
        lp.Add(sum(x[c, b] for b in rack) == rf * w)
        for r in set(rack.values()):
            lp.Add(sum(x[c, b] for b in rack if rack[b] == r) <= limit * w)
    for b in rack:
        lp.Add(sum(x[c, b] for c in classes) <= fill * room[b])
    return lp.Solve() == pywraplp.Solver.OPTIMAL


def _must(short: list[int], rack: dict[int, int], classes: dict[tuple[int, int], float]) -> float:
    """Per class, its replicas the brokers outside ``short`` cannot take, counted by brute force
    over one partition's best spread (fill each outside rack up to the limit)."""
    free: dict[int, int] = defaultdict(int)
    for b, r in rack.items():
        if b not in short:
            free[r] += 1
    return sum(w * max(0, rf - sum(min(limit, n) for n in free.values())) for (rf, limit), w in classes.items())


@st.composite
def pools(draw: st.DrawFn) -> tuple[dict[int, int], dict[int, float], dict[tuple[int, int], float], float]:
    n = draw(st.integers(1, 8))
    rack = {b: draw(st.integers(0, 3)) for b in range(n)}
    room = {b: draw(st.sampled_from([0.0, 10.0, 25.0, 40.0, 100.0])) for b in range(n)}
    classes: dict[tuple[int, int], float] = {}
    sizes = [list(rack.values()).count(r) for r in set(rack.values())]
    for _ in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, n))
        least = next(lim for lim in range(1, rf + 1) if sum(min(lim, m) for m in sizes) >= rf)
        classes[rf, draw(st.integers(least, rf))] = draw(st.sampled_from([1.0, 7.5, 20.0, 33.0]))
    return rack, room, classes, draw(st.sampled_from([1.0, 0.95]))


@settings(max_examples=400, deadline=None)
@given(pools())
def test_the_flow_names_short_brokers_exactly_when_no_fractional_placement_exists(
        pool: tuple[dict[int, int], dict[int, float], dict[tuple[int, int], float], float]) -> None:
    rack, room, classes, fill = pool
    found = short_brokers(rack, room, classes, fill)
    if found is None:
        assert _placeable(rack, room, classes, fill * (1 + 1e-9) + 1e-9)
        return
    short, must = found
    assert must == _must(short, rack, classes) > fill * sum(room[b] for b in short)
    assert not _placeable(rack, room, classes, fill)


def test_two_racks_of_one_broker_can_be_short_together_though_neither_is_alone() -> None:
    # RF 3, one replica per rack: racks 0 (3 brokers) and 1 (2) hold two of each partition at
    # most, so racks 2 and 3 (a broker each) hold the third: 18 against their 16. Alone, either
    # may leave it to the other. The minimum cut takes rack 1 in too: racks 1-3 must hold two
    # of every partition, 36 against 32.
    rack = {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 3}
    room = dict.fromkeys(rack, 8.0)
    assert short_brokers(rack, room, {(3, 1): 18.0}) == ([3, 4, 5, 6], 36.0)
    assert short_brokers(rack, room, {(3, 1): 16.0}) is None
    assert short_brokers(rack, room, {(3, 1): 16.0}, fill=0.95) is not None


def test_a_tiny_need_beside_a_large_room_is_no_overflow() -> None:
    # 3 B/s in against network-in limits of 100 MB/s: in units of the need, a broker's room is
    # beyond 64 bits; it is never needed beyond the whole need.
    rack = {0: 0, 1: 1, 2: 2}
    assert short_brokers(rack, dict.fromkeys(rack, 1e8), {(3, 1): 1.0}) is None
    assert short_brokers(rack, {0: 1e8, 1: 1e8, 2: 0.5}, {(3, 1): 1.0}) == ([2], 1.0)
