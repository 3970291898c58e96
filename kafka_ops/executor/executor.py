"""The executor: runs a reassignment plan against a ClusterBackend, safely, resumably.

``start()`` records a new execution (or reconciles an unfinished one with the cluster);
``step()`` is one poll and ``run()`` a loop over ``step()`` (``poll_interval`` apart, on an
injected clock and sleep so tests and benchmarks run on emulated time). A step does, in order:
read the partitions in flight (``describe_partitions``: a poll costs O(moves in flight), not
O(cluster)) and their reassignments; advance each move (step done, move done, cancel
confirmed, or failed — Kafka's three verify outcomes); react to a cancel request (in this
process or through the store) or a dead broker; start what the limits allow; set throttles for
exactly the moves in flight; persist; submit; persist again. Persisting happens before anything
is sent, so a killed process resumes from a state that names every move it may have started
and every throttle it may have set; everything else the loop remembers travels in the state
(``Runtime``), so each step may run in another process (``Executor.from_store``).

Plans with ``log_dirs`` (JBOD): the directories of replicas to be created are named at the
start, and once no inter-broker move is left each step runs the log-dir phase instead
(executor/log_dirs.py: AlterReplicaLogDirs, its throttle, verified by DescribeLogDirs), all
recorded in the same state, so cancel, pause and resume cover it.

Idempotent: partitions already at their targets are recorded as completed at the start and
never touched, so rerunning a finished plan sets no throttle and submits nothing.

The refusals at the start and the reconciliation on resume are in setup.py. During the run:
- drift: a pending move whose partition changed is skipped (or aborts the run), never applied;
- a broker dying mid-run: stop starting moves, cancel those that cannot finish, let the others
  drain, so every partition keeps its full replica set; the run pauses and resumes later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext

from kafka_ops.backends.base import ClusterBackend, OngoingReassignment
from kafka_ops.errors import (
    KafkaOpsError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.executor import log_dirs as dirs
from kafka_ops.executor import state as st
from kafka_ops.executor.index import TaskIndex
from kafka_ops.executor.leaders import LeaderReport, elect_preferred_leaders
from kafka_ops.executor.options import ExecutionOptions, options_from_dict
from kafka_ops.executor.progress import execution_progress, last_progress
from kafka_ops.executor.report import ExecutionReport, build_report
from kafka_ops.executor.scheduler import select_moves
from kafka_ops.executor.setup import (
    check_can_start,
    drift_reason,
    examples,
    ids,
    new_execution,
    reconcile,
    restart_run,
)
from kafka_ops.executor.store import StateStore
from kafka_ops.executor.tasks import ExecutionTask, TaskState
from kafka_ops.executor.verify import (
    ExecutionProgress,
    task_done_weight,
)
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import (
    ThrottleChanges,
    ThrottleConfig,
    apply_throttle_changes,
    calculate_move,
    calculate_throttle_changes,
    calculate_throttles,
)

log = logging.getLogger(__name__)

ProgressCallback = Callable[[ExecutionProgress], None]


class Executor:
    """Runs one plan: ``run()`` to the end, or ``start()`` then ``step()`` per poll.

    ``run()`` starts the plan, or resumes the unfinished execution of the same plan recorded in
    ``store``. ``Executor.from_store(backend, store).step()`` continues an execution another
    process started: the plan and options come from the store.
    """

    def __init__(
        self,
        backend: ClusterBackend,
        plan: ReassignmentPlan,
        *,
        base: Mapping[TopicPartition, tuple[int, ...]] | None = None,
        options: ExecutionOptions | None = None,
        store: StateStore | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.backend = backend
        self.plan = plan
        self.base = dict(base) if base is not None else None
        self.options = options or ExecutionOptions()
        self.store = store
        self.clock = clock
        self.sleep = sleep
        self.on_progress = on_progress
        self.state: st.ExecutionState | None = None
        self._cancel = threading.Event()
        self._dirty = False  # the runtime changed since the last save
        self._index: TaskIndex | None = None

    @classmethod
    def from_store(
        cls,
        backend: ClusterBackend,
        store: StateStore,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        on_progress: ProgressCallback | None = None,
    ) -> Executor:
        """An executor for the execution recorded in ``store`` (its plan and options)."""
        state = store.load()
        if state is None:
            raise ValidationError(f"no execution recorded in {store.location}")
        executor = cls(backend, state.plan, options=options_from_dict(state.options), store=store,
                       clock=clock, sleep=sleep, on_progress=on_progress)
        executor.state = state
        return executor

    # -- public -----------------------------------------------------------------------------
    def request_cancel(self) -> None:
        """Ask the running loop to cancel in-flight moves (Kafka's semantics) and stop."""
        self._cancel.set()

    def run(self) -> ExecutionReport:
        """Start (or resume) and poll until the execution ends; the final report."""
        with self.store.lock() if self.store is not None else nullcontext():
            self.start()
            while not self.step():
                self.sleep(self.options.poll_interval)
        return self.report()

    def start(self) -> st.ExecutionState:
        """Record a new execution, or reconcile the unfinished one of this plan in the store."""
        cluster = self.backend.describe_cluster()
        previous = self.store.load() if self.store else None
        if previous is not None and not previous.finished:
            if previous.plan_id != st.plan_id(self.plan):
                raise ValidationError(
                    f"an unfinished execution of another plan ({previous.status}) is recorded in "
                    f"{self.store.location}: resume it with its own plan, or run 'kafka-ops cancel'"  # type: ignore[union-attr]
                )
            state = previous
            self._resume(state, cluster, restart=True)
        else:
            state = self._start(cluster)
        rt = state.runtime
        rt.alive_at_start = set(cluster.alive_broker_ids)
        rt.run_started = self.clock()
        rt.weight_at_start = sum(task_done_weight(t, cluster) for t in state.tasks)
        rt.report = None
        self.state = state
        self._save(state)
        return state

    def step(self) -> bool:
        """One poll: observe, decide, persist, send, persist. True once this run has ended
        (completed, cancelled, failed or paused): ``report()`` then has the outcome."""
        state = self._current()
        if state.runtime.report is not None or state.finished:
            return True
        try:
            if self._poll(state):
                self._finish(state)
                return True
            return False
        except KafkaOpsError as e:
            self._fail(state, e)
            raise

    def report(self) -> ExecutionReport:
        """The report of the run that ended (``step()`` returned True)."""
        state = self._current()
        if state.runtime.report is None:
            raise ValidationError(f"the execution is still {state.status}: no final report yet")
        return ExecutionReport.from_dict(state.runtime.report)

    # -- setup --------------------------------------------------------------------------------
    def _current(self) -> st.ExecutionState:
        """The execution in memory, or the one in the store (reconciled if its last step was
        cut short: the process died between recording and sending)."""
        if self.state is not None and not self.state.runtime.in_step:
            return self.state
        state = self.state or (self.store.load() if self.store is not None else None)
        if state is None:
            raise ValidationError("no execution started: call start() first")
        if state.runtime.in_step and not state.finished:
            self._resume(state, self.backend.describe_cluster(), restart=False)
            state.runtime.report = None
            self._save(state)
        self.state = state
        return state

    def _start(self, cluster: ClusterModel) -> st.ExecutionState:
        state = new_execution(self.plan, self.base, self.options, cluster, self.clock())
        if any(not t.done for t in state.tasks):
            check_can_start(cluster, self.backend.list_reassignments(), state.tasks, self.options)
        if self.plan.log_dirs:  # Kafka's order: name new replicas' directories first
            dirs.prepare_dir_moves(self.backend, self.plan, cluster)
            state.dir_moves = dirs.dir_moves_of(self.plan)
        for s in state.skipped:
            log.warning("skipping %s: %s", s.tp, s.reason)
        return state

    def _resume(self, state: st.ExecutionState, cluster: ClusterModel, restart: bool) -> None:
        """Reconcile a persisted execution with the cluster after a crash, pause or failure.

        ``restart``: a new run of an unfinished execution (execute again): a pause ends and
        its cancelled moves start afresh. Otherwise the interrupted run just continues.
        """
        cancels = reconcile(state, cluster, self.backend.list_reassignments(), self.clock())
        if cancels:
            self.backend.alter_reassignments(cancels)  # the cancel may not have been sent
        if self._cancel.is_set():
            state.status = st.CANCELLING
        if restart:
            restart_run(state, cluster, self.options)

    # -- the loop -----------------------------------------------------------------------------
    def _poll(self, state: st.ExecutionState) -> bool:
        """One iteration of the poll loop. True when nothing is left to do in this run."""
        rt = state.runtime
        now = self.clock()
        if self.store is not None:
            self.store.heartbeat()
        watched = [t.tp for t in self._tasks(state).in_flight()]
        cluster = self.backend.describe_partitions(watched)
        ongoing = self.backend.list_reassignments(watched)
        changed = self._observe(state, cluster, ongoing, now)
        if state.status in (st.RUNNING, st.PAUSED) and (
            self._cancel.is_set() or (self.store is not None and self.store.cancel_requested())
        ):
            state.status, changed = st.CANCELLING, True
            log.warning("cancel requested: cancelling moves in flight")
        dead = rt.alive_at_start - set(cluster.alive_broker_ids)
        if state.status == st.RUNNING and dead:
            self._pause(state, dead, now)
            changed = True
        to_submit: list[ExecutionTask] = []
        if state.status == st.CANCELLING:
            changed |= self._cancel_moves(state, ongoing, lambda t: True, now)
        elif state.status == st.PAUSED:
            draining_too_long = now - (rt.paused_at or now) > self.options.drain_timeout
            changed |= self._cancel_moves(
                state, ongoing,
                lambda t: draining_too_long or any(b in rt.dead_brokers for b in t.incoming),
                now,
            )
        else:
            to_submit = self._next_moves(state, ongoing, now)
        in_flight = self._tasks(state).in_flight()
        wanted = calculate_throttles(
            {t.tp: calculate_move(t.step_source, t.step_target) for t in in_flight},
            self.options.throttle,
        )
        changes = calculate_throttle_changes(rt.applied, wanted)
        sending = bool(to_submit) or not changes.empty
        if changed or sending:
            state.throttles = _union(rt.applied, wanted)
            rt.in_step = sending
            self._save(state)
        self._apply_throttles(rt, changes, wanted)
        if to_submit:
            self._submit(state, to_submit)
        if sending:
            rt.in_step = False
            state.throttles = _union(rt.applied, wanted)
            self._dirty = True
        if self._dirty:
            self._save(state)
        self._report(state, cluster, now, in_flight)
        inter_broker_done = not in_flight and (state.status != st.RUNNING or not _pending(state))
        if inter_broker_done and any(not m.final for m in state.dir_moves):
            return self._dir_step(state, now)
        return inter_broker_done

    def _dir_step(self, state: st.ExecutionState, now: float) -> bool:
        """The log-dir phase, once no inter-broker move is left (Kafka's order). True when over."""
        if state.status == st.RUNNING:
            reassigned = {t.tp for t in state.tasks if t.state is TaskState.COMPLETED}
            done = dirs.advance_dir_moves(self.backend, state.dir_moves, state.dir_throttled, reassigned,
                                          throttle=self.options.log_dirs_throttle, now=now,
                                          retry_grace=self.options.missing_grace, save=lambda: self._save(state))
            self._save(state)
            finished = sum(m.final for m in state.dir_moves)
            self._report(state, None, now, [], phase=f"log-dir moves {finished}/{len(state.dir_moves)}")
            return done
        # cancelled: drop the future replicas; paused: drop them too, the next run sends again
        dirs.stop_dir_moves(self.backend, state.dir_moves, now,
                            then=dirs.CANCELLED if state.status == st.CANCELLING else dirs.PENDING)
        self._save(state)
        return True

    def _observe(
        self,
        state: st.ExecutionState,
        cluster: ClusterModel,
        ongoing: Mapping[TopicPartition, OngoingReassignment],
        now: float,
    ) -> bool:
        """Advance moves in flight from what the cluster shows. Returns whether anything changed."""
        rt = state.runtime
        changed = False
        for task in self._tasks(state).in_flight():
            if task.state is TaskState.IN_PROGRESS and task.tp not in state.submitted:
                continue
            current = cluster.partitions[task.tp].replicas
            isr = cluster.partitions[task.tp].isr
            if task.tp in ongoing:
                if rt.missing_since.pop(task.tp, None) is not None:
                    self._dirty = True
                signature = (task.step, tuple(b for b in task.incoming if b in isr))
                previous = rt.last_change.get(task.tp)
                if previous is None or previous[0] != signature:
                    rt.last_change[task.tp] = (signature, now)
                    self._dirty = True
                    if previous is not None:  # a new replica joined the ISR
                        rt.broker_progress.update({b: now for b in task.incoming})
                continue
            if task.state is TaskState.ABORTING and set(current) == set(task.step_source):
                task.transition(TaskState.ABORTED, now)
            elif state.status != st.RUNNING and set(current) == set(task.step_source):
                # cancelled by a request that failed for another partition: confirmed reverted
                task.transition(TaskState.ABORTING, now)
                task.transition(TaskState.ABORTED, now)
            elif task.state is TaskState.IN_PROGRESS and current == task.step_target:
                rt.broker_progress.update({b: now for b in task.incoming})
                state.submitted.discard(task.tp)
                if task.last_step:
                    task.transition(TaskState.COMPLETED, now)
                else:
                    task.step += 1
            elif now - rt.missing_since.setdefault(task.tp, now) >= self.options.missing_grace:
                # Kafka's third verify outcome: nothing running, but not the target either.
                task.error = (
                    f"There is no active reassignment of partition {task.tp}, but replica set is "
                    f"{list(current)} rather than {list(task.step_target)}."
                )
                task.transition(TaskState.DEAD, now)
                log.error("%s", task.error)
            else:
                self._dirty = True  # the grace clock started
                continue
            rt.missing_since.pop(task.tp, None)
            rt.last_change.pop(task.tp, None)
            rt.stalled.discard(task.tp)
            changed = True
        self._detect_stalls(state, cluster, ongoing, now)
        return changed

    def _detect_stalls(
        self,
        state: st.ExecutionState,
        cluster: ClusterModel,
        ongoing: Mapping[TopicPartition, OngoingReassignment],
        now: float,
    ) -> None:
        rt = state.runtime
        for task in self._tasks(state).in_flight():
            if task.state is not TaskState.IN_PROGRESS or task.tp not in ongoing:
                continue
            isr = cluster.partitions[task.tp].isr
            idle = now - last_progress(rt, task, isr, now)
            if idle <= self.options.stall_timeout:
                if task.tp in rt.stalled:
                    rt.stalled.discard(task.tp)
                    self._dirty = True
            elif task.tp not in rt.stalled:
                rt.stalled.add(task.tp)
                self._dirty = True
                log.warning("move of %s stalled: no progress for %.0f s (waiting for %s)", task.tp, idle,
                            ",".join(str(b) for b in task.incoming if b not in isr))

    def _next_moves(
        self,
        state: st.ExecutionState,
        ongoing: Mapping[TopicPartition, OngoingReassignment],
        now: float,
    ) -> list[ExecutionTask]:
        """Steps waiting to be sent plus new moves the limits allow, if the backend takes them now.

        Only the chosen candidates' partitions are read (for the drift check); a drifted one
        is dropped and the choice made again without it.
        """
        in_flight = [t for t in self._tasks(state).in_flight() if t.state is TaskState.IN_PROGRESS]
        waiting = [t for t in in_flight if t.tp not in state.submitted]
        if not self.backend.supports_incremental_reassignment and (ongoing or len(waiting) < len(in_flight)):
            return []  # ZooKeeper mode: the next batch goes when the previous one is gone
        chosen: list[ExecutionTask] = []
        while True:
            candidates = select_moves(self._tasks(state).pending(), in_flight + chosen, self.options.limits,
                                      self.options.throttle is not None)
            if not candidates:
                break
            current = self.backend.describe_partitions([t.tp for t in candidates])
            kept = self._drop_drifted(state, current, candidates)
            index = self._tasks(state)
            for task in kept:
                task.transition(TaskState.IN_PROGRESS, now)
                index.started(task)
            chosen.extend(kept)
            if len(kept) == len(candidates):
                break
        return waiting + chosen

    def _drop_drifted(
        self, state: st.ExecutionState, cluster: ClusterModel, pending: list[ExecutionTask]
    ) -> list[ExecutionTask]:
        """Pending moves whose partition changed since the run started are not applied blindly."""
        drifted = [t for t in pending if cluster.partitions[t.tp].replicas != t.source]
        if not drifted:
            return pending
        reasons = [st.SkippedPartition(t.tp, drift_reason(t.source, cluster.partitions[t.tp].replicas))
                   for t in drifted]
        if self.options.on_drift == "abort":
            raise ValidationError(
                f"{len(drifted)} partitions changed during the execution "
                f"({reasons[0].tp}: {reasons[0].reason}); stopping"
            )
        gone = {t.tp for t in drifted}
        state.tasks = [t for t in state.tasks if t.tp not in gone or t.state is not TaskState.PENDING]
        state.skipped.extend(reasons)
        self._dirty = True
        for r in reasons:
            log.warning("skipping %s: %s", r.tp, r.reason)
        return [t for t in pending if t.tp not in gone]

    def _submit(self, state: st.ExecutionState, tasks: list[ExecutionTask]) -> None:
        targets = {t.tp: list(t.step_target) for t in tasks}
        try:
            self.backend.alter_reassignments(targets)
        except ReassignmentInProgressError:
            # ZooKeeper mode: the controller has not yet removed the previous batch's znode.
            log.info("previous reassignment still registered; submitting %d moves next poll", len(tasks))
            return
        state.submitted.update(targets)

    def _cancel_moves(
        self,
        state: st.ExecutionState,
        ongoing: Mapping[TopicPartition, OngoingReassignment],
        which: Callable[[ExecutionTask], bool],
        now: float,
    ) -> bool:
        """Cancel the chosen moves in flight; steps never sent are simply not sent."""
        to_cancel = []
        changed = False
        for task in self._tasks(state).in_flight():
            if task.state is not TaskState.IN_PROGRESS:
                continue
            if task.tp not in state.submitted:
                task.transition(TaskState.ABORTING, now)
                task.transition(TaskState.ABORTED, now)
                changed = True
            elif task.tp in ongoing and which(task):
                to_cancel.append(task)
        if not to_cancel:
            return changed
        self._save(state)
        try:
            self.backend.alter_reassignments({t.tp: None for t in to_cancel})
        except KafkaOpsError as e:
            # A move may have finished between listing and cancelling; look again next poll.
            state.runtime.cancel_failures += 1
            self._dirty = True
            if state.runtime.cancel_failures > 3:
                raise
            log.warning("cancel failed (%s); retrying", e)
            return changed
        for task in to_cancel:
            task.transition(TaskState.ABORTING, now)
        return True

    def _apply_throttles(self, rt: st.Runtime, changes: ThrottleChanges, wanted: ThrottleConfig) -> None:
        """Send the changes; what an offline broker could not take stays recorded as applied
        (to be removed once it is back)."""
        if changes.empty:
            return
        offline = apply_throttle_changes(self.backend, changes)
        brokers = {b: c for b, c in wanted.brokers.items() if b not in offline}
        brokers.update({b: rt.applied.brokers[b] for b in offline if b in rt.applied.brokers})
        rt.applied = ThrottleConfig(wanted.topics, brokers)

    def _pause(self, state: st.ExecutionState, dead: set[int], now: float) -> None:
        state.runtime.dead_brokers = dead
        state.runtime.paused_at = now
        state.status = st.PAUSED
        state.message = (
            f"broker(s) {ids(sorted(dead))} went offline: no new moves started; moves onto them "
            f"cancelled, the others drained. Start the broker(s) and run execute again to resume."
        )
        log.error("%s", state.message)

    # -- the end ------------------------------------------------------------------------------
    def _finish(self, state: st.ExecutionState) -> ExecutionReport:
        rt = state.runtime
        leaders = None
        if state.status == st.RUNNING:
            completed = {t.tp: t.target for t in state.tasks if t.state is TaskState.COMPLETED}
            if self.options.elect_leaders and completed:
                self._report(state, None, self.clock(), [], phase="electing")
                leaders = elect_preferred_leaders(self.backend, completed, self.options.limits.leader_changes)
                if leaders.misplaced:
                    state.message = (
                        f"{len(leaders.misplaced)} partitions are not led by their preferred replica "
                        f"(e.g. {examples(leaders.misplaced)})"
                    )
            dead = sum(t.state is TaskState.DEAD for t in state.tasks)
            state.status = st.COMPLETED if not dead else st.FAILED
            if dead:
                state.message = f"{dead} moves failed; " + state.message
            failed_dirs = sum(m.state == dirs.FAILED for m in state.dir_moves)
            if failed_dirs:
                state.status = st.FAILED
                first = next(m for m in state.dir_moves if m.state == dirs.FAILED)
                state.message = (f"{failed_dirs} log-dir moves failed (e.g. {first.tp} on broker "
                                 f"{first.broker}: {first.error}); " + state.message)
        elif state.status == st.CANCELLING:
            state.status = st.CANCELLED
            state.message = "cancelled: moves in flight were reverted; completed moves stay"
        if self.store is not None:
            self.store.clear_cancel_request()
        self._clear_dir_throttle(state)
        state.throttles = rt.applied
        if rt.applied.brokers:
            state.message += (
                f" Throttle rates on offline broker(s) {ids(sorted(rt.applied.brokers))} could not "
                f"be removed: run 'kafka-ops verify' once they are back."
            )
        ours = [t.tp for t in state.tasks]
        cluster = self.backend.describe_partitions(ours)
        report = self._report_of(state, cluster, leaders)
        rt.report = report.to_dict()
        self._save(state)
        self._report(state, cluster, self.clock(), [], phase="done")
        return report

    def _fail(self, state: st.ExecutionState, error: KafkaOpsError) -> None:
        """Best effort after an error: cancel what is in flight, remove throttles, record why.

        If the cleanup itself fails (the cluster is unreachable), the state stays unfinished so
        the next execute or cancel finishes the job — throttles are never forgotten.
        """
        rt = state.runtime
        log.error("execution failed: %s", error)
        try:
            ongoing = self.backend.list_reassignments()
            in_flight = [t.tp for t in state.tasks
                         if t.state is TaskState.IN_PROGRESS and t.tp in ongoing]
            if in_flight:
                self.backend.alter_reassignments({tp: None for tp in in_flight})
            nothing = ThrottleConfig({}, {})
            self._apply_throttles(rt, calculate_throttle_changes(rt.applied, nothing), nothing)
            if state.dir_moves:
                dirs.stop_dir_moves(self.backend, state.dir_moves, self.clock(), then=dirs.CANCELLED)
                self._clear_dir_throttle(state)
        except KafkaOpsError as cleanup_error:
            state.message = f"failed: {error}; cleanup failed too: {cleanup_error}"
            rt.in_step = True  # the next process reconciles with the cluster first
            self._save(state)
            return
        now = self.clock()
        for task in state.tasks:
            if task.state is not TaskState.IN_PROGRESS:
                continue
            if task.tp in in_flight or task.tp not in state.submitted:
                task.transition(TaskState.ABORTING, now)
                task.transition(TaskState.ABORTED, now)
            else:
                task.transition(TaskState.DEAD, now)
                task.error = "the execution failed before this move's outcome was seen"
        state.status = st.FAILED
        state.message = f"failed: {error}"
        state.throttles = rt.applied
        rt.in_step = False
        try:
            cluster = self.backend.describe_partitions([t.tp for t in state.tasks])
            rt.report = self._report_of(state, cluster, None).to_dict()
        except KafkaOpsError as report_error:  # the state is final and clean; only the report is short
            log.warning("no rollback plan in the report of the failed execution: %s", report_error)
            rt.report = self._report_of(state, ClusterModel([], []), None).to_dict()
        self._save(state)

    def _report_of(
        self, state: st.ExecutionState, cluster: ClusterModel, leaders: LeaderReport | None
    ) -> ExecutionReport:
        """The report, with the rollback plan written next to the state when anything moved."""
        report = build_report(state, cluster, leaders, self.clock() - state.runtime.run_started)
        if self.store is not None and len(report.rollback):
            report.rollback_path = self.store.write_rollback(report.rollback)
        return report

    def _clear_dir_throttle(self, state: st.ExecutionState) -> None:
        if not state.dir_throttled:
            return
        dirs.clear_dir_throttle(self.backend, state.dir_throttled)
        if state.dir_throttled:
            state.message += (f" The log-dir throttle on broker(s) {ids(sorted(state.dir_throttled))} "
                              "could not be removed: run 'kafka-ops verify' once they are back.")

    # -- helpers ------------------------------------------------------------------------------
    def _tasks(self, state: st.ExecutionState) -> TaskIndex:
        """The moves in flight and pending of ``state`` without walking the whole plan."""
        self._index = TaskIndex.of(state, self._index)
        return self._index

    def _save(self, state: st.ExecutionState) -> None:
        state.updated_at = self.clock()
        self._dirty = False
        if self.store is not None:
            self.store.save(state)

    def current(self) -> st.ExecutionState:
        """The execution's state: in memory, or from the store (reconciled if needed)."""
        return self._current()

    def progress(self, cluster: ClusterModel | None = None) -> ExecutionProgress:
        """Where the execution stands, from the state alone (``cluster`` adds per-move ISR
        detail); reads neither the store nor the cluster when the state is in memory."""
        state = self.state if self.state is not None else self._current()
        in_flight = [t for t in state.tasks if t.state in (TaskState.IN_PROGRESS, TaskState.ABORTING)]
        return execution_progress(state, cluster, self.clock(), in_flight, None, self.options.stall_timeout)

    def _report(
        self,
        state: st.ExecutionState,
        cluster: ClusterModel | None,
        now: float,
        in_flight: list[ExecutionTask],
        phase: str | None = None,
    ) -> None:
        if self.on_progress is not None:
            self.on_progress(execution_progress(state, cluster, now, in_flight, phase, self.options.stall_timeout))


def _pending(state: st.ExecutionState) -> list[ExecutionTask]:
    return [t for t in state.tasks if t.state is TaskState.PENDING]


def _union(a: ThrottleConfig, b: ThrottleConfig) -> ThrottleConfig:
    """Every key set in either config (b's values win): what may be on the cluster mid-change."""
    topics = {t: {**a.topics.get(t, {}), **b.topics.get(t, {})} for t in {*a.topics, *b.topics}}
    brokers = {x: {**a.brokers.get(x, {}), **b.brokers.get(x, {})} for x in {*a.brokers, *b.brokers}}
    return ThrottleConfig(topics, brokers)
