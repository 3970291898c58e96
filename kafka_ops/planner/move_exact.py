"""Small clusters: the plan re-placed exactly by CP-SAT: lower loads, fewer moves, even topics.

The goals run one after another, and each moves what the ones before left: the replica count
goal picks which replicas move before the disk and leader-load goals know what they will need,
and those then swap replicas again. On a cluster of 6-12 brokers each swap is a large share of
the plan: bench_small.py --moves found plans of 38 moves where 28 reach the same loads (seed
1), 263 where at most 237 do (seed 0). The greedy goals also stop above their bounds where
only several replicas moved at once would reach them. Here, after the goals, one model places
every replica and leader of the group again. A replica on a broker its partition did not start
on is a move, and its size is copied. Every goal's measure must come out no worse than the
plan's:

- the hard goals: distinct brokers, live brokers of the group that may receive, the rack limit,
  and the capacity limits;
- per broker, each balance goal's load (replicas, leaders, disk, network in and out, leader
  bytes-in) no higher than the plan's highest broker, the counts no lower than its lowest
  (max - min), and within the goal's bounds where the plan left it within them (kept clear of
  rounding);
- per topic and broker, its replicas and its leaderships between the plan's fewest and most.

Three solves use it. `lower_loads` runs where the plan left a broker's disk or rate load above
its goal's bound: it minimises the loads above the bounds, an earlier goal's weighing more, with
up to _LOWER_MOVES times the plan's moves. On such a load any broker may rise to the plan's
highest: the goal's brokers out of bounds may grow where it had some, its max / mean may not.
Where a load is still above its bound, it solves the model again with the replicas outside
some racks fixed: the racks of the brokers above a bound together (if not all of them), then
each alone, in at most _RACK_TRIES searches; a broker held above the bound by one replica
alone does not count. Neighbourhood search over the whole group stops where a rack's brokers
all sit at the disk's highest and only another split of the rack's replicas among them would
even their network in (bench_small.py seed 23: 1.17 x the mean after 20 deterministic
seconds, where a search from scratch finds 1.05 in 6); a few racks are small enough for the
complete search. On seeds 0-99, network in came out lower on 11 plans and met its target on 2
more, leader bytes-in lower on 8 and met on 2 more (seed 9: network in 1.13 -> 1.05), for 7%
more CPU. With _RACK_BUDGET at 2, seed 23 reached 1.06 (1.15 at 1) for 20% more (measured
before the one-replica rule and the cap). Outside the racks, a rack's model carries only each
partition's own replicas, fixed, no variable for the other brokers: a deterministic second of
search then costs less CPU (fuzz_grown.py rebalance seed 30, 39 brokers in 4 racks: 17.3 ->
14.0 s for the same plan). Searching the racks again after one lowered a load (up to 6
searches) gained little: network in lower on 2 plans, no target newly met, 5% more CPU.
`save_moves` then keeps the loads of whichever plan stands, and minimises the moves and bytes
copied, neither above the plan's, each as a share of the plan's. Where its neighbourhood
search leaves them above issue 9's targets, the same model is searched two brokers at a time
(`_pairs`): on bench_small.py's seeds 0-99, moves 14,043 -> 13,838 and bytes 72.8 -> 71.5 TB
summed, plans within 1.10 x the count bound 48 -> 50 (seed 65: 175 -> 146 moves, bound 125),
the same load targets met, for 20% more CPU (35% with presolve's probing and symmetry
detection on, for 13,792 moves); fuzz_grown.py's rebalances (seeds 0-39) came out the same
plans for the same CPU. `spread_topics` last keeps
the loads too, and minimises the topics' replica spread (the sum over topics of max - min
replicas per broker, the topic replica goal's measure), within the moves and bytes that goal
may spend (1.099 x the plan's lower bounds, topic_swaps.plan_bounds) or the plan's where it
spent more. The goal's swaps, one pair at a time, stop where each alone would take a load past
its bound (bench_small.py seed 6: 137 where the rack floor is 47); several replicas re-placed
at once get past that. It is skipped where the topics are already within twice what their
replica counts force. On bench_small.py's seeds 0-99 (97 planned) the spread summed over
plans went from 5,674 to 5,435 (rack floor 3,046), the plans above twice their floor from 37
to 30, the moves from 13,974 to 14,048 (no plan newly above 1.10 x the count bound), the
planner's mean CPU from 5.6 to 6.9 s; with the bytes counted exactly, not in the model's
rounded unit, a search on seed 29 ran into the wall-clock guard (30 s for 2 deterministic).
Where the spread stays far above that, the loads hold it: on seed 34 (22, rack floor 8) CP-SAT
proves 22 the least with the disk kept (the disk goal's brokers within its bounds stay within,
where giant partitions leave others above), 8 with it dropped. Letting a balance goal's loads
go anywhere within its bounds, not only up to the plan's highest, bought little: the spread
summed 5,417 -> 5,409, worse on 6 plans (a larger space for the same search), loads higher
on most, 9% more CPU.

The plan is each solve's hint and its first solution; neighbourhood search improves on it. A
result is taken only if, in the planner's own float loads, no goal's measure got worse and it
is better: for `lower_loads` a goal's max / mean or max - min is lower, for `save_moves` it
moves and copies no more and one of them less, for `spread_topics` the topics' spread is
lower. `lower_loads` stops searching once no load is above its bound: what is left is the
moves, which `save_moves` trims. One thread and a deterministic time budget: the plan does not
depend on the machine (short of a stalled solver, which a wall-clock guard stops).

A search that comes back without any solution, the hint a complete and feasible one, is run
again without presolve's inclusion detection. On fuzz_grown.py's rebalances (13-48 brokers)
OR-Tools 9.15's presolve lost the hint of 8 of 40 seeds' move pass (seeds 24 and 30:
"INFEASIBLE" right after its log called the hint feasible; the others UNKNOWN), and the pass
silently kept the goals' plan. Again without it: replica moves 65,675 -> 65,521 summed over the
40 (seed 34: 253 -> 214, 24: 931 -> 867, 30: 298 -> 272), for 46% more planner CPU (mean 10.1 ->
14.8 s, seed 24: 48 -> 117 s; the search's deterministic second costs three times the CPU
without it). A quarter of that search's budget kept 11% of the gain (half: 37%) for 61% of
the CPU (half: 87%). Inclusion detection off in every search changed plans that never met
the bug. Only in a
plain rebalance of one group of at most _MAX_PARTITIONS partitions with the default goals and
no caps: pools, caps, modes and custom orders are not modelled.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from kafka_ops.planner.balance import BalanceGoal
from kafka_ops.planner.context import Run
from kafka_ops.planner.goals import DEFAULT_SOFT_GOALS, HARD_GOALS, SoftGoal
from kafka_ops.planner.hard import CapacityGoal, rack_limit
from kafka_ops.planner.state import WorkingState
from kafka_ops.planner.topic_swaps import _BYTES_CAP, _MOVES_CAP, plan_bounds

_MAX_PARTITIONS = 1_000
_PROVE = 0.2  # deterministic seconds for the default search to prove a small model optimal
_BUDGET = 2.0  # deterministic seconds of neighbourhood search, where it did not
_RACK_BUDGET = 1.0  # ... lowering the loads within some racks
_RACK_TRIES = 3  # ... in this many searches at most (3 racks: every rack alone, or two and each)
_SPREAD = 2.0  # ... for the topic spread
_PAIR = 0.1  # deterministic seconds of complete search per pair of brokers, saving moves
_PAIRS_BUDGET = 2.0  # ... for all pairs
_PAIR_BROKERS = 12  # ... in groups of at most this many brokers (see _pairs)
_WALL = 30.0  # wall seconds at most per search: a guard, far above what any budget takes
_LOWER_MOVES = 1.5  # lowering the loads may move this many times the plan's replicas
_WORST = 4  # lowering the loads: a load's worst broker weighs this many brokers above the bound
_GRAIN = 100_000_000  # a broker's mean load, in the model's integer units
_SCALE = 1_000_000  # the plan's moves, and its bytes, each cost this much in the objective
_LEADS = ("leaders", "network_out", "leader_bytes_in")  # loads a replica carries only as leader
_LE = cp_model.LinearExpr


def lower_loads(run: Run, goals: Sequence[SoftGoal]) -> bool:
    """Re-place the group's replicas so that the disk and rate loads above their goals' bounds
    are lower, where no goal gets worse; True if done. First the whole group; then, where a
    load is still above its bound, the racks of the brokers above it, together and one at a
    time (the module doc: neighbourhood search on the whole group does not find what a
    complete search of one rack does)."""
    brokers = _group(run, goals)
    if brokers is None:
        return False
    model = _Model(run, goals, brokers, lower=True)
    if not model.excess:
        return False
    chosen = _solve(model)
    done = chosen is not None and _apply(run, goals, chosen, lower=True)
    racks = {run.state.rack[b] for b in brokers if run.state.eligible[b]}
    hot = _hot_racks(run, goals, brokers)
    tries = [w for w in ([set(hot)] if len(hot) > 1 else []) + [{r} for r in hot]
             if w != racks]  # all racks: the whole group again
    for within in tries[:_RACK_TRIES]:
        model = _Model(run, goals, brokers, lower=True, within=within)
        if not model.excess:
            break
        chosen = _solve(model, _RACK_BUDGET)
        done = (chosen is not None and _apply(run, goals, chosen, lower=True)) or done
    return done


def _hot_racks(run: Run, goals: Sequence[SoftGoal], brokers: list[int]) -> list[int]:
    """The racks of the brokers above a disk or rate load's bound that could come within it:
    none of the broker's replicas weighs more than the bound alone (one that does keeps it
    above whatever moves, and a search for it spends its budget in vain). Racks of one broker
    are left out: there only leaderships could change."""
    st = run.state
    live = [b for b in brokers if st.eligible[b]]
    size = Counter(st.rack[b] for b in live)
    hot: set[int] = set()
    for g in goals:
        if not isinstance(g, BalanceGoal) or g.integer:
            continue
        r, high = g.resource, g.bounds(run, 0)[1]
        load = st.load(r)
        heaviest = {b: 0.0 for b in live if load[b] > high and size[st.rack[b]] > 1}
        for p in range(st.np) if heaviest else ():
            w = _raw_weights(st, p)[r]
            for b in (st.replicas[p][:1] if r in _LEADS else st.replicas[p]):
                if b in heaviest:
                    heaviest[b] = max(heaviest[b], w)
        hot |= {st.rack[b] for b, w in heaviest.items() if w <= high}
    return sorted(hot)


def spread_topics(run: Run, goals: Sequence[SoftGoal]) -> bool:
    """Re-place the group's replicas so that the topics' replicas are spread more evenly (the
    sum over topics of max - min per broker), within the moves and bytes the topic replica
    goal may spend, and no goal worse; True if done."""
    brokers = _group(run, goals)
    if brokers is None or not run.state.np:
        return False
    st = run.state
    live = [b for b in brokers if st.eligible[b]]
    counts = [[st.topic_count.get(t * st.nb + b, 0) for b in live] for t in range(len(st.topics))]
    # Within twice the topics that cannot divide evenly (issue 9's target, on a floor that
    # leaves out the rack rule) the search is skipped: its time goes where the target is missed.
    if sum(max(c) - min(c) for c in counts) <= 2 * sum(1 for c in counts if sum(c) % len(live)):
        return False
    model = _Model(run, goals, brokers, spread=True)
    if not model.spread:
        return False
    chosen = _solve(model, _SPREAD)
    return chosen is not None and _apply(run, goals, chosen, most=model.most)


def save_moves(run: Run, goals: Sequence[SoftGoal]) -> bool:
    """Re-place the group's replicas with fewer moves where no goal gets worse; True if done.
    Neighbourhood search first, then the broker pairs (_pairs); if the model's rounding lets
    the pairs' placement past a bound, the search's own is tried."""
    brokers = _group(run, goals)
    if brokers is None:
        return False
    model = _Model(run, goals, brokers)
    chosen = _solve(model)
    if chosen is None:
        return False
    moves, copied = _cost(run.state, chosen)
    moves_bound, bytes_bound = plan_bounds(run)
    met = moves <= _MOVES_CAP * moves_bound and copied <= _BYTES_CAP * bytes_bound  # issue 9's targets
    if met or sum(run.state.eligible[b] for b in brokers) > _PAIR_BROKERS:
        return _apply(run, goals, chosen)
    paired = _pairs(model, chosen)
    return _apply(run, goals, paired) or (paired != chosen and _apply(run, goals, chosen))


def _cost(st: WorkingState, chosen: dict[int, tuple[set[int], int]]) -> tuple[int, int]:
    """The plan's replica moves and bytes copied, were ``chosen`` made."""
    moves, copied = st.moves, st.moved_bytes
    for p, (brokers, _) in chosen.items():
        was = len(set(st.replicas[p]) - set(st.original[p]))
        now = len(brokers - set(st.original[p]))
        moves += now - was
        copied += st.size[p] * (now - was)
    return moves, copied


