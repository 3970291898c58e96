"""The goal optimizer: hard goals first, then soft goals in priority order, each vetoing the rest.

Cruise Control's GoalOptimizer without its threads, caches and I/O: one pure function from a
working state to a plan. A goal may only take actions that every goal before it accepts (and
every hard goal, always); after all goals ran, a last pass (savings.py) trades copied
replicas back home for smaller ones where every goal allows, and the plan is the diff between
the original and the final assignment.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_ops.errors import ValidationError
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner.context import PlannerOptions, Run
from kafka_ops.planner.exact import solve_hard_goals
from kafka_ops.planner.goals import HARD_GOALS, SoftGoal, soft_goals
from kafka_ops.planner.hard import CapacityGoal, HardGoal, rack_limit, why_no_broker
from kafka_ops.planner.move_exact import lower_loads, save_moves, spread_topics
from kafka_ops.planner.packing import pack_exactly
from kafka_ops.planner.packing_cp import pack_cp
from kafka_ops.planner.pool_pack import pack_leaving
from kafka_ops.planner.savings import save_bytes
from kafka_ops.planner.state import WorkingState
from kafka_ops.planner.summary import GoalResult, PlanSummary, summarize
from kafka_ops.planner.topic import TopicGoal

_CAPACITY = next(g for g in HARD_GOALS if isinstance(g, CapacityGoal))


@dataclass(frozen=True)
class PlanResult:
    """The reassignment to run and what it achieves."""

    plan: ReassignmentPlan
    summary: PlanSummary


def check_hard_goals(run: Run, goals: Iterable[HardGoal] = HARD_GOALS) -> None:
    """Raise for the first hard goal with a violation the plan should have fixed."""
    for goal in goals:
        problems = goal.violations(run)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ValidationError(f"hard goal {goal.name} cannot be satisfied: {problems[0]}{more}")


def check_room(run: Run, fixing: Iterable[HardGoal]) -> None:
    """Fail before planning when a hard goal is impossible, naming the partition and the gap.

    A partition whose replica must leave a broker (dead, excluded, outside its pool) needs as
    many live brokers in its pool as it has replicas; with fewer, no plan exists. A partition
    needs as many brokers whose disk and network limits can hold one of its replicas.
    """
    names = {g.name for g in fixing}
    if run.leadership_only:
        return
    capacity = next((g for g in fixing if isinstance(g, CapacityGoal)), None)
    pools = "pool_membership" in names
    if names & {"broker_exclusions", "pool_membership"}:
        _check_live_brokers(run, pools)
    if capacity is not None:
        problem = capacity.unplaceable(run, rack_rule="rack_awareness" in names)
        if problem:
            raise ValidationError(problem)


def _check_live_brokers(run: Run, pools: bool) -> None:
    """The pool-size half of check_room (first: the more basic gap)."""
    st = run.state
    if all(st.eligible) and (not pools or (len(st.groups) == 1 and len(st.in_group[0]) == st.nb)):
        return  # no replica must leave its broker (PoolMembershipGoal._suspects' test)
    live = [sum(1 for b in g.brokers if st.eligible[b]) for g in st.groups]
    for p in range(st.np):
        if not run.partition_movable[p]:
            continue
        g = st.group_of(p)
        reps = st.replicas[p]
        leaving = [b for b in reps if not st.eligible[b] or (pools and b not in st.in_group[g])]
        if leaving and len(reps) > live[g]:
            group = st.groups[g]
            down = [st.broker_ids[b] for b in group.brokers if not st.eligible[b]]
            raise ValidationError(
                f"{'pool_membership' if pools and all(st.eligible[b] for b in leaving) else 'broker_exclusions'}: "
                f"{st.tps[p]} has {len(reps)} replicas and its replica on broker "
                f"{st.broker_ids[leaving[0]]} must move, but {group.name!r} has only {live[g]} "
                f"live brokers to hold them (dead or excluded: {down or 'none'})"
            )


def _exact_repair(run: Run, fixing: list[HardGoal], greedy: ValidationError) -> None:
    """The replicas that must leave packed largest first (pool_pack.py), then the greedy goals;
    else exact placement, then the greedy capacity goal; brokers it leaves over a disk or network
    limit are kept empty in the next try, every broker with such a limit in the last. Then,
    on starts small enough, bin packing solved exactly (packing.py), and on larger ones by
    CP-SAT within a budget (packing_cp.py)."""
    capacity = next(g for g in HARD_GOALS if isinstance(g, CapacityGoal))
    st = run.state
    if pack_leaving(run, capacity, [capacity.limits(run, b) for b in range(st.nb)]):
        try:
            for goal in fixing:
                goal.optimize(run)
            check_hard_goals(run, fixing)
            return
        except ValidationError:
            pass
    avoid: frozenset[int] = frozenset()
    limited = frozenset(b for b in range(st.nb) if any(
        lim != float("inf") for lim in capacity.limits(run, b)[:3]))
    for attempt in range(4):
        try:
            solve_hard_goals(run, avoid)
        except ValidationError:
            if attempt == 0:
                raise  # exact: the replica limit, racks and pools leave no placement
            break
        capacity.optimize(run)
        try:
            check_hard_goals(run, fixing)
            return
        except ValidationError:
            over = frozenset(b for b in range(st.nb) if capacity.over(run, b))
            avoid = avoid | over if not over <= avoid else limited
    packed = pack_exactly(run, capacity)
    if packed is None:
        try:
            packed = pack_cp(run, capacity)
        except ValidationError as proof:  # the greedy error names the broker, the proof adds why
            raise ValidationError(f"{greedy}; {proof}") from None
    if packed:
        try:
            check_hard_goals(run, fixing)
            return
        except ValidationError:
            pass
    if packed is None:
        tight = capacity.tightest_fill(run)
        raise ValidationError(f"{greedy} (no placement found: the greedy repair is stuck and the start is "
                              f"too large to try every assignment or search to the end, so one may still exist"
                              f"{'' if tight is None else f': {tight}'}; room on more brokers or higher "
                              f"limits gives the plan a way out)") from None
    raise greedy from None


def _kept_rules(run: Run, fixing: list[HardGoal], start: dict[str, set[str]]) -> bool:
    """Whether the rules a repair mode does not fix are broken nowhere the start kept them:
    a partition crowding a rack or outside its pool at the start may stay so, no more (a dead
    replica outside the pool drained into it changes the violation's text, not its truth:
    pooled fix-offline seed 51 of the fuzz); every other violation was there at the start."""
    st = run.state
    for g in HARD_GOALS:
        if g not in fixing and g.name not in ("rack_awareness", "pool_membership"):
            if not set(g.violations(run)) <= start[g.name]:
                return False
    for p in range(st.np):
        old, new = st.original[p], st.replicas[p]
        if list(old) == new:
            continue
        pool = st.in_group[st.group_of(p)]
        if not {b for b in new if b not in pool} <= {b for b in old if b not in pool}:
            return False
        crowding = max(Counter(st.rack[b] for b in new).values())
        if crowding > max(rack_limit(run, p), max(Counter(st.rack[b] for b in old).values())):
            return False
    return True


def _drain_exactly(run: Run, fixing: list[HardGoal], greedy: ValidationError,
                   leave: Callable[[int, int], bool]) -> str:
    """A repair mode's replicas that must leave, packed largest first against the loads they
    leave (pool_pack.py), else exactly (only they move), else by CP-SAT (packing_cp.py: room
    made by other moves where they alone do not fit); taken when it breaks no rule the start
    kept (the other hard goals only veto there), else the greedy error stands, followed by
    CP-SAT's proof when it has one. How they were placed, for the summary. The greedy drain
    refused 6 of 1,800 tiny starts that the exact packing fits: largest first onto the roomiest
    broker filled the one broker a later replica needed."""
    capacity = next(g for g in HARD_GOALS if isinstance(g, CapacityGoal))
    run.state.reset()
    start = {g.name: set(g.violations(run)) for g in HARD_GOALS if g not in fixing}
    st = run.state
    if pack_leaving(run, capacity, [capacity.limits(run, b) for b in range(st.nb)], leave) and _placed(
            run, fixing, start, leave):
        how, chains = "largest first onto the brokers with the most room", "ejection chains"
    else:
        st.reset()
        packed = pack_exactly(run, capacity, leave=leave)
        if not packed:
            try:
                packed = pack_cp(run, capacity, leave=leave)
            except ValidationError as proof:
                raise ValidationError(f"{greedy}; {proof}") from None
        if packed is None:
            raise ValidationError(f"{greedy} (no placement found: the greedy drain is stuck, and CP-SAT "
                                  f"neither placed the replicas nor proved that they cannot fit, so one may "
                                  f"still exist; room on more brokers or higher limits gives the plan a way "
                                  f"out)") from None
        if not (packed and _placed(run, fixing, start, leave)):
            raise greedy from None
        how, chains = "by an exhaustive search", "CP-SAT, with the fewest moves it found"
    room = sum(1 for p in range(st.np) if set(st.replicas[p]) != set(st.original[p])
               and not any(leave(p, b) for b in st.original[p]))
    if room:
        run.warnings.append(f"{room} partition(s) with no replica to move moved too, to make room for "
                            f"those that must (placed by {chains})")
    return how


def _placed(run: Run, fixing: list[HardGoal], start: dict[str, set[str]],
            leave: Callable[[int, int], bool]) -> bool:
    """Whether a drain's placement repairs what it must and breaks nothing the start kept."""
    try:
        check_hard_goals(run, fixing)
        _check_dead_left(run, leave)
    except ValidationError:
        return False
    return _kept_rules(run, fixing, start)


