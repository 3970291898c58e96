"""Planning modes: what an operator asks for, turned into one optimizer run.

Balancing modes (rebalance, add-brokers) run every goal. Repair modes (remove-brokers, demote,
replace, fix-offline, set-rf, migrate-pool) run only the hard goals: they move what the request
requires and nothing more, placing each moved replica on the least loaded broker allowed; a
rebalance afterwards evens out the rest.

Pool migration has ONE placement, ``kafka_ops.pools.migrate_to_pool`` (the ``kafka-ops pools
migrate`` command): migrate-pool applies it as its ``prepare`` step, under the hard goals'
vetoes and the move caps, and the optimizer then checks pool membership and writes the summary.
Both entry points thus give the same plan for the same pool; the planner adds what only it
knows (in-flight partitions, capacity limits, caps, unpooled topics on pooled brokers: those the
pool_membership goal relocates as in any repair, with a warning in the summary). The placement
stayed in pools.py rather than the other way round because its results (minimal moves, rack
spread by pool load, evened leaders) are pinned exactly by tests/unit/test_pools.py, and
because pools.py must not import the planner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.planner.context import PlannerOptions, Run
from kafka_ops.planner.demotion import hand_off_leadership, may_lead
from kafka_ops.planner.goals import HARD_GOALS
from kafka_ops.planner.hard import CapacityGoal, RackAwarenessGoal, relocate, why_no_broker
from kafka_ops.planner.optimizer import PlanResult, check_room, optimize
from kafka_ops.planner.replication import change_replication_factor
from kafka_ops.planner.state import WorkingState
from kafka_ops.pools import PoolSet, migrate_to_pool

DEFAULT_OPTIONS = PlannerOptions()
_DRAIN = ("broker_exclusions",)  # repair modes fix only this; other hard goals veto
_RACKS = next(g for g in HARD_GOALS if isinstance(g, RackAwarenessGoal))
_CAPACITY = next(g for g in HARD_GOALS if isinstance(g, CapacityGoal))


def _check_room(st: WorkingState, what: str) -> None:
    """Fail early, and clearly, when a pool keeps fewer live brokers than a topic has replicas."""
    for g, group in enumerate(st.groups):
        live = sum(1 for b in group.brokers if st.eligible[b])
        rf = max((len(st.replicas[p]) for p in range(st.np) if st.group_of(p) == g), default=0)
        if rf > live:
            raise ValidationError(
                f"{what}: {group.name!r} would keep {live} live brokers, fewer than the "
                f"replication factor {rf} of its topics"
            )


def _drained(st: WorkingState) -> Callable[[int, int], bool]:
    """The replicas a drain must move: those on dead or excluded brokers."""
    return lambda p, b: not st.eligible[b]


def _refuse_in_flight(st: WorkingState, what: str, involved: Callable[[int], bool], how: str) -> None:
    """Refuse a request that partitions in flight stand in the way of (planned from their
    target replicas, they may not change): a broker left holding a replica, or a topic left
    half at its old replication factor, is not what was asked for. Where they are not involved,
    they are left as they are, with a warning."""
    flying = [str(st.tps[p]) for p in st.in_flight if involved(p)]
    if flying:
        more = f" and {len(flying) - 5} more" if len(flying) > 5 else ""
        raise ValidationError(
            f"{what}: {len(flying)} partition(s) with a reassignment in flight {how} "
            f"({', '.join(flying[:5])}{more}): wait for it to finish or cancel it, then plan again")


def _brokers(cluster: ClusterModel, brokers: Sequence[int], what: str) -> list[int]:
    if not brokers:
        raise ValidationError(f"{what}: name at least one broker")
    for b in brokers:
        cluster.broker(b)  # unknown broker -> ValidationError
    return sorted(set(brokers))


def _topic_filter(st: WorkingState, topics: Sequence[str] | None, pool: str | None,
                  pools: PoolSet | None):
    """Which partitions a rebalance may touch: listed topics, one pool, or everything."""
    if topics:
        missing = [t for t in topics if t not in st.topic_id]
        if missing:
            raise ValidationError(f"unknown topic {missing[0]!r}")
    wanted = {st.topic_id[t] for t in topics} if topics else None
    group = None
    if pool is not None:
        if pools is None:
            raise ValidationError("--pool needs a pools file (--pools)")
        pools.pool(pool)
        group = next(i for i, g in enumerate(st.groups) if g.name == pool)
    if wanted is None and group is None:
        return None
    return lambda p: ((wanted is None or st.topic[p] in wanted)
                      and (group is None or st.group_of(p) == group))


def plan_rebalance(cluster: ClusterModel, pools: PoolSet | None = None,
                   options: PlannerOptions = DEFAULT_OPTIONS, topics: Sequence[str] | None = None,
                   pool: str | None = None) -> PlanResult:
    """Full rebalance, or only the listed topics, or only one pool's topics."""
    st = WorkingState(cluster, pools)
    return optimize(st, options, "rebalance", movable=_topic_filter(st, topics, pool, pools))


