"""Moves between log directories of a broker (AlterReplicaLogDirs), and mixed plans in Kafka's
order: ReassignPartitionsCommand submits the inter-broker reassignment, then the log-dir moves,
retrying those whose replica the broker does not host yet.

A log-dir move is done when the broker lists no future replica for the partition and its
current replica is in the target directory (DescribeLogDirs). The copy is throttled per broker
by ``replica.alter.log.dirs.io.max.bytes.per.second`` (set for the brokers involved, deleted at
the end, also after a failure or a cancel, so no throttle is left behind).

Resumable without a state file: the cluster itself holds the progress (future replicas keep
copying if this process dies). Running the same plan again skips replicas already in their
target directory and resubmits the rest (a request naming the directory a future replica
already copies into is a no-op for Kafka). Cancelling moves each in-flight replica "back" to
its current directory, which is how Kafka drops a future replica.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.backends.base import ConfigResource
from kafka_ops.errors import BackendError, KafkaOpsError, ValidationError
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ANY_LOG_DIR, ReassignmentPlan
from kafka_ops.throttle import LOG_DIRS_RATE

log = logging.getLogger(__name__)

Replica = tuple[TopicPartition, int]
#: The broker does not host the replica yet (an inter-broker move is still creating it).
_RETRY = {"NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollowerError", "REPLICA_NOT_AVAILABLE",
          "ReplicaNotAvailableError"}


@dataclass
class LogDirReport:
    moved: list[Replica] = field(default_factory=list)
    already: list[Replica] = field(default_factory=list)
    cancelled: list[Replica] = field(default_factory=list)
    failed: dict[Replica, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and not self.cancelled


def log_dir_moves(plan: ReassignmentPlan) -> dict[Replica, str]:
    """Every replica the plan names a directory for ("any" asks for none)."""
    moves = {}
    for tp, dirs in plan.log_dirs.items():
        for b, d in zip(plan.replicas[tp], dirs, strict=True):
            if d != ANY_LOG_DIR:
                moves[tp, b] = d
    return moves


def inter_broker_part(plan: ReassignmentPlan, cluster: ClusterModel) -> ReassignmentPlan:
    """The partitions whose replica list the plan changes (log_dirs left out)."""
    return ReassignmentPlan({tp: r for tp, r in plan.replicas.items()
                             if tp not in cluster.partitions
                             or cluster.partitions[tp].target_replicas != r})


class LogDirMover:
    """Submits, throttles and verifies the log-dir moves of a plan on one backend."""

    def __init__(self, backend: Any, moves: Mapping[Replica, str], *,
                 throttle_bytes_per_sec: int | None = None, timeout_s: float = 3600.0,
                 poll_interval: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 on_progress: Callable[[int, int], None] | None = None) -> None:
        if throttle_bytes_per_sec is not None and throttle_bytes_per_sec <= 0:
            raise ValidationError(f"log-dir throttle must be positive, got {throttle_bytes_per_sec}")
        self.backend = backend
        self.moves = dict(moves)
        self.throttle = throttle_bytes_per_sec
        self.timeout_s = timeout_s
        self.poll_interval = poll_interval
        self.clock = clock
        self.sleep = sleep
        self.on_progress = on_progress
        self._cancel = threading.Event()

    def request_cancel(self) -> None:
        self._cancel.set()

    def run(self) -> LogDirReport:
        report = LogDirReport()
        start = self.clock()
        brokers = sorted({b for _, b in self.moves})
        pending = dict(self.moves)
        described = self.backend.describe_log_dirs(brokers) if brokers else {}
        for key, target in list(pending.items()):
            tp, b = key
            known = described.get(b)
            if known is not None and known.replicas.get(tp) == target and tp not in known.futures:
                report.already.append(key)
                del pending[key]
            elif known is not None and target not in {d.path for d in known.dirs}:
                report.failed[key] = f"broker {b} has no log directory {target!r}"
                del pending[key]
        if not pending:
            report.seconds = self.clock() - start
            return report
        involved = sorted({b for _, b in pending})
        try:
            if self.throttle is not None:
                for b in involved:
                    self.backend.alter_configs(ConfigResource.broker(b), {LOG_DIRS_RATE: str(self.throttle)})
            self._drive(pending, report, start)
        finally:
            if self.throttle is not None:
                for b in involved:
                    self.backend.alter_configs(ConfigResource.broker(b), delete_configs=[LOG_DIRS_RATE])
        report.seconds = self.clock() - start
        return report

    def _drive(self, pending: dict[Replica, str], report: LogDirReport, start: float) -> None:
        unsent = dict(pending)
        total = len(pending)
        while pending:
            if unsent:
                answers = self.backend.alter_replica_log_dirs(unsent)
                for key, error in answers.items():
                    if error is None:
                        unsent.pop(key, None)
                    elif error not in _RETRY:
                        report.failed[key] = error
                        pending.pop(key, None)
                        unsent.pop(key, None)
            described = self.backend.describe_log_dirs(sorted({b for _, b in pending}))
            for key, target in list(pending.items()):
                tp, b = key
                d = described.get(b)
                if d is not None and key not in unsent and d.replicas.get(tp) == target \
                        and tp not in d.futures:
                    report.moved.append(key)
                    del pending[key]
            if self.on_progress is not None:
                self.on_progress(total - len(pending), total)
            if not pending:
                return
            if self._cancel.is_set():
                self._cancel_moves(pending, described, report)
                return
            if self.clock() - start > self.timeout_s:
                raise KafkaOpsError(f"log-dir moves not done after {self.timeout_s:g}s: "
                                    f"{len(pending)} left, e.g. {_name(next(iter(pending)))}; "
                                    "rerun the same plan to resume, or cancel")
            self.sleep(self.poll_interval)

    def _cancel_moves(self, pending: dict[Replica, str], described: Mapping[int, Any],
                      report: LogDirReport) -> None:
        back = {}
        for (tp, b) in pending:
            current = described[b].replicas.get(tp) if b in described else None
            if current is not None:
                back[tp, b] = current
        answers = self.backend.alter_replica_log_dirs(back) if back else {}
        bad = {k: e for k, e in answers.items() if e is not None}
        if bad:
            raise BackendError(f"cancelling log-dir moves failed: {_name(next(iter(bad)))}: "
                               f"{next(iter(bad.values()))}")
        report.cancelled.extend(pending)
        pending.clear()


def _name(key: Replica) -> str:
    return f"{key[0]} on broker {key[1]}"


def execute_mixed(backend: Any, plan: ReassignmentPlan, run_inter_broker: Callable[[ReassignmentPlan], Any],
                  **mover_options: Any) -> tuple[Any, LogDirReport]:
    """Kafka's order: the inter-broker part first (``run_inter_broker``, e.g. an Executor's
    run), then the log-dir moves (replicas the reassignment created included)."""
    cluster = announce_new_replica_dirs(backend, plan)
    inter = inter_broker_part(plan, cluster)
    inter_report = run_inter_broker(inter) if len(inter) else None
    return inter_report, LogDirMover(backend, log_dir_moves(plan), **mover_options).run()


def announce_new_replica_dirs(backend: Any, plan: ReassignmentPlan) -> ClusterModel:
    """Name the directory of each replica the reassignment will create before creating it:
    the broker remembers it (answering NOT_LEADER_OR_FOLLOWER) and creates the replica there,
    so it is not copied twice. Returns the plan's partitions as they are now."""
    cluster = backend.describe_partitions(plan.partitions)
    new = {(tp, b): d for (tp, b), d in log_dir_moves(plan).items()
           if tp in cluster.partitions and b not in cluster.partitions[tp].replicas}
    if new:
        backend.alter_replica_log_dirs(new)
    return cluster
