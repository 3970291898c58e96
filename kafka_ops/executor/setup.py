"""Starting and resuming an execution: the tasks of a plan, the refusals, the reconciliation.

Pure functions of the plan, the options and what the cluster shows; the executor makes the
backend calls. Why each refusal exists:
- another reassignment running: ours would mix with it (and ZooKeeper mode cannot run two);
- an offline target broker: the move could never complete;
- under-replicated partitions: moving data on an unhealthy cluster risks offline partitions;
- drift: a plan applied to replicas it was not computed for can undo someone else's fix.
Partitions already at their targets become completed tasks at once and are never touched.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kafka_ops.backends.base import OngoingReassignment
from kafka_ops.errors import (
    BrokerNotAvailableError,
    ClusterStateError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.executor import state as st
from kafka_ops.executor.options import ExecutionOptions, options_dict
from kafka_ops.executor.strategies import order_tasks
from kafka_ops.executor.tasks import ExecutionTask, TaskState, one_replica_at_a_time_steps
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import ThrottleConfig


def new_execution(
    plan: ReassignmentPlan,
    base: Mapping[TopicPartition, tuple[int, ...]] | None,
    options: ExecutionOptions,
    cluster: ClusterModel,
    now: float,
) -> st.ExecutionState:
    """The execution of ``plan`` on ``cluster`` as it is: one task per partition to move."""
    plan.validate_against(cluster)
    bases = dict(base) if base is not None else {}
    tasks: list[ExecutionTask] = []
    skipped: list[st.SkippedPartition] = []
    for tp, target in plan.replicas.items():
        partition = cluster.partitions[tp]
        expected = bases.setdefault(tp, partition.replicas)
        if partition.replicas == target:
            # Already there (a rerun, or a plan that asks for nothing): never touched.
            tasks.append(ExecutionTask(tp, target, target, size_bytes=partition.size_bytes,
                                       state=TaskState.COMPLETED, started_at=now, finished_at=now))
            continue
        if partition.replicas != expected:
            skipped.append(st.SkippedPartition(tp, drift_reason(expected, partition.replicas)))
            continue
        tasks.append(ExecutionTask(
            tp, partition.replicas, target, size_bytes=partition.size_bytes,
            under_replicated=partition.is_under_replicated,
            steps=_steps(partition.replicas, target, options),
        ))
    if skipped and options.on_drift == "abort":
        raise ValidationError(
            f"{len(skipped)} partitions changed since the plan was computed "
            f"({skipped[0].tp}: {skipped[0].reason}); plan again, or skip them (--on-drift skip)"
        )
    return st.ExecutionState(
        plan=plan,
        base={tp: bases[tp] for tp in plan.replicas},
        tasks=order_tasks(tasks, options.strategy),
        options=options_dict(options),
        started_at=now,
        updated_at=now,
        skipped=skipped,
    )


def check_can_start(
    cluster: ClusterModel,
    ongoing: Collection[TopicPartition],
    tasks: Iterable[ExecutionTask],
    options: ExecutionOptions,
) -> None:
    """Refuse to start moves while another reassignment runs, onto offline brokers, or on an
    under-replicated cluster (unless allowed)."""
    if ongoing:
        raise ReassignmentInProgressError(
            f"Cannot execute because there is an existing partition reassignment "
            f"({len(ongoing)} partitions, e.g. {examples(ongoing)}); wait for it or cancel it"
        )
    offline = sorted({b for t in tasks if not t.done for b in t.target if not alive(cluster, b)})
    if offline:
        raise BrokerNotAvailableError(
            f"broker(s) {ids(offline)} of the plan are offline: moves onto them cannot complete"
        )
    urp = [p.tp for p in cluster if p.is_under_replicated]
    if urp and not options.allow_under_replicated:
        raise ClusterStateError(
            f"{len(urp)} partitions are under-replicated (e.g. {examples(urp)}); fix the "
            f"cluster first or allow it explicitly (--allow-under-replicated)"
        )


def reconcile(
    state: st.ExecutionState,
    cluster: ClusterModel,
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    now: float,
) -> dict[TopicPartition, None]:
    """Bring a persisted execution in line with the cluster after its process stopped.

    Returns the cancels to send again (a cancel recorded may not have been sent).
    """
    ours = {t.tp for t in state.tasks if t.state in (TaskState.IN_PROGRESS, TaskState.ABORTING)}
    foreign = [tp for tp in ongoing if tp not in ours]
    if foreign:
        raise ReassignmentInProgressError(
            f"Cannot resume because another partition reassignment is running "
            f"({len(foreign)} partitions, e.g. {examples(foreign)})"
        )
    rt = state.runtime
    # The recorded throttles may or may not be on the cluster: mark every value unknown so
    # the first sync sets what is wanted and deletes the rest.
    rt.applied = ThrottleConfig(
        {t: {k: "" for k in c} for t, c in state.throttles.topics.items()},
        {b: {k: "" for k in c} for b, c in state.throttles.brokers.items()},
    )
    rt.applied_known = True
    rt.in_step = False
    rt.cancel_failures = 0
    for task in state.tasks:
        if task.state is not TaskState.IN_PROGRESS:
            continue
        current = cluster.partitions[task.tp].replicas
        if task.tp in ongoing:
            state.submitted.add(task.tp)
        elif current == task.step_target:
            state.submitted.add(task.tp)  # finished while we were away: observed next poll
        elif in_flight_toward(current, task.step_source, task.step_target):
            # Ours, in flight when the replicas were read and finished by the time the
            # reassignments were listed (a loaded machine: the fault test's SIGKILL resume).
            state.submitted.add(task.tp)
        elif current == task.step_source:
            state.submitted.discard(task.tp)  # never reached the cluster: send it again
        else:
            task.transition(TaskState.DEAD, now)
            task.error = "replicas changed outside kafka-ops: " + drift_reason(task.step_source, current)
    return {t.tp: None for t in state.tasks if t.state is TaskState.ABORTING and t.tp in ongoing}


def restart_run(state: st.ExecutionState, cluster: ClusterModel, options: ExecutionOptions) -> None:
    """A new run of an unfinished execution: a pause ends (the moves it cancelled start afresh
    from where their partitions are), and every broker still to receive data must be back."""
    rt = state.runtime
    if state.status == st.PAUSED:
        state.tasks = [
            ExecutionTask(t.tp, cluster.partitions[t.tp].replicas, t.target, size_bytes=t.size_bytes,
                          under_replicated=t.under_replicated,
                          steps=_steps(cluster.partitions[t.tp].replicas, t.target, options))
            if t.state is TaskState.ABORTED else t
            for t in state.tasks
        ]
    if state.status != st.CANCELLING:
        remaining = {b for t in state.tasks if not t.done for b in t.target}
        offline = sorted(b for b in remaining if not alive(cluster, b))
        if offline:
            raise BrokerNotAvailableError(
                f"broker(s) {ids(offline)} are still offline: start them before resuming"
            )
        state.status = st.RUNNING
    rt.paused_at = None
    rt.dead_brokers = set()
    state.message = ""


def _steps(source: tuple[int, ...], target: tuple[int, ...], options: ExecutionOptions) -> list[tuple[int, ...]]:
    steps = one_replica_at_a_time_steps(source, target) if options.one_replica_at_a_time else [target]
    return steps or [target]


def alive(cluster: ClusterModel, broker_id: int) -> bool:
    """ZooKeeper forgets a dead broker that holds no replica: unknown counts as offline."""
    broker = cluster.brokers.get(broker_id)
    return broker is not None and broker.alive


def in_flight_toward(current: tuple[int, ...], source: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Kafka's replica list while a reassignment from source to target runs: the target, then
    the source replicas that are leaving (ZooKeeper mode's TRS ++ ORS, KRaft's target +
    removing)."""
    n = len(target)
    return len(current) > n and tuple(current[:n]) == tuple(target) and set(current[n:]) <= set(source)


def drift_reason(expected: tuple[int, ...], current: tuple[int, ...]) -> str:
    return f"replicas are {list(current)}, the plan expected {list(expected)}"


def examples(tps: Iterable[TopicPartition]) -> str:
    items = sorted(tps)
    return ", ".join(str(tp) for tp in items[:3]) + (", ..." if len(items) > 3 else "")


def ids(values: Iterable[int]) -> str:
    return ",".join(map(str, values))
