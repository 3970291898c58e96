"""Leader loads placed exactly on small groups: every leadership chosen at once by CP-SAT.

The leader-load goals move leadership by transfers, trades and relays between two or three
brokers at a time. On a small group each leadership is a large share of a broker's load, and
those steps stall where a better assignment needs many leaderships to change together. On 200
random clusters of 6-12 brokers and 40-300 partitions (benchmarks/bench_small.py's shapes) the
greedy missed network out on 28 and leader bytes-in on 47 where no single partition explains
it; on each of the 13 checked, leadership alone, with the replicas where the plan put them and
leader counts exact, met both targets (a separate CP-SAT model said so). With this pass: 10 and
21 misses, the planner's mean CPU 0.7 s (worst 4.3 s, measured beside other work).

Here the leadership of every movable partition of the group is one choice among its replicas
that may lead (live, not excluded, not demoted, a broker the mode lets receive), under every
veto that weighs leadership: the leader count goal's limits, the earlier leader-load goals'
limits, and the capacity goal's network-out limit. The solve first minimises the highest load
above the goal's bounds (what max / mean reports), then how far its brokers end outside them;
then, at that, each topic's leaderships beyond a broker's share (the topic leader goal comes
later, within what this leaves: without it 23 of 97 bench_small plans ended with more topics
uneven, 12 with fewer), then how many leaderships change. Its budget is deterministic time
with one worker, so a plan does not depend on the machine's speed. It runs only where the
goal's greedy left a broker outside its bounds, on groups of up to _MAX_PARTITIONS partitions
(the greedy balances the generator's medium and larger presets within bounds, and the model
grows with the partitions), and not after a topic goal (a custom goal order: its rules are not
modelled). Under a leader-change cap the model may change at most the leaderships the cap leaves
(the cap counts changes made, as WorkingState.leader_changes does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

from ortools.sat.python import cp_model

from kafka_ops.planner.context import Run
from kafka_ops.planner.trades import BalanceGoal, item_loads

_MAX_PARTITIONS = 5_000
_BUDGET = 0.5  # deterministic seconds per solve (one worker): about that many on a laptop core
_SCALE = 1_000_000  # a broker's mean load, in the model's integer units


def place_leaders_exactly(goal: BalanceGoal, run: Run, g: int) -> bool:
    """Re-choose the group's leaders where that brings goal's brokers closer to its bounds;
    True if leadership changed."""
    brokers = run.group_brokers(g)
    if not brokers or _outside(goal, run, g, brokers) == 0:
        return False
    if any(not v.hard and getattr(v, "leader_only", None) is None for v in run.vetoes):
        return False  # a topic goal ran first (a custom order): its leadership rules are not modelled
    lm = LeaderModel.build(run, g, [*leader_vetoes(run), goal], keep_except=goal)
    if lm is None:
        return False
    model, total, unit = lm.model, lm.total, lm.unit
    lo, hi = goal.bounds(run, g)
    above, below = [], []
    for b in brokers:
        a = model.new_int_var(0, 1000 * _SCALE, f"a{b}")
        model.add(a >= total(goal.resource, b) - math.floor(hi / unit[goal.resource]))
        z = model.new_int_var(0, 1000 * _SCALE, f"z{b}")
        model.add(z >= math.ceil(lo / unit[goal.resource]) - total(goal.resource, b))
        above.append(a)
        below.append(z)
    top = model.new_int_var(0, 1000 * _SCALE, "top")
    model.add_max_equality(top, above)
    n = len(brokers)
    outside = n * n * top + sum(n * a for a in above) + sum(below)  # as _outside weighs it
    model.minimize(outside)
    first = new_solver()
    if first.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    model.add(outside <= round(first.objective_value))
    model.minimize(len(lm.choice) * _topic_excess(lm) + lm.changes)
    second = new_solver()
    if second.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    before = _outside(goal, run, g, brokers)
    return apply_leaders(run, g, lm.leaders(second),
                         lambda: _outside(goal, run, g, brokers) < before - 1e-9)


class LeaderModel:
    """The leadership of every movable partition of group g as one CP-SAT choice among its
    replicas that may lead (live, not excluded, not demoted, a broker the mode lets receive),
    under every veto that weighs leadership: the leader-only balance goals that ran (the range
    each keeps a broker in), and the capacity goal's network-out limit. Under a leader-change
    cap at most the changes the cap leaves (the cap counts changes made, as
    WorkingState.leader_changes does)."""

    def __init__(self, run: Run, brokers: list[int], parts: list[int], goals: dict[str, BalanceGoal]) -> None:
        st = run.state
        self.run, self.brokers, self.parts = run, brokers, parts
        self.unit: dict[str, float] = {}
        self.weight: dict[str, list[int]] = {}
        for r, v in goals.items():
            load = st.load(r)
            self.unit[r] = 1.0 if v.integer else max(sum(load[b] for b in brokers) / len(brokers) / _SCALE, 1e-9)
            self.weight[r] = [round(x) for x in (item_loads(v, st, True) / self.unit[r]).tolist()]
        self.model = model = cp_model.CpModel()
        self.choice: dict[int, dict[int, cp_model.IntVar]] = {}
        self.fixed = {r: dict.fromkeys(brokers, 0) for r in goals}  # partitions whose leader stays
        live = set(brokers)
        for p in parts:
            reps = st.replicas[p]
            may = [b for b in reps if b == reps[0] or (b in live and run.dst_ok[b] and not st.demoted[b])]
            if not run.partition_movable[p] or len(may) < 2:
                for r in goals:
                    if reps[0] in self.fixed[r]:
                        self.fixed[r][reps[0]] += self.weight[r][p]
                continue
            self.choice[p] = {b: model.new_bool_var(f"l{p}_{b}") for b in may}
            model.add_exactly_one(self.choice[p].values())
            model.add_hint(self.choice[p][reps[0]], True)
        self.led: dict[int, list[tuple[int, cp_model.IntVar]]] = {b: [] for b in brokers}
        for p, options in self.choice.items():
            for b, x in options.items():
                if b in self.led:
                    self.led[b].append((p, x))
        # The leaders as they are, in the model's rounded units: always within the model's limits.
        self.now = {r: {b: self.fixed[r][b] + sum(self.weight[r][p] for p, _ in self.led[b]
                                                  if st.replicas[p][0] == b)
                        for b in brokers} for r in goals}
        self.changes = cp_model.LinearExpr.sum([x for p, options in self.choice.items()
                                                for b, x in options.items() if b != st.replicas[p][0]])

    @classmethod
    def build(cls, run: Run, g: int, goals: list[BalanceGoal],
              keep_except: BalanceGoal | None = None) -> LeaderModel | None:
        """The model over ``goals``' loads, every one but ``keep_except`` kept within its veto's
        range; None where it does not apply: too many partitions, or no change left under the
        cap."""
        st = run.state
        brokers = run.group_brokers(g)
        parts = [p for p in range(st.np) if st.group_of(p) == g]
        cap = run.options.max_leader_changes
        budget = None if cap is None else cap - st.leader_changes  # changes the cap leaves
        if not brokers or len(parts) > _MAX_PARTITIONS or (budget is not None and budget <= 0):
            return None
        lm = cls(run, brokers, parts, {v.resource: v for v in goals})
        for b in brokers:
            for v in goals:
                if v is not keep_except:
                    lm.keep(v.resource, b, *_kept(v, run, g, b))  # a broker outside the limits may stay there
            if (capacity := _capacity(run)) is not None and "network_out" in lm.unit:
                cap_b = capacity.limits(run, b)[2]
                if math.isfinite(cap_b):
                    lm.keep("network_out", b, -math.inf, max(cap_b, st.net_out[b]))
        if budget is not None:
            lm.model.add(lm.changes <= budget)
        return lm

    def total(self, r: str, b: int) -> cp_model.LinearExprT:
        return sum(self.weight[r][p] * x for p, x in self.led[b]) + self.fixed[r][b]

    def keep(self, r: str, b: int, lo: float, hi: float) -> None:
        """Broker b's load r within [lo, hi], or no further outside than it is now."""
        if math.isfinite(lo):
            self.model.add(self.total(r, b) >= min(math.ceil(lo / self.unit[r] - 1e-6), self.now[r][b]))
        self.model.add(self.total(r, b) <= max(math.floor(hi / self.unit[r] + 1e-6), self.now[r][b]))

    def topic_leaders(self) -> tuple[dict[tuple[int, int], list[cp_model.IntVar]], dict[tuple[int, int], int],
                                     dict[int, int]]:
        """Per (topic, broker): the choices that make b lead one of t's partitions, the
        leaderships that stay; and each topic's partitions in the group."""
        st = self.run.state
        per: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        fixed: dict[tuple[int, int], int] = {}
        size: dict[int, int] = {}
        for p in self.parts:
            t = st.topic[p]
            size[t] = size.get(t, 0) + 1
            if p in self.choice:
                for b, x in self.choice[p].items():
                    per.setdefault((t, b), []).append(x)
            else:
                fixed[t, st.replicas[p][0]] = fixed.get((t, st.replicas[p][0]), 0) + 1
        return per, fixed, size

    def leaders(self, solver: cp_model.CpSolver) -> dict[int, int]:
        return {p: next(b for b, x in options.items() if solver.value(x)) for p, options in self.choice.items()}


