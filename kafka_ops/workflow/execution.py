"""Steps 4-7 of the runbook: execute (start / step / resume), progress, cancel, the report.

An execution lives in a ``StateStore`` (a directory, or an fsspec URL every worker reaches), so
each of these functions can run in a different process: ``start_execution`` records it (after
re-checking the approved content hash), ``step_execution`` does one poll and returns where it
stands, ``execution_progress`` reads the store only, ``request_cancel`` leaves a request the
next step honours, ``cancel_execution`` finishes a cancel itself when no executor runs, and
``final_report`` reads the outcome. ``run_execution`` is the CLI's blocking loop over the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.errors import ValidationError
from kafka_ops.executor import (
    ExecutionLimits,
    ExecutionOptions,
    ExecutionProgress,
    ExecutionReport,
    ExecutionState,
    Executor,
    StateStore,
)
from kafka_ops.executor.executor import ProgressCallback
from kafka_ops.executor.log_dirs import announce_new_replica_dirs, log_dir_moves
from kafka_ops.executor.strategies import STRATEGIES
from kafka_ops.executor.tasks import TaskState
from kafka_ops.model import TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.workflow.digest import check_unchanged
from kafka_ops.workflow.planning import check_throttle
from kafka_ops.workflow.records import OptionError, Record

#: Kafka's configs are longs: a throttle beyond this cannot be stored by a broker.
MAX_LONG = 2**63 - 1


def open_store(location: str | Path | StateStore, storage_options: Mapping[str, Any] | None = None) -> StateStore:
    """A StateStore for a directory or an fsspec URL (``file://``, ``s3://``...)."""
    if isinstance(location, StateStore):
        return location
    text = str(location)
    if "://" in text:
        from kafka_ops.executor.store import FsspecStateStore

        return FsspecStateStore(text, storage_options)
    return StateStore(text)


@dataclass(frozen=True)
class ExecutionRequest(Record):
    """How to execute: the ``kafka-ops execute`` options, validated on creation."""

    throttle: int | None = None
    max_incoming: int = 2
    max_outgoing: int = 2
    max_in_flight: int = 100
    max_leader_changes: int = 200
    strategy: list[str] = field(default_factory=lambda: ["default"])
    one_replica_at_a_time: bool = False
    on_drift: Literal["skip", "abort"] = "skip"
    allow_under_replicated: bool = False
    elect_leaders: bool = True
    poll_interval: float = 5.0
    stall_timeout: float = 1800.0

    def __post_init__(self) -> None:
        check_throttle(self.throttle)
        if self.throttle is not None and self.throttle > MAX_LONG:
            raise OptionError("throttle", f"must be at most {MAX_LONG} (Kafka's long)")
        for name in ("max_incoming", "max_outgoing", "max_in_flight", "max_leader_changes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise OptionError(name, "must be a positive integer")
        unknown = [s for s in self.strategy if s not in STRATEGIES]
        if unknown or not self.strategy:
            raise OptionError("strategy", f"must name strategies among {', '.join(sorted(STRATEGIES))}")
        if self.on_drift not in ("skip", "abort"):
            raise OptionError("on_drift", f"must be 'skip' or 'abort', not {self.on_drift!r}")
        for name in ("poll_interval", "stall_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise OptionError(name, "must be a positive, finite number of seconds")

    def options(self) -> ExecutionOptions:
        return ExecutionOptions(
            throttle=self.throttle,
            limits=ExecutionLimits(
                incoming_per_broker=self.max_incoming, outgoing_per_broker=self.max_outgoing,
                in_flight=self.max_in_flight, leader_changes=self.max_leader_changes,
            ),
            strategy=tuple(self.strategy),
            one_replica_at_a_time=self.one_replica_at_a_time,
            on_drift=self.on_drift,
            allow_under_replicated=self.allow_under_replicated,
            elect_leaders=self.elect_leaders,
            poll_interval=float(self.poll_interval),
            stall_timeout=float(self.stall_timeout),
        )


@dataclass(frozen=True)
class ExecutionStatus(Record):
    """Where an execution stands; ``ended`` once this run is over (then see ``final_report``)."""

    store: str
    plan_id: str
    status: str  # running, cancelling, paused, completed, cancelled, failed
    ended: bool
    message: str
    progress: dict[str, Any]
    poll_interval: float = 5.0


def progress_dict(p: ExecutionProgress) -> dict[str, Any]:
    """An ExecutionProgress as JSON: counts, bytes, fraction, ETA and the stalled moves."""
    data = asdict(p)
    data.pop("moves")
    data["fraction"] = round(p.fraction, 4)
    data["stalled"] = [str(tp) for tp in p.stalled]
    return data


def _status(executor: Executor, store: StateStore) -> ExecutionStatus:
    state = executor.state if executor.state is not None else executor.current()
    return ExecutionStatus(
        store=store.location,
        plan_id=state.plan_id,
        status=state.status,
        ended=state.runtime.report is not None,
        message=state.message,
        progress=progress_dict(executor.progress()),
        poll_interval=executor.options.poll_interval,
    )


def start_execution(
    backend: ClusterBackend,
    plan: ReassignmentPlan | Mapping[str, Any],
    store: str | Path | StateStore,
    request: ExecutionRequest | Mapping[str, Any] | None = None,
    *,
    base: ReassignmentPlan | Mapping[str, Any] | None = None,
    approved_hash: str | None = None,
    clock: Callable[[], float] = time.time,
) -> ExecutionStatus:
    """Record a new execution of ``plan`` (or resume the unfinished one of the same plan).

    With ``approved_hash`` (``ApprovalDigest.content_hash``) a new execution starts only if
    the plan and its partitions' replicas still hash to it. ``base`` is the rollback plan
    written with the plan: the replicas it was computed against (the drift check).
    """
    plan = plan if isinstance(plan, ReassignmentPlan) else ReassignmentPlan.from_dict(plan)
    plan.validate()
    if base is not None and not isinstance(base, ReassignmentPlan):
        base = ReassignmentPlan.from_dict(base)
    if log_dir_moves(plan):
        _check_log_dirs(backend, plan, base)
    if request is None:
        request = ExecutionRequest()
    elif not isinstance(request, ExecutionRequest):
        request = ExecutionRequest.from_dict(request)
    store = open_store(store)
    previous = store.load()
    resuming = previous is not None and not previous.finished and previous.plan_id == _plan_id(plan)
    if approved_hash is not None and not resuming:
        check_unchanged(approved_hash, plan, backend.describe_partitions(plan.partitions))
    executor = Executor(backend, plan, base=base.replicas if base is not None else None,
                        options=request.options(), store=store, clock=clock)
    with store.lock():
        executor.start()
    return _status(executor, store)


def _check_log_dirs(backend: ClusterBackend, plan: ReassignmentPlan,
                    base: ReassignmentPlan | None = None) -> None:
    """The stateful executor does not record log-dir moves yet, so a plan moving a replica
    between directories of its broker is refused whole (running only its replica part would
    report "completed" with the directory moves never made). Directories named for replicas
    the plan adds are announced first, as Kafka's tool does, so the broker creates them there.
    A replica staying on its broker is judged against ``base`` (the replicas the plan was made
    from) when given: on a resume, replicas the plan added before the pause are on their
    brokers already, and naming their directory is no directory move."""
    now = backend.describe_partitions(plan.partitions)
    moves = log_dir_moves(plan)
    before = base.replicas if base is not None else {
        tp: p.replicas for tp, p in now.partitions.items()}
    staying = sorted(f"{tp} on broker {b}" for tp, b in moves
                     if tp in now.partitions and b in before.get(tp, ()))
    if staying:
        raise ValidationError(
            f"this plan moves {len(staying)} replica(s) between log directories (e.g. "
            f"{staying[0]}); the workflow does not execute directory moves yet: run it with "
            "'kafka-ops execute'")
    if hasattr(backend, "alter_replica_log_dirs"):
        announce_new_replica_dirs(backend, plan)


def step_execution(
    backend: ClusterBackend,
    store: str | Path | StateStore,
    *,
    clock: Callable[[], float] = time.time,
    on_progress: ProgressCallback | None = None,
) -> ExecutionStatus:
    """One poll of the execution recorded in ``store``, from any process."""
    store = open_store(store)
    with store.lock():  # read the state only once no other step can be changing it
        executor = Executor.from_store(backend, store, clock=clock, on_progress=on_progress)
        executor.step()
    return _status(executor, store)


def run_execution(
    backend: ClusterBackend,
    plan: ReassignmentPlan,
    store: str | Path | StateStore | None,
    request: ExecutionRequest,
    *,
    base: Mapping[TopicPartition, tuple[int, ...]] | None = None,
    on_progress: ProgressCallback | None = None,
    on_executor: Callable[[Executor], Any] | None = None,
) -> ExecutionReport:
    """Start or resume, then step until the run ends, in this process (the CLI's execute)."""
    executor = Executor(backend, plan, base=base, options=request.options(),
                        store=open_store(store) if store is not None else None, on_progress=on_progress)
    if on_executor is not None:
        with on_executor(executor):
            return executor.run()
    return executor.run()


def execution_progress(store: str | Path | StateStore) -> ExecutionStatus:
    """Where the recorded execution stands, from the store alone (no cluster access)."""
    store = open_store(store)
    state = _load(store)
    executor = Executor(_NoBackend(), state.plan, store=store)
    executor.state = state
    return _status(executor, store)


@dataclass(frozen=True)
class StepCheck(Record):
    """Whether a step is worth running now (a trigger's cheap poll between steps)."""

    step_due: bool
    reason: str
    in_flight: int
    ended: list[str]  # moves in flight that Kafka no longer lists as reassigning


def step_due(backend: ClusterBackend, store: str | Path | StateStore) -> StepCheck:
    """Whether the next step can do anything: O(moves in flight) reads of the store and the
    cluster, for a trigger polling between steps.

    Due on a cancel request; when a broker alive at the start of the run is gone (the step
    pauses the run); when nothing is in flight (the next moves can start); when a move in
    flight stopped reassigning (it finished or was reverted) and the backend can start the
    next move beside the others. ZooKeeper mode starts a batch only once the previous one is
    gone, so there a step is due only when every move in flight ended: a wake-up sooner
    would start nothing.
    """
    store = open_store(store)
    state = _load(store)
    if state.finished or state.runtime.report is not None:
        return StepCheck(True, f"the execution is {state.status}", 0, [])
    in_flight = [t.tp for t in state.tasks if t.state in (TaskState.IN_PROGRESS, TaskState.ABORTING)]
    ongoing = backend.list_reassignments(in_flight) if in_flight else {}
    ended = sorted(str(tp) for tp in in_flight if tp not in ongoing)
    dead: list[int] = []
    if state.status == "running" and state.runtime.alive_at_start:
        alive = set(backend.describe_partitions([]).alive_broker_ids)  # brokers, no partition
        dead = sorted(state.runtime.alive_at_start - alive)
    if store.cancel_requested():
        reason = "cancel requested"
    elif dead:
        reason = f"broker(s) {', '.join(map(str, dead))} went offline"
    elif not in_flight:
        reason = "nothing in flight"
    elif ended and (backend.supports_incremental_reassignment or len(ended) == len(in_flight)):
        reason = f"{len(ended)} moves ended (e.g. {ended[0]}) of {len(in_flight)} in flight"
    else:
        reason = ""
    return StepCheck(bool(reason), reason, len(in_flight), ended)


def request_cancel(store: str | Path | StateStore) -> None:
    """Ask the execution to cancel: the next step (in whatever process) reverts moves in flight."""
    store = open_store(store)
    state = _load(store)
    if state.finished:
        raise ValidationError(f"no unfinished execution in {store.location}: nothing to cancel")
    store.request_cancel()


@dataclass(frozen=True)
class CancelResult(Record):
    status: str
    by: str  # "executor": the running executor cancelled; "here": this call ran the cancel
    report: dict[str, Any] | None = None  # report_dict() when this call ran it


def cancel_execution(
    store: str | Path | StateStore,
    connect: Callable[[], ClusterBackend] | None,
    *,
    wait: float = 600.0,
    poll: float = 0.2,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> CancelResult:
    """Cancel the recorded execution: through the running executor when one holds the lock
    (waiting up to ``wait`` seconds for it to finish), else here, with a backend from
    ``connect`` (moves in flight reverted, throttles removed, a rollback plan written)."""
    store = open_store(store)
    state = store.load()
    if state is None or state.finished:
        raise ValidationError(f"no unfinished execution in {store.location}: nothing to cancel")
    if store.executor_running():
        store.request_cancel()
        deadline = clock() + wait
        while True:
            state = store.load()
            if state is not None and state.finished:
                return CancelResult(state.status, "executor")
            if clock() >= deadline:
                raise ValidationError(
                    f"the running executor did not finish cancelling within {wait:.0f} s; "
                    f"the request stays in {store.location}"
                )
            sleep(poll)
    if connect is None:
        raise ValidationError("no executor is running: give --zookeeper or --bootstrap-server")
    backend = connect()
    try:
        executor = Executor(backend, state.plan, store=store, options=ExecutionOptions(poll_interval=0.5))
        executor.request_cancel()
        report = executor.run()
    finally:
        backend.close()
    return CancelResult(report.status, "here", report_dict(report))


def report_dict(report: ExecutionReport) -> dict[str, Any]:
    """The final report as people and programs read it (``kafka-ops execute --json``)."""
    return {
        "status": report.status,
        "message": report.message,
        "completed": [str(tp) for tp in report.completed],
        "reverted": [str(tp) for tp in report.aborted],
        "failed": {str(tp): e for tp, e in report.dead.items()},
        "not_started": [str(tp) for tp in report.pending],
        "skipped": {str(s.tp): s.reason for s in report.skipped},
        "leaders_misplaced": (
            {str(tp): {"preferred": w, "leader": lead} for tp, (w, lead) in report.leaders.misplaced.items()}
            if report.leaders else None
        ),
        "rollback": str(report.rollback_path) if report.rollback_path else None,
        "elapsed_seconds": round(report.elapsed, 3),
    }


@dataclass(frozen=True)
class FinalReport(Record):
    report: dict[str, Any]  # report_dict()
    rollback_plan: dict[str, Any]  # Kafka JSON back to the base, for every partition that moved
    state: dict[str, Any]  # state_dict()


def final_report(store: str | Path | StateStore) -> FinalReport:
    """The outcome of the run that ended, with its rollback plan."""
    store = open_store(store)
    state = _load(store)
    if state.runtime.report is None:
        raise ValidationError(f"the execution in {store.location} is still {state.status}: no report yet")
    report = ExecutionReport.from_dict(state.runtime.report)
    return FinalReport(report_dict(report), report.rollback.to_dict(), state_dict(state))


def state_dict(state: ExecutionState) -> dict[str, Any]:
    """What ``kafka-ops status --json`` prints: status, task counts, moves in flight, throttles."""
    counts = {s.value: 0 for s in TaskState}
    for t in state.tasks:
        counts[t.state.value] += 1
    in_flight = [t for t in state.tasks if t.state in (TaskState.IN_PROGRESS, TaskState.ABORTING)]
    return {
        "status": state.status,
        "message": state.message,
        "plan_id": state.plan_id,
        "tasks": counts,
        "skipped": len(state.skipped),
        "in_flight": {str(t.tp): {"step": t.step + 1, "steps": len(t.steps), "replicas": list(t.step_target)}
                      for t in in_flight},
        "throttled_topics": sorted(state.throttles.topics),
        "throttled_brokers": sorted(state.throttles.brokers),
        "updated_at": state.updated_at,
    }


def _load(store: StateStore) -> ExecutionState:
    state = store.load()
    if state is None:
        raise ValidationError(f"no execution recorded in {store.location}")
    return state


def _plan_id(plan: ReassignmentPlan) -> str:
    from kafka_ops.executor.state import plan_id

    return plan_id(plan)


class _NoBackend:
    """Stands in where a status is computed from the store alone: any cluster call is a bug."""

    supports_incremental_reassignment = True

    def __getattr__(self, name: str) -> Any:
        raise ValidationError(f"reading the execution's progress must not call the cluster ({name})")