def _pairs(model: _Model, chosen: dict[int, tuple[set[int], int]]) -> dict[int, tuple[set[int], int]]:
    """The placement improved two brokers at a time: every variable fixed (as assumptions)
    but those of the partitions on either broker, now or at the start, each free among the
    two and the brokers it is on; each such model searched completely for _PAIR deterministic
    seconds. Neighbourhood search picks its variables at random, where undoing a move needs
    the partitions that took its place on the same two brokers: bench_small.py seed 93's
    moves 141 -> 115 in one sweep of its pairs, where 4 more deterministic seconds of
    neighbourhood search reached 130. The brokers in the most moves first; at most
    _PAIRS_BUDGET deterministic seconds in all, and only where the moves or bytes are above
    issue 9's targets (1.10 x the plan's lower bounds), in a group of at most _PAIR_BROKERS:
    on larger ones a search's deterministic time stays near zero while loading the model takes
    its CPU, so the budget bounds nothing but the wall-clock guard (fuzz_grown.py's rebalance
    seeds 1, 9, 19, 24, 30, 34 and 39, 17-39 brokers: 1.5% fewer moves for 57% more CPU)."""
    st = model.run.state
    m = model.m
    rows: list[tuple[int, int, int, bool]] = []  # per variable: index, partition, broker, is `on`
    at: dict[tuple[int, int], int] = {}  # the row of a partition's `on` on a broker
    for p, on in model.on.items():
        for b, x in on.items():
            at[p, b] = len(rows)
            rows.append((x.index, p, b, True))
        rows.extend((x.index, p, b, False) for b, x in model.lead[p].items())
    index = np.array([r[0] for r in rows], dtype=np.int64)
    part = np.array([r[1] for r in rows], dtype=np.int64)
    broker = np.array([r[2] for r in rows], dtype=np.int64)
    on_row = np.array([at[p, b] for _, p, b, _ in rows], dtype=np.int64)
    started = np.array([b in st.original[p] for _, p, b, _ in rows])[on_row]

    def values(placed: dict[int, tuple[set[int], int]]) -> np.ndarray:
        return np.array([b in placed[p][0] if is_on else b == placed[p][1] for _, p, b, is_on in rows])

    now, best = values(chosen), model.found
    churn = Counter(broker[(now != started) & (on_row == np.arange(len(rows)))].tolist())
    pairs = sorted(itertools.combinations(sorted({b for _, _, b, _ in rows}), 2),
                   key=lambda ab: -(churn[ab[0]] + churn[ab[1]]))
    spent, start = 0.0, time.perf_counter()
    for a, b in pairs:
        if spent >= _PAIRS_BUDGET or time.perf_counter() - start > _WALL:  # _solver's guard, for all
            break
        near = np.isin(broker, (a, b))
        touched = np.unique(part[near & (now[on_row] | started)])
        free = np.isin(part, touched) & (near | now[on_row])
        m.clear_hints()
        m.proto.solution_hint.vars.extend(index.tolist())
        m.proto.solution_hint.values.extend(now.astype(int).tolist())
        m.clear_assumptions()
        m.proto.assumptions.extend(np.where(now, index, -index - 1)[~free].tolist())
        solver = _solver(lns=False, budget=_PAIR, gap=0)
        # Most of each search is loading the whole model; presolve's probing and symmetry
        # detection, of little use where nearly every variable is fixed, were a fifth of it.
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.symmetry_level = 0
        status = solver.solve(m)
        spent += solver.deterministic_time
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and solver.objective_value < best - 0.5:
            chosen, best = model.chosen(solver), solver.objective_value
            now = values(chosen)
    m.clear_assumptions()
    return chosen