def _topic_excess(lm: LeaderModel) -> cp_model.LinearExpr:
    """Leaderships of a topic on a broker beyond its share (ceil(partitions / brokers)), summed:
    the topic leader goal comes later and may only trade within what the leader loads leave."""
    per, fixed, size = lm.topic_leaders()
    n = len(lm.brokers)
    excess = []
    for (t, b), xs in per.items():
        share = -(-size[t] // n)
        if len(xs) + fixed.get((t, b), 0) > share:
            e = lm.model.new_int_var(0, len(xs), "")
            lm.model.add(e >= sum(xs) + fixed.get((t, b), 0) - share)
            excess.append(e)
    return cp_model.LinearExpr.sum(excess)


def _capacity(run: Run) -> Any:
    """The capacity goal among the vetoes (its limits() are not part of the goal protocol)."""
    return next((v for v in run.vetoes if v.name == "capacity"), None)


def leader_vetoes(run: Run) -> list[BalanceGoal]:
    """The leader-only balance goals that ran already (the leader count goal among them)."""
    return [cast(BalanceGoal, v) for v in run.vetoes if getattr(v, "leader_only", None) is True]


def _outside(goal: BalanceGoal, run: Run, g: int, brokers: list[int]) -> float:
    """How far goal's brokers are outside its bounds, as the model weighs it: the highest load
    above them first (what max / mean reports), then a broker above them as much as every
    broker below them could be."""
    lo, hi = goal.bounds(run, g)
    load = run.state.load(goal.resource)
    n = len(brokers)
    above = [max(0.0, load[b] - hi) for b in brokers]
    return n * n * max(above) + sum(n * a + max(0.0, lo - load[b]) for a, b in zip(above, brokers, strict=True))


def apply_leaders(run: Run, g: int, leaders: dict[int, int], better: Callable[[], bool]) -> bool:
    """Make the changes if, in the planner's own float loads, ``better()`` holds after them and
    every leader-load veto keeps its limits as they were (the model's rounding is checked, not
    trusted); else take them back."""
    st = run.state
    brokers = run.group_brokers(g)
    limits = {(v.resource, b): _kept(v, run, g, b) for v in leader_vetoes(run) for b in brokers}
    if (capacity := _capacity(run)) is not None:
        for b in brokers:  # network out within the capacity goal's limit, or no higher than now
            lo, hi = limits.get(("network_out", b), (-math.inf, math.inf))
            cap = max(capacity.limits(run, b)[2], st.net_out[b])
            limits["network_out", b] = (lo, min(hi, cap))
    done = []
    for p, b in leaders.items():
        old = st.replicas[p][0]
        if b != old:
            st.make_leader(p, b)
            done.append((p, old))
    ok = better() and all(limits[r, b][0] - 1e-6 <= st.load(r)[b] <= limits[r, b][1] + 1e-6 for r, b in limits)
    if not ok:
        for p, old in reversed(done):
            st.make_leader(p, old, undo=True)
    return ok and bool(done)


def _kept(goal: BalanceGoal, run: Run, g: int, b: int) -> tuple[float, float]:
    """The range a veto keeps broker b's load in: its limits, widened to where b is now."""
    lo, hi = goal.limits(run, g, b)
    now = run.state.load(goal.resource)[b]
    return min(lo, now), max(hi, now)


def new_solver(budget: float = _BUDGET) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = budget
    solver.parameters.max_time_in_seconds = 30.0  # a guard against a stalled solver (move_exact)
    solver.parameters.random_seed = 0
    return solver