def plan_add_brokers(cluster: ClusterModel, brokers: Sequence[int], pools: PoolSet | None = None,
                     options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Balance load onto the new brokers only: no replica or leader moves between old brokers.

    The start's breaks of the hard goals (racks crowded by hand, brokers over a limit, dead
    brokers' replicas, replicas outside their pool) are repaired onto the new brokers. Where
    the new brokers alone cannot repair them all, the plan still balances onto them, as the
    repair modes do: it repairs the crowded racks and over-limit brokers the new brokers can
    relieve, leaves the rest no worse, and says so first among its warnings, with the reason.
    It leaves as they are the partitions with a replica on a dead broker (fix-offline's: a
    reassignment completes only once every replica is in sync) and those with one outside
    their pool (migrate-pool's: the balance goals work pool by pool). An operator adds brokers
    to use them; the refusal left 43 of 93 grown clusters with new brokers without a plan, and
    the scheduled rebalance picks this mode whenever it sees an empty broker.
    """
    new = _brokers(cluster, brokers, "add-brokers")
    down = [b for b in new if not cluster.brokers[b].alive]
    if down:
        raise ValidationError(f"add-brokers: broker {down[0]} is not alive")
    st = WorkingState(cluster, pools)
    broken = any(goal.violations(Run(st, options)) for goal in HARD_GOALS)
    try:
        return optimize(st, options, "add-brokers", destinations=[st.index[b] for b in new])
    except ValidationError as e:
        if not broken:
            raise
        why = str(e).removesuffix("; a rebalance may use every broker")
    st = WorkingState(cluster, pools)

    def dead(p: int) -> bool:
        return not all(st.alive[b] for b in st.replicas[p])

    def outside(p: int) -> bool:
        return not all(b in st.in_group[st.group_of(p)] for b in st.replicas[p])

    def repair(run: Run) -> None:
        """What the new brokers can repair, as the hard goals would (their vetoes keep the rest
        no worse): replicas out of crowded racks, then load off brokers over a limit."""
        _RACKS.spread_what_it_can(run)
        _CAPACITY.optimize(run)

    result = optimize(st, options, "add-brokers", movable=lambda p: not dead(p) and not outside(p),
                      destinations=[st.index[b] for b in new], prepare=repair, fix=())
    kept = (sum(1 for p in range(st.np) if dead(p) and p not in st.offline),
            sum(1 for p in range(st.np) if outside(p) and not dead(p)))
    left = "".join(f"; {n} partition(s) with a replica {where} are left to {mode}" for n, where, mode in (
        (kept[0], "on a dead broker", "fix-offline"), (kept[1], "outside its pool", "migrate-pool")) if n)
    fixed = ", ".join(f"{g.name} {g.before['violations']:g} -> {g.after['violations']:g}"
                      for g in result.summary.goals if g.name in ("rack_awareness", "capacity")
                      and g.after["violations"] < g.before["violations"])
    result.summary.warnings.insert(0, f"the new brokers alone cannot repair what the start breaks ({why}): "
                                      f"this plan repairs what they can{f' ({fixed} violations)' if fixed else ''}, "
                                      f"leaves the rest no worse and balances onto them{left}; a rebalance "
                                      f"may use every broker")
    return result


def plan_remove_brokers(cluster: ClusterModel, brokers: Sequence[int], pools: PoolSet | None = None,
                        options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Drain the brokers (decommission): every replica leaves, nothing new arrives."""
    gone = _brokers(cluster, brokers, "remove-brokers")
    st = WorkingState(cluster, pools, excluded=gone)
    _check_room(st, "remove-brokers")
    _refuse_in_flight(st, "remove-brokers", lambda p: any(st.excluded[b] for b in st.replicas[p]),
                      "keep a replica on the brokers to remove")
    return optimize(st, options, "remove-brokers", soft=False, fix=_DRAIN, leave=_drained(st))


def plan_demote(cluster: ClusterModel, brokers: Sequence[int], pools: PoolSet | None = None,
                options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Move preferred leadership off the brokers; their replicas stay where they are.

    Only the partitions the demoted brokers lead may change: a partition led by a dead broker
    elsewhere is fix-offline's, and its leader having nowhere to go must not refuse this plan.
    Nor may a partition with a replica on a dead broker: a new replica order is a reassignment,
    which Kafka completes only once every replica is in sync. Those keep their leader, with a
    warning to run fix-offline first.
    """
    demoted = _brokers(cluster, brokers, "demote")
    st = WorkingState(cluster, pools, demoted=demoted)

    def led(p: int) -> bool:
        return st.demoted[st.replicas[p][0]]

    def whole(p: int) -> bool:
        return all(st.eligible[b] for b in st.replicas[p])

    _refuse_in_flight(st, "demote", led, "keep their preferred leader on the brokers to demote")

    def hand_off(run: Run) -> None:
        """Warn about partitions that cannot lose leadership without moving data, or without
        a dead broker back; hand off the others' leadership."""
        stuck = [st.tps[p] for p in range(st.np) if run.partition_movable[p]
                 and not any(may_lead(run, b) for b in st.replicas[p])]
        _warn(run, stuck, "every live replica is on a demoted broker, so leadership cannot move "
                          "without moving data (use remove-brokers or replace-broker)")
        _warn(run, [st.tps[p] for p in range(st.np) if led(p) and not whole(p)],
              "a replica on a dead broker would keep their reassignment from completing "
              "(run fix-offline first)")
        hand_off_leadership(run)

    return optimize(st, options, "demote", movable=lambda p: led(p) and whole(p),
                    prepare=hand_off, soft=False, fix=_DRAIN, leadership_only=True)


def _warn(run: Run, stuck: list[TopicPartition], why: str) -> None:
    """Warn that the partitions keep a demoted leader, and why (ten named)."""
    if stuck:
        names = ", ".join(str(tp) for tp in stuck[:10])
        more = f" and {len(stuck) - 10} more" if len(stuck) > 10 else ""
        run.warnings.append(f"{len(stuck)} partition(s) keep a demoted leader: {why}: {names}{more}")


def plan_fix_offline(cluster: ClusterModel, pools: PoolSet | None = None,
                     options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Re-create the replicas of dead brokers on live ones (offline/under-replicated repair)."""
    st = WorkingState(cluster, pools)
    _check_room(st, "fix-offline")
    return optimize(st, options, "fix-offline", soft=False, fix=_DRAIN, leave=_drained(st))


def plan_replace_broker(cluster: ClusterModel, old: int, new: int, pools: PoolSet | None = None,
                        options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Every replica of ``old`` moves to ``new``, keeping its place in the replica list.

    Only those partitions change. One that also has a replica on another dead broker moves it
    too, wherever the hard goals allow (``new`` already holds one of its replicas): Kafka
    completes a reassignment only once every target replica is in sync. Other dead brokers'
    partitions are fix-offline's, and offline partitions (no live replica to copy from) stay.
    """
    _brokers(cluster, [old, new], "replace-broker")
    if old == new:
        raise ValidationError("replace-broker: the old and new broker are the same")
    st = WorkingState(cluster, pools, excluded=[old])
    src, dst = st.index[old], st.index[new]
    offline = set(st.offline)

    def replace(run: Run) -> None:
        for p in range(st.np):
            if src in st.replicas[p] and p not in offline and not run.try_move(p, src, dst):
                raise ValidationError(
                    f"replace-broker: the replica of {st.tps[p]} cannot move from broker {old} "
                    f"to {new}{why_no_broker(run, p, src, only=dst)}"
                )

    return optimize(st, options, "replace-broker", movable=lambda p: src in st.replicas[p],
                    prepare=replace, soft=False, fix=_DRAIN)


def plan_migrate_pool(cluster: ClusterModel, pools: PoolSet, topics: Sequence[str] | None = None,
                      options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Move topics (all pooled topics, or the listed ones) onto their pool's brokers.

    One placement for both entry points: the replicas are placed by
    :func:`kafka_ops.pools.migrate_to_pool` (what ``kafka-ops pools migrate`` plans: minimal
    moves, rack-aware by pool load, leaders evened out), pool by pool, as this mode's
    ``prepare`` step. Each partition's placement is applied under the hard goals' vetoes and
    the move caps; the pool_membership goal then only checks, except for what the placement
    does not cover: a partition whose placement a veto refused (a disk or network limit, say:
    the placement counts replicas, not bytes) and unpooled topics on pooled brokers, which it
    relocates as in any repair. The summary warns when that happened. A partition that
    migrates leaves its dead brokers too (the placement replaces those replicas; where it was
    refused, they are relocated here, or by the repair of a stuck drain): its reassignment
    could not complete with them.
    """
    st = WorkingState(cluster, pools)
    movable = _topic_filter(st, topics, None, pools)
    membership = tuple(g for g in HARD_GOALS if g.name == "pool_membership")
    exclusions = next(g for g in HARD_GOALS if g.name == "broker_exclusions")

    def outside(p: int, b: int) -> bool:
        return b not in st.in_group[st.group_of(p)]

    def leave(p: int, b: int) -> bool:
        """Outside the pool, or dead in a partition that migrates."""
        return outside(p, b) or (not st.eligible[b] and any(outside(p, x) for x in st.original[p]))

    def place(run: Run) -> None:
        check_room(run, membership)  # the planner's own words for an impossible request
        refused = _apply_pool_placement(run, cluster, pools, list(topics) if topics else None)
        if refused:
            names = ", ".join(str(tp) for tp in refused[:10])
            more = f" and {len(refused) - 10} more" if len(refused) > 10 else ""
            run.warnings.append(
                f"{len(refused)} partition(s) placed by the pool_membership goal instead of the "
                f"pool placement, which a hard goal or a move cap refused: {names}{more}")
        position = {tp: p for p, tp in enumerate(st.tps)} if refused else {}
        for tp in refused:
            p = position[tp]
            for b in list(st.replicas[p]):
                if not st.eligible[b] and leave(p, b):
                    relocate(run, exclusions, p, b, required=False)  # else the drain's repair

    return optimize(st, options, "migrate-pool", movable=movable, prepare=place, soft=False,
                    fix=("pool_membership",), leave=leave)


def _apply_pool_placement(run: Run, cluster: ClusterModel, pools: PoolSet,
                          topics: Sequence[str] | None) -> list[TopicPartition]:
    """Put pools.migrate_to_pool's target replicas into the run's state, partition by partition.

    Pools are placed one after the other, each on the cluster as the previous ones left it
    (pools have no broker in common, but a pool's brokers may lose replicas of other pools'
    topics). Partitions with a reassignment in flight are planned from their target replicas
    and left alone. A partition whose moves or leader change a veto or cap refuses is put back
    as it was and returned.
    """
    st = run.state
    view = cluster
    if st.in_flight:  # plan from the replicas in-flight partitions will keep, as the state does
        view = cluster.with_assignment({st.tps[p]: [st.broker_ids[b] for b in st.replicas[p]]
                                        for p in st.in_flight}, move_leaders=False)
    position = {tp: p for p, tp in enumerate(st.tps)}
    refused: list[TopicPartition] = []
    for name in sorted(pools.pools):
        pool = pools.pools[name]
        wanted = None if topics is None else [t for t in topics if pools.pool_for_topic(t) is pool]
        if wanted == []:
            continue
        targets = migrate_to_pool(view, pools, name, wanted).replicas
        for tp, target in targets.items():
            p = position[tp]
            if run.partition_movable[p] and not _place(run, p, [st.index[b] for b in target]):
                refused.append(tp)
        view = view.with_assignment(targets)
    return refused


def _place(run: Run, p: int, target: list[int]) -> bool:
    """Give p the target replica list (broker indexes) under the vetoes and caps, or change nothing.

    Each leaving replica is paired with an arriving one on its own rack where there is one
    (those moves first), so no move crowds a rack on the way to a placement that does not; the
    rest pair up in list order. Then the target's leader takes the lead.
    """
    st = run.state
    leaving = [b for b in st.replicas[p] if b not in target]
    arriving = [b for b in target if b not in st.replicas[p]]
    pairs: list[tuple[int, int]] = []
    for src in list(leaving):
        dst = next((b for b in arriving if st.rack[b] == st.rack[src]), None)
        if dst is not None:
            pairs.append((src, dst))
            leaving.remove(src)
            arriving.remove(dst)
    pairs.extend(zip(leaving, arriving, strict=True))  # the same replication factor
    done: list[tuple[int, int]] = []
    for src, dst in pairs:
        if not run.try_move(p, src, dst):
            break
        done.append((src, dst))
    old_leader = st.replicas[p][0]
    if len(done) == len(pairs) and (old_leader == target[0] or run.try_lead(p, target[0])):
        st.replicas[p][:] = target  # the followers' order: same set and leader, so same loads
        return True
    for src, dst in reversed(done):
        st.undo_move(p, src, dst)
    return False


def plan_set_replication_factor(cluster: ClusterModel, topics: Sequence[str], replication_factor: int,
                                pools: PoolSet | None = None,
                                options: PlannerOptions = DEFAULT_OPTIONS) -> PlanResult:
    """Change the topics' replication factor; new replicas go inside the topic's pool.

    The topics' replicas on dead brokers are replaced on live ones too, so every partition of
    the topics ends with ``replication_factor`` replicas that can be in sync. An offline
    partition (no live replica to copy from) refuses the plan if its factor would change;
    at the factor already, it stays as it is, with a warning.
    """
    if not topics:
        raise ValidationError("set-rf: name at least one topic")
    if replication_factor < 1:
        raise ValidationError(f"set-rf: replication factor must be at least 1, got {replication_factor}")
    st = WorkingState(cluster, pools)
    movable = _topic_filter(st, topics, None, pools)
    for t in topics:
        group = st.groups[st.group_of_topic[st.topic_id[t]]]
        live = sum(1 for b in group.brokers if st.eligible[b])
        if replication_factor > live:
            raise ValidationError(
                f"set-rf: topic {t!r} cannot have {replication_factor} replicas: "
                f"{group.name!r} has {live} live brokers"
            )

    _refuse_in_flight(st, "set-rf", movable, "belong to the topics")
    offline = [st.tps[p] for p in st.offline if movable(p) and len(st.replicas[p]) != replication_factor]
    if offline:
        names = ", ".join(str(tp) for tp in offline[:5])
        more = f" and {len(offline) - 5} more" if len(offline) > 5 else ""
        raise ValidationError(f"set-rf: {len(offline)} partition(s) of the topics are offline (no replica on "
                              f"a live broker), so no new replica could copy their data: {names}{more}; "
                              f"start one of their brokers first")

    def change(run: Run) -> None:
        change_replication_factor(run, [p for p in range(st.np) if run.partition_movable[p]], replication_factor)

    return optimize(st, options, "set-rf", movable=movable, prepare=change, soft=False,
                    fix=("rack_awareness",))