def _group(run: Run, goals: Sequence[SoftGoal]) -> list[int] | None:
    """The brokers of the one group, where the model covers the plan; else None."""
    st = run.state
    o = run.options
    if (len(st.groups) != 1 or st.np > _MAX_PARTITIONS or run.leadership_only
            or tuple(g.name for g in goals) != DEFAULT_SOFT_GOALS or o.max_moves is not None
            or o.max_bytes is not None or o.max_leader_changes is not None or st.moves == 0):
        return None
    brokers = run.group_brokers(0)
    if not brokers or not all(run.dst_ok[b] for b in brokers):
        return None
    return brokers


def _solve(model: _Model, budget: float = _BUDGET) -> dict[int, tuple[set[int], int]] | None:
    """The default search proves a small model optimal quickly; on a larger one it rarely
    improves on the hint (seed 9 of bench_small: not in 10 s), and neighbourhood search from the
    plan, a complete solution, takes over. That cannot prove optimality: it runs its whole
    budget, unless the objective reaches a bound it knows (the loads all within bounds, below)."""
    solver = _solver(lns=False, budget=_PROVE, gap=model.gap)
    if solver.solve(model.m) != cp_model.OPTIMAL:
        solver = _solver(lns=True, budget=budget, gap=model.gap)
        if solver.solve(model.m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            # The hint is a complete, feasible placement: no solution means presolve lost it.
            solver.parameters.presolve_inclusion_work_limit = 0
            if solver.solve(model.m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                return None
    model.found = solver.objective_value
    return model.chosen(solver)


def _solver(lns: bool, budget: float, gap: int) -> cp_model.CpSolver:
    """One thread and a deterministic budget: the plan does not depend on the machine. For
    neighbourhood search, the LNS workers take turns on that thread (interleaved). The search
    stops once its objective is within `gap` of the best bound it has proven. The wall-clock
    guard only matters if the solver stalls: one search in about 3,000 on tiny clusters ran 394 s
    on a deterministic budget of 1 s (not reproduced since). The plan is then what it found."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.interleave_search = lns
    solver.parameters.use_lns_only = lns
    solver.parameters.max_deterministic_time = budget
    solver.parameters.random_seed = 0
    solver.parameters.absolute_gap_limit = gap
    solver.parameters.max_time_in_seconds = _WALL
    return solver


class _Model:
    """The CP-SAT model of the module doc, over the movable partitions."""

    def __init__(self, run: Run, goals: Sequence[SoftGoal], brokers: list[int],
                 lower: bool = False, spread: bool = False, within: set[int] | None = None) -> None:
        st = run.state
        self.run = run
        self.lower = lower
        self.m = m = cp_model.CpModel()
        self.gap = 0  # how far from the proven bound a solution is good enough (see lower)
        self.most = (0, 0)  # spread: the moves and bytes the placement may reach
        self.found = 0.0  # the objective of the placement _solve found
        self.parts = [p for p in range(st.np) if run.partition_movable[p]]
        live = [b for b in brokers if st.eligible[b]]
        group = set(live)
        loads = {r: st.load(r) for r in ("replicas", *_LEADS, "disk", "network_in")}
        unit = {r: 1.0 if r in ("replicas", "leaders") else
                max(sum(loads[r][b] for b in brokers) / len(brokers) / _GRAIN, 1e-9) for r in loads}
        now = {r: dict.fromkeys(brokers, 0) for r in loads}  # the plan's, in the model's units
        fixed = {r: dict.fromkeys(brokers, 0) for r in loads}  # partitions that stay as they are
        self.on: dict[int, dict[int, cp_model.IntVar]] = {}
        self.lead: dict[int, dict[int, cp_model.IntVar]] = {}
        terms: dict[tuple[str, int], list[tuple[int, cp_model.IntVar]]] = {}
        cost: list[tuple[int, cp_model.IntVar]] = []
        new: list[cp_model.IntVar] = []
        copied: list[tuple[int, cp_model.IntVar]] = []
        byte = max(st.moved_bytes / _SCALE, 1.0)  # the model's unit of bytes copied
        movable = set(self.parts)
        for p in range(st.np):
            w = self._weights(p, unit)
            reps = st.replicas[p]
            for r, wt in w.items():
                for b in (reps[:1] if r in _LEADS else reps):
                    if b in now[r]:
                        now[r][b] += wt
                        if p not in movable:
                            fixed[r][b] += wt
            if p not in movable:
                continue
            orig = st.original[p]
            # In a rack search a partition may only change brokers within the racks searched:
            # its replicas outside them stay, and the model carries no other broker (one on a
            # broker out of the group, with no variable, must move, as in the whole group's).
            stay = [] if within is None else [b for b in reps if st.rack[b] not in within and b in group]
            on = self.on[p] = {b: m.new_bool_var("") for b in live
                               if within is None or st.rack[b] in within or b in stay}
            for b in stay:
                m.add(on[b] == 1)
            m.add(_LE.sum(list(on.values())) == len(reps))
            limit = rack_limit(run, p)
            racks: dict[int, list[cp_model.IntVar]] = {}
            for b, x in on.items():
                racks.setdefault(st.rack[b], []).append(x)
                m.add_hint(x, b in reps)
                if b not in orig:
                    new.append(x)
                    copied.append((math.ceil(st.size[p] / byte), x))
            for xs in racks.values():
                if len(xs) > limit:
                    m.add(_LE.sum(xs) <= limit)
            may = [b for b in live if not st.demoted[b]] or live
            lead = self.lead[p] = {b: m.new_bool_var("") for b in may if b in on}
            m.add_exactly_one(lead.values())
            for b, x in lead.items():
                m.add_implication(x, on[b])
                m.add_hint(x, b == reps[0])
                if b != orig[0]:
                    cost.append((1, x))
            for b in on:
                for r, wt in w.items():
                    if r not in _LEADS:
                        terms.setdefault((r, b), []).append((wt, on[b]))
                    elif b in lead:
                        terms.setdefault((r, b), []).append((wt, lead[b]))
        self.excess = self._keep_loads(goals, live, unit, now, fixed, terms)
        self.spread = self._keep_topics(live, spread)
        stay_moves = st.moves - sum(len(set(st.replicas[p]) - set(st.original[p])) for p in self.parts)
        if lower:
            # The loads above the bounds first; of placements as low, the fewest moves.
            cap = math.floor(st.moves * _LOWER_MOVES) - stay_moves
            m.add(_LE.sum(new) <= cap)
            # The moves only break ties (save_moves trims them next): once the loads above the
            # bounds are as low as proven possible (no excess left, often), the search may stop.
            self.gap = cap
            # Each load's worst broker weighs _WORST times more: max / mean is the goal's
            # measure; the sum draws the search to every broker above the bound.
            worst: dict[str, tuple[int, cp_model.IntVar]] = {}
            for r, weight, over, _ in self.excess:
                if r not in worst:
                    worst[r] = (weight, m.new_int_var(0, _GRAIN * 100, ""))
                    m.add_hint(worst[r][1], max(start for q, _, _, start in self.excess if q == r))
                m.add(worst[r][1] >= over)
            m.minimize(sum(weight * over for _, weight, over, _ in self.excess)
                       + sum(_WORST * weight * x for weight, x in worst.values()) + _LE.sum(new))
            return
        # No more moves, nor bytes, than the plan (its moves of partitions that stay included);
        # fewer of both as a share of the plan's: moves and bytes weigh alike.
        stay_bytes = st.moved_bytes - sum(st.size[p] * len(set(st.replicas[p]) - set(st.original[p]))
                                          for p in self.parts)
        if spread:
            # The moves and bytes the topic replica goal may spend (its budget above the plan's
            # lower bounds), or the plan's where it spent more (_apply checks the bytes: here
            # each replica's size is rounded up to the model's unit, or the plan's own copies
            # where that rounding puts them above).
            self.most = (st.moves, st.moved_bytes)
            if not run.options.topic_swaps:
                moves_bound, bytes_bound = plan_bounds(run)
                self.most = (max(st.moves, int(_MOVES_CAP * moves_bound)),
                             max(st.moved_bytes, int(_BYTES_CAP * bytes_bound)))
            m.add(_LE.sum(new) <= self.most[0] - stay_moves)
            plan_units = sum(math.ceil(st.size[p] / byte) * len(set(st.replicas[p]) - set(st.original[p]))
                             for p in self.parts)
            m.add(_dot(copied) <= max(math.floor((self.most[1] - stay_bytes) / byte), plan_units))
            m.minimize(sum(self.spread))
            return
        m.add(_LE.sum(new) <= st.moves - stay_moves)
        m.add(_dot(copied) <= math.floor((st.moved_bytes - stay_bytes) / byte + len(copied)))
        per_move = _SCALE // max(1, st.moves)
        m.minimize(per_move * _LE.sum(new) + _dot(copied) + _dot(cost))

    def _weights(self, p: int, unit: dict[str, float]) -> dict[str, int]:
        """What one replica of p weighs per load (a leader's loads: on its leader only)."""
        return {r: round(x / unit[r]) for r, x in _raw_weights(self.run.state, p).items()}

    def _keep_loads(self, goals: Sequence[SoftGoal], live: list[int], unit: dict[str, float],
                    now: dict[str, dict[int, int]], fixed: dict[str, dict[int, int]],
                    terms: dict[tuple[str, int], list[tuple[int, cp_model.IntVar]]],
                    ) -> list[tuple[str, int, cp_model.IntVar, int]]:
        """Each broker's loads no higher than the plan's highest broker, its counts no lower
        than the plan's lowest, within the goal's bounds where the plan left it within them,
        and within its capacity limits (in the model's rounded units, the plan's own loads
        always allowed). For `lower_loads`, on a disk or rate load where the plan left a broker
        above the bound: any broker up to the plan's highest, and each broker's excess above the
        bound, weighed (an earlier goal's twice the next one's)."""
        balance = [g for g in goals if isinstance(g, BalanceGoal)]
        bounds = {g.resource: g.bounds(self.run, 0) for g in balance}
        weight = {g.resource: 2 ** (len(balance) - i) for i, g in enumerate(balance) if not g.integer}
        excess: list[tuple[str, int, cp_model.IntVar, int]] = []
        capacity = next(g for g in HARD_GOALS if isinstance(g, CapacityGoal))
        slot = {"disk": 0, "network_in": 1, "network_out": 2, "replicas": 3}
        for r, plan in now.items():
            lo, hi = bounds.get(r, (-math.inf, math.inf))
            top, bottom = max(plan[b] for b in live), min(plan[b] for b in live)
            hi_u = math.floor(hi / unit[r] + 1e-9) if math.isfinite(hi) else math.inf
            lo_u = math.ceil(lo / unit[r] - 1e-9) if math.isfinite(lo) else -math.inf
            # Rounding each item to the nearest unit errs by half a unit at most: a broker's sum by
            # this much, kept clear of the bounds so the planner's own floats stay within them.
            margin = 0 if r in ("replicas", "leaders") else len(self.parts) // 2 + 1
            # Where the plan left a broker above a disk or rate load's bound, lower_loads lets
            # any broker up to the plan's highest: lower loads elsewhere may need it.
            missed = self.lower and r in weight and top > hi_u - margin
            for b in live:
                total = _dot(terms.get((r, b), [])) + fixed[r][b]
                # No higher than the plan's highest (max / mean), and a broker within the goal's
                # bounds stays within them; a count no lower than the plan's lowest (max - min).
                high = max(min(hi_u - margin, top), plan[b]) if plan[b] <= hi_u and not missed else top
                if r in ("replicas", "leaders"):
                    low = min(max(lo_u + margin, bottom), plan[b]) if plan[b] >= lo_u else bottom
                else:  # max / mean: only the bounds keep a broker up
                    low = min(lo_u + margin, plan[b]) if plan[b] >= lo_u else -math.inf
                if r in slot and math.isfinite(limit := capacity.limits(self.run, b)[slot[r]]):
                    high = min(high, max(math.floor(limit / unit[r]) - margin, plan[b]))
                if math.isfinite(high):
                    self.m.add(total <= int(high))
                if math.isfinite(low):
                    self.m.add(total >= int(low))
                if missed:
                    over = self.m.new_int_var(0, int(top - hi_u + margin), "")
                    self.m.add(over >= total - int(hi_u - margin))
                    start = int(max(0, plan[b] - hi_u + margin))
                    self.m.add_hint(over, start)
                    excess.append((r, weight[r], over, start))
        return excess

    def _keep_topics(self, live: list[int], spread: bool) -> list[cp_model.LinearExprT]:
        """Each topic's replicas, and its leaderships, per broker between the plan's extremes;
        with ``spread``, returns each topic's max - min of replicas per broker where that may
        change (the topic replica goal's measure, summed: what spread_topics lowers)."""
        st = self.run.state
        spreads: list[cp_model.LinearExprT] = []
        for side, var in (("replicas", self.on), ("leaders", self.lead)):
            per: dict[tuple[int, int], list[cp_model.IntVar]] = {}
            fixed: dict[tuple[int, int], int] = {}
            placed: dict[int, int] = {}  # per topic, the replicas the model places
            for p in range(st.np):
                t = st.topic[p]
                if p in var:
                    placed[t] = placed.get(t, 0) + len(st.replicas[p])
                    for b, x in var[p].items():
                        per.setdefault((t, b), []).append(x)
                else:
                    for b in (st.replicas[p][:1] if side == "leaders" else st.replicas[p]):
                        fixed[t, b] = fixed.get((t, b), 0) + 1
            counts = st.topic_leaders if side == "leaders" else st.topic_count
            topics = {t for t, _ in per}
            for t in topics:
                now = [counts.get(t * st.nb + b, 0) for b in live]
                lo, hi = min(now), max(now)
                for b in live:
                    xs = per.get((t, b), [])
                    extra = fixed.get((t, b), 0)
                    if len(xs) + extra > hi:
                        self.m.add(_LE.sum(xs) + extra <= hi)
                    if lo > extra:
                        self.m.add(_LE.sum(xs) + extra >= lo)
                if spread and side == "replicas" and hi > lo:
                    top, bottom = self.m.new_int_var(lo, hi, ""), self.m.new_int_var(lo, hi, "")
                    for b in live:
                        held = _LE.sum(per.get((t, b), [])) + fixed.get((t, b), 0)
                        self.m.add(top >= held)
                        self.m.add(bottom <= held)
                    self.m.add_hint(top, hi)
                    self.m.add_hint(bottom, lo)
                    # A topic whose replicas on live brokers do not divide evenly is at best one
                    # apart: the bound that lets the search stop there.
                    if (placed.get(t, 0) + sum(fixed.get((t, b), 0) for b in live)) % len(live):
                        self.m.add(top - bottom >= 1)
                    spreads.append(top - bottom)
        return spreads

    def chosen(self, solver: cp_model.CpSolver) -> dict[int, tuple[set[int], int]]:
        """Per movable partition, its brokers and its leader in the solution."""
        return {p: ({b for b, x in on.items() if solver.value(x)},
                    next(b for b, x in self.lead[p].items() if solver.value(x)))
                for p, on in self.on.items()}


def _dot(terms: Sequence[tuple[int, cp_model.IntVar]]) -> cp_model.LinearExpr:
    """sum(c * x) built in one call, where Python's sum builds an expression per term: the
    same models, built faster (fuzz_grown.py seed 24, 885 partitions: 5.5 -> 4.8 s)."""
    return _LE.weighted_sum([x for _, x in terms], [c for c, _ in terms])


def _raw_weights(st: WorkingState, p: int) -> dict[str, float]:
    """What one replica of p weighs per load (a leader's loads: on its leader only)."""
    return {"replicas": 1.0, "leaders": 1.0, "disk": st.size[p], "network_in": st.bytes_in[p],
            "network_out": st.leader_out(p), "leader_bytes_in": st.bytes_in[p]}


def _apply(run: Run, goals: Sequence[SoftGoal], chosen: dict[int, tuple[set[int], int]],
           lower: bool = False, most: tuple[int, int] | None = None) -> bool:
    """Make the placement if no goal's measure is worse and it is better (lower: a goal's
    measure is lower; with ``most``, the topic replica goal's, in at most that many moves and
    bytes; else it moves less), in the planner's own float loads (the model's rounding is
    checked, not trusted); else take it back."""
    st = run.state
    before = (st.moves, st.moved_bytes)
    measures = [g.measure(run) for g in goals]
    imbalances = [g.imbalance(run) for g in goals]
    hard = [g.measure(run)["violations"] for g in HARD_GOALS]
    done: list[tuple[str, int, int, int]] = []
    for p, (brokers, leader) in chosen.items():
        reps = st.replicas[p]
        gone = [b for b in reps if b not in brokers]
        came = sorted(b for b in brokers if b not in reps)
        for src, dst in zip(gone, came, strict=True):
            st.move(p, src, dst)
            done.append(("move", p, src, dst))
        if st.replicas[p][0] != leader:
            old = st.replicas[p][0]
            st.make_leader(p, leader)
            done.append(("lead", p, old, leader))
    # Lowering a goal's worst broker may take more brokers past its bounds, where it already
    # missed them on one; a goal within its bounds everywhere stays so.
    kept = all(v <= m[k] + 1e-9 or (lower and k == "brokers_out_of_bounds" and m[k] > 0)
               for g, m in zip(goals, measures, strict=True) for k, v in g.measure(run).items())
    if lower:
        better = any(g.imbalance(run) < i - 1e-9 for g, i in zip(goals, imbalances, strict=True))
    elif most is not None:
        better = (st.moves <= most[0] and st.moved_bytes <= most[1]
                  and any(g.imbalance(run) < i - 1e-9 for g, i in zip(goals, imbalances, strict=True)
                          if g.name == "topic_replica_distribution"))
    else:
        better = (st.moves <= before[0] and st.moved_bytes <= before[1]
                  and (st.moves, st.moved_bytes) != before)
    ok = (better and kept
          and all(g.measure(run)["violations"] <= h for g, h in zip(HARD_GOALS, hard, strict=True)))
    if not ok:
        for kind, p, a, b in reversed(done):
            if kind == "move":
                st.undo_move(p, a, b)
            else:
                st.make_leader(p, a, undo=True)
    return ok