def _check_dead_left(run: Run, leave: Callable[[int, int], bool]) -> None:
    """Raise for a replica on a dead (or removed) broker that a repair mode must move, or that
    a partition the plan changes keeps: a migrating partition's dead replica is no goal's
    violation (migrate-pool fixes only the pools), but Kafka completes a reassignment only once
    every target replica is in sync."""
    st = run.state
    down = {b for b in range(st.nb) if not st.eligible[b]}
    if not down:
        return
    for p, reps in enumerate(st.replicas):
        if run.partition_movable[p] and not down.isdisjoint(reps):
            changed = tuple(reps) != st.original[p]  # a new order is a reassignment too
            for b in reps:
                if b in down and (changed or leave(p, b)):
                    raise ValidationError(
                        f"broker_exclusions: no broker can take the replica of {st.tps[p]} on broker "
                        f"{st.broker_ids[b]}, which must leave it{why_no_broker(run, p, b, retarget=True)}")


def _named(st: WorkingState, parts: list[int]) -> str:
    """"N partition(s)" with the first five named, for a warning."""
    names = ", ".join(str(st.tps[p]) for p in parts[:5])
    more = f" and {len(parts) - 5} more" if len(parts) > 5 else ""
    return f"{len(parts)} partition(s) ({names}{more})"


