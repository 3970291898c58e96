"""How far an execution is: what progress bars, logs and the workflow's status show.

Computed from the execution state (and, when given, the partitions in flight) only, so a
status can be read from the store without touching the cluster.
"""

from __future__ import annotations

from kafka_ops.executor import state as st
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.executor.verify import ExecutionProgress, estimate_eta, move_progress, task_done_weight, task_weight
from kafka_ops.model import ClusterModel, TopicPartition


def last_progress(rt: st.Runtime, task: ExecutionTask, isr: tuple[int, ...], now: float) -> float:
    """When the move, or any move into a broker it waits for, last made progress.

    With only ISR changes to see, a big move looks idle until it finishes; counting progress
    of its destination brokers keeps busy-but-healthy moves from being called stalled.
    """
    waiting = [b for b in task.incoming if b not in isr]
    return max([rt.last_change[task.tp][1] if task.tp in rt.last_change else now]
               + [rt.broker_progress.get(b, 0.0) for b in waiting])


def execution_progress(
    state: st.ExecutionState,
    cluster: ClusterModel | None,
    now: float,
    in_flight: list[ExecutionTask],
    phase: str | None,
    stall_timeout: float,
) -> ExecutionProgress:
    """Counts, bytes done, ETA and the moves in flight (with ISR detail when ``cluster`` is
    given), from the state alone."""
    rt = state.runtime
    counts = {s: 0 for s in TaskState}
    for t in state.tasks:
        counts[t.state] += 1
    total = sum(task_weight(t) for t in state.tasks)
    done = (
        sum(task_done_weight(t, cluster) for t in state.tasks) if cluster is not None
        else sum(task_weight(t) for t in state.tasks if t.state is TaskState.COMPLETED)
    )
    elapsed = now - rt.run_started
    moves = [
        move_progress(t, cluster, now, last_progress(rt, t, _isr(cluster, t.tp), now),
                      stall_timeout)
        for t in in_flight if cluster is not None and t.state is TaskState.IN_PROGRESS
    ]
    if phase is None and rt.report is not None:
        phase = "done"
    return ExecutionProgress(
        phase=phase or {st.CANCELLING: "cancelling", st.PAUSED: "draining"}.get(state.status, "moving"),
        total=len(state.tasks),
        completed=counts[TaskState.COMPLETED],
        in_flight=counts[TaskState.IN_PROGRESS] + counts[TaskState.ABORTING],
        pending=counts[TaskState.PENDING],
        aborted=counts[TaskState.ABORTED],
        dead=counts[TaskState.DEAD],
        skipped=len(state.skipped),
        weight_total=total,
        weight_done=done,
        elapsed=elapsed,
        eta_seconds=estimate_eta(done - rt.weight_at_start, total - done, elapsed),
        moves=moves,
    )


def _isr(cluster: ClusterModel | None, tp: TopicPartition) -> tuple[int, ...]:
    partition = cluster.partitions.get(tp) if cluster is not None else None
    return partition.isr if partition is not None else ()
