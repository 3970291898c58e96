"""The outcome of an execution run: per-partition results, leaders, rollback, and its JSON.

The report is stored in the execution state when a run ends, so whoever asks later (the CLI,
an Airflow task on another worker) reads the same report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_ops.executor import state as st
from kafka_ops.executor.leaders import LeaderReport
from kafka_ops.executor.log_dirs import dir_report, dir_rollback
from kafka_ops.executor.tasks import TaskState
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan


@dataclass
class ExecutionReport:
    status: str  # completed, cancelled, paused, failed
    message: str
    completed: list[TopicPartition]
    aborted: list[TopicPartition]
    dead: dict[TopicPartition, str]
    pending: list[TopicPartition]
    skipped: list[st.SkippedPartition]
    leaders: LeaderReport | None
    rollback: ReassignmentPlan  # back to the base replicas, for every partition that moved
    rollback_path: str | Path | None
    elapsed: float
    log_dirs: dict[str, Any] | None = None  # log_dirs.dir_report() when the plan has log_dirs

    def to_dict(self) -> dict[str, Any]:
        tps = lambda items: [[tp.topic, tp.partition] for tp in items]  # noqa: E731
        return {
            "status": self.status,
            "message": self.message,
            "completed": tps(self.completed),
            "aborted": tps(self.aborted),
            "dead": [[tp.topic, tp.partition, e] for tp, e in self.dead.items()],
            "pending": tps(self.pending),
            "skipped": [[s.tp.topic, s.tp.partition, s.reason] for s in self.skipped],
            "leaders": None if self.leaders is None else {
                "elected": tps(self.leaders.elected),
                "errors": [[tp.topic, tp.partition, e] for tp, e in self.leaders.errors.items()],
                "misplaced": [[tp.topic, tp.partition, w, lead]
                              for tp, (w, lead) in self.leaders.misplaced.items()],
            },
            "rollback": self.rollback.to_dict(),
            "rollback_path": None if self.rollback_path is None else str(self.rollback_path),
            "elapsed": self.elapsed,
            "log_dirs": self.log_dirs,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExecutionReport:
        tps = lambda items: [TopicPartition(t, p) for t, p in items]  # noqa: E731
        leaders = d["leaders"]
        return cls(
            status=d["status"],
            message=d["message"],
            completed=tps(d["completed"]),
            aborted=tps(d["aborted"]),
            dead={TopicPartition(t, p): e for t, p, e in d["dead"]},
            pending=tps(d["pending"]),
            skipped=[st.SkippedPartition(TopicPartition(t, p), r) for t, p, r in d["skipped"]],
            leaders=None if leaders is None else LeaderReport(
                tps(leaders["elected"]),
                {TopicPartition(t, p): e for t, p, e in leaders["errors"]},
                {TopicPartition(t, p): (w, lead) for t, p, w, lead in leaders["misplaced"]},
            ),
            rollback=ReassignmentPlan.from_dict(d["rollback"]),
            rollback_path=d["rollback_path"],
            elapsed=d["elapsed"],
            log_dirs=d.get("log_dirs"),
        )


def build_report(
    state: st.ExecutionState, cluster: ClusterModel, leaders: LeaderReport | None, elapsed: float
) -> ExecutionReport:
    """The report of a run that ended; ``rollback_path`` is for the caller to fill in."""
    # Only partitions this execution moved: a skipped (drifted) one was changed by someone
    # else, and rolling it back would undo their change.
    ours = {t.tp for t in state.tasks}
    moved = {
        tp: base for tp, base in state.base.items()
        if tp in ours and tp in cluster.partitions and cluster.partitions[tp].replicas != base
    }
    rollback = ReassignmentPlan.from_assignment(moved)
    if state.dir_moves:  # replicas moved between directories go back to theirs too
        now = {tp: moved.get(tp, p.replicas) for tp, p in cluster.partitions.items()}
        back = dir_rollback(state.dir_moves, now)
        rollback = ReassignmentPlan({**rollback.replicas, **{tp: now[tp] for tp in back}}, back)
    by_state = lambda s: [t.tp for t in state.tasks if t.state is s]  # noqa: E731
    return ExecutionReport(
        status=state.status,
        message=state.message,
        completed=by_state(TaskState.COMPLETED),
        aborted=by_state(TaskState.ABORTED),
        dead={t.tp: t.error or "failed" for t in state.tasks if t.state is TaskState.DEAD},
        pending=by_state(TaskState.PENDING),
        skipped=list(state.skipped),
        leaders=leaders,
        rollback=rollback,
        rollback_path=None,
        elapsed=elapsed,
        log_dirs=dir_report(state.dir_moves) if state.dir_moves else None,
    )