def _check_offline_targets(st: WorkingState, mode: str) -> None:
    """Raise for a partition the plan changes (a new order included) that keeps a replica on a
    dead or excluded broker: Kafka completes a reassignment only once every target replica is
    in sync, and the executor refuses such a plan whole. Every mode leaves those partitions
    alone or moves the replica too; this is the plan's last line, named for what it protects."""
    down = {b for b in range(st.nb) if not st.eligible[b]}
    for p, reps in enumerate(st.replicas):
        if not down.isdisjoint(reps) and tuple(reps) != st.original[p]:
            for b in reps:
                if b in down:
                    raise ValidationError(
                        f"{mode}: the plan would change {st.tps[p]} and keep its replica on broker "
                        f"{st.broker_ids[b]}, which is {'excluded' if st.excluded[b] else 'dead'}: "
                        f"its reassignment could never complete (no plan was made)")


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Python's young-generation collection every 700 net allocations, relaxed while planning:
    the goals allocate and drop millions of small tuples and lists (candidate keys, heaps), and
    on 1.3 million replicas the collector's passes over them took 1.8 CPU s."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 100_000), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def optimize(
    state: WorkingState,
    options: PlannerOptions,
    mode: str,
    movable: Callable[[int], bool] | None = None,
    destinations: Iterable[int] | None = None,
    prepare: Callable[[Run], None] | None = None,
    soft: bool = True,
    fix: tuple[str, ...] | None = None,
    leadership_only: bool = False,
    leave: Callable[[int, int], bool] | None = None,
) -> PlanResult:
    """Run the goals on the state (which it changes) and return the plan and its summary.

    ``movable`` limits which partitions may change, ``destinations`` which brokers may receive
    replicas or leadership; ``prepare`` makes the mode's own changes (replication factor,
    demotion, replacement) under the hard goals' vetoes before the goals run. With
    ``soft=False`` only the hard goals run. ``fix`` names the hard goals whose existing
    violations the plan must repair (default: all); the others only veto, so a repair plan never
    makes them worse but is not blamed for what it was not asked to fix. ``leadership_only``
    forbids replica moves altogether (demotion). ``leave(p, b)``: the replicas a repair mode
    must move (on a drained broker, outside the pool); where the greedy repair is stuck, only
    they are placed again, exactly.
    """
    with _fewer_collections():
        return _optimize(state, options, mode, movable, destinations, prepare, soft, fix,
                         leadership_only, leave)


def _restore_reorders(run: Run) -> bool:
    """Honour max_leader_changes for partitions that moves left on their own brokers in a new
    order: a replica moved away and others moved back (three moves of one goal can turn
    [0, 1] into [1, 0]) is a pure reorder, a leader change the plan's moves never counted.
    Follower-only reorders change nothing and go back always; leader reorders beyond the cap
    go back to the original order (those whose original leader may not lead stay). True if
    any leadership went back."""
    st = run.state
    reordered = [p for p in range(st.np)
                 if st.replicas[p] != st.original[p] and sorted(st.replicas[p]) == sorted(st.original[p])]
    led = []
    for p in reordered:
        if st.replicas[p][0] == st.original[p][0]:
            st.replicas[p][:] = st.original[p]
        else:
            led.append(p)
    cap = run.options.max_leader_changes
    if cap is None or len(led) <= cap:
        return False
    may_lead = [p for p in led if st.eligible[st.original[p][0]] and not st.demoted[st.original[p][0]]]
    keep = len(led) - len(may_lead)
    for p in may_lead[max(0, cap - keep):]:
        st.make_leader(p, st.original[p][0])
        st.replicas[p][:] = st.original[p]
    return True


def _optimize(state: WorkingState, options: PlannerOptions, mode: str,
              movable: Callable[[int], bool] | None, destinations: Iterable[int] | None,
              prepare: Callable[[Run], None] | None, soft: bool, fix: tuple[str, ...] | None,
              leadership_only: bool, leave: Callable[[int, int], bool] | None) -> PlanResult:
    goals: list[SoftGoal] = soft_goals(options.goals) if soft else []
    started = time.perf_counter()
    run = Run(state, options, movable, destinations, leadership_only)
    fixing = [g for g in HARD_GOALS if fix is None or g.name in fix]
    before = {g.name: g.measure(run) for g in (*HARD_GOALS, *goals)}
    run.bounds.clear()  # soft bounds settle after the hard goals drained what must go
    run.vetoes = list(HARD_GOALS)
    warned = len(run.warnings)
    if leave is not None and not run.leadership_only:
        names = {g.name for g in fixing}
        if "capacity" not in names and (short := _CAPACITY.drain_short(run, leave, "pool_membership" in names)):
            raise ValidationError(short)
    if prepare is not None:
        prepare(run)
    check_room(run, fixing)
    try:
        for hard_goal in fixing:
            hard_goal.optimize(run)
        check_hard_goals(run, fixing)
        if leave is not None:
            _check_dead_left(run, leave)
    except ValidationError as greedy:
        if leave is not None:
            # Repair modes move only what they were asked to: no global re-placement, but the
            # replicas that must leave may be packed exactly (the mode's own placement undone).
            if prepare is not None:
                del run.warnings[warned:]  # the mode's placement is undone
            how = _drain_exactly(run, fixing, greedy, leave)
            if prepare is not None:
                rest = ("every other replica left where it was" if len(run.warnings) == warned
                        else "other replicas moved to make room (below)")
                run.warnings.insert(warned, f"the {mode} placement and the greedy repair left a replica "
                                            f"without room: the replicas that must move were placed again, "
                                            f"{how}, {rest}")
        elif prepare is not None or fix is not None:
            raise  # the mode made its own changes (replacement, demotion): nothing to redo
        else:
            # The greedy repair found no way out; an exact placement either finds one or
            # proves (and says) that none exists. Disk and network capacity stay greedy, then
            # exhaustive on small starts: if they still fail, the greedy error names the
            # partition and the rules better.
            _exact_repair(run, fixing, greedy)
        o = run.options
        if ((o.max_moves is not None and state.moves > o.max_moves)
                or (o.max_bytes is not None and state.moved_bytes > o.max_bytes)):
            raise greedy from None  # the caps leave too little room: the greedy error says where
    seconds = {"hard goals": time.perf_counter() - started}
    worse: list[str] = []
    starts: dict[str, float] = {}
    for goal in goals:
        t0 = time.perf_counter()
        starts[goal.name] = goal.imbalance(run)
        goal.optimize(run)
        seconds[goal.name] = time.perf_counter() - t0
        if goal.imbalance(run) > starts[goal.name] + 1e-9:
            worse.append(goal.name)
        run.vetoes.append(goal)
    if goals:
        t0 = time.perf_counter()
        save_bytes(run)
        seconds["byte savings"] = time.perf_counter() - t0
        plain = mode == "rebalance" and movable is None and destinations is None and prepare is None
        if plain and leave is None:
            replaced = False
            for name, exact in (("load lowering", lower_loads), ("move savings", save_moves),
                                ("topic spread", spread_topics)):
                t0 = time.perf_counter()
                if exact(run, goals):
                    seconds[name] = time.perf_counter() - t0
                    replaced = True
            leaders = next((g for g in goals if isinstance(g, TopicGoal) and g.leaders), None)
            if replaced and leaders is not None:  # leadership was chosen over the replicas before
                t0 = time.perf_counter()
                leaders.spread_leaders_exactly(run)
                seconds["topic leaders again"] = time.perf_counter() - t0
    if _restore_reorders(run):
        worse.extend(g.name for g in goals
                     if g.name not in worse and g.imbalance(run) > starts[g.name] + 1e-9)
    check_hard_goals(run, fixing)
    results = [
        GoalResult(g.name, g.hard, before[g.name], g.measure(run), g.name in worse,
                   g.held_to(run) if isinstance(g, TopicGoal) else {})
        for g in (*HARD_GOALS, *goals)
    ]
    if state.offline:
        run.warnings.insert(0, f"{_named(state, state.offline)} offline (no replica on a live broker) "
                               f"left as they are: no reassignment can copy their data; start one of "
                               f"their brokers, or elect an unclean leader, then plan again")
    if state.in_flight:
        run.warnings.insert(0, f"{_named(state, state.in_flight)} with a reassignment in flight "
                               f"left as they are (planned from their target replicas)")
    _check_offline_targets(state, mode)
    plan = ReassignmentPlan.from_assignment(state.changed())
    summary = summarize(mode, state, plan, results, run.capped, run.warnings)
    summary.goal_seconds.update({k: round(v, 3) for k, v in seconds.items()})
    return PlanResult(plan, summary)
