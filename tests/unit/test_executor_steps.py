"""The executor's step API on the in-process emulator: interruptions, crashes, poll cost.

A run is a sequence of ``step()`` calls with the state in a store. Whatever happens between
two steps — the process stops and a fresh ``Executor.from_store`` continues, or the process
dies in the middle of a step (before or after a write reached the cluster) and ``execute`` is
run again — the cluster must end where an uninterrupted run ends: every partition at its
target, nothing moving, no throttle left. Hypothesis picks the plan and the interruption.

The stateful test explores sequences of steps, crashes, cancels and broker deaths. It runs
``KAFKA_OPS_STATEFUL_EXAMPLES`` examples (default 30; raise it for a longer hunt).
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as hs
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor, StateStore
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend
from kafka_ops.throttle import BROKER_KEYS, TOPIC_KEYS

MB = 1_000_000
BROKERS = range(1, 6)
LIMITS = ExecutionLimits(incoming_per_broker=1, outgoing_per_broker=2, in_flight=3)
ORIGINAL = {TP("t", p): r for p, r in enumerate([(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 4)])}
POLL = 0.5


def model() -> ClusterModel:
    capacity = BrokerCapacity(10**12, 100 * MB, 100 * MB)
    return ClusterModel(
        [Broker(i, capacity=capacity) for i in BROKERS],
        [Partition(tp.topic, tp.partition, r, r[0], r, size_bytes=(tp.partition + 1) * 2 * MB)
         for tp, r in ORIGINAL.items()],
    )


def options(**kw) -> ExecutionOptions:
    return ExecutionOptions(**{"throttle": 4 * MB, "limits": LIMITS, "poll_interval": POLL,
                               "missing_grace": 5.0, **kw})


@hs.composite
def plans(draw) -> ReassignmentPlan:
    moved = draw(hs.lists(hs.sampled_from(sorted(ORIGINAL)), min_size=1, max_size=6, unique=True))
    return ReassignmentPlan.from_assignment({
        tp: tuple(draw(hs.permutations(list(BROKERS))))[:len(ORIGINAL[tp])] for tp in moved
    })


class Crash(BaseException):
    """The process dies here: no cleanup, no except clause runs (like SIGKILL)."""


class CrashingBackend(InProcessBackend):
    """Dies at its ``crash_at``-th write, just before or just after the write reaches the cluster."""

    def __init__(self, inner: InProcessBackend) -> None:
        super().__init__(inner.cluster, inner.supports_incremental_reassignment)
        self.crash_at: int | None = None
        self.after = False

    def _maybe_crash(self, sent: bool) -> None:
        if self.crash_at is not None and self.writes + (0 if sent else 1) == self.crash_at and sent == self.after:
            self.crash_at = None
            raise Crash

    def alter_reassignments(self, targets) -> None:
        self._maybe_crash(False)
        super().alter_reassignments(targets)
        self._maybe_crash(True)

    def alter_configs(self, resource, set_configs=None, delete_configs=()) -> None:
        self._maybe_crash(False)
        super().alter_configs(resource, set_configs, delete_configs)
        self._maybe_crash(True)


def clean(backend: InProcessBackend) -> None:
    c = backend.cluster
    assert backend.list_reassignments() == {}, "CLEAN_END: something still moving"
    left = [(t, k) for t in ("t",) for k in TOPIC_KEYS if k in c.topic_config(t)]
    left += [(b, k) for b in c.brokers for k in BROKER_KEYS if k in c.broker_config(b)]
    assert left == [], f"CLEAN_END: throttles left {left}"


def assignment(backend: InProcessBackend) -> dict:
    return {tp: tuple(p.replicas) for tp, p in backend.cluster.partitions.items()}


def uninterrupted(plan: ReassignmentPlan, tmp) -> dict:
    clock = ManualClock()
    backend = InProcessBackend.for_model(model(), clock=clock)
    ex = Executor(backend, plan, options=options(), store=StateStore(tmp), clock=clock.now,
                  sleep=clock.advance)
    assert ex.run().status == "completed"
    return assignment(backend)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(), stop_after=hs.integers(0, 40), how=hs.sampled_from(["between", "before-write", "after-write"]),
       write=hs.integers(1, 12))
def test_interrupted_run_resumed_elsewhere_ends_like_an_uninterrupted_one(tmp_path_factory, plan, stop_after,
                                                                           how, write):
    expected = uninterrupted(plan, tmp_path_factory.mktemp("ref"))
    clock = ManualClock()
    backend = CrashingBackend(InProcessBackend.for_model(model(), clock=clock))
    store = StateStore(tmp_path_factory.mktemp("state"))
    first = Executor(backend, plan, options=options(), store=store, clock=clock.now)
    first.start()
    if how != "between":
        backend.crash_at, backend.after = write, how == "after-write"
    try:
        for _ in range(stop_after):
            if first.step():
                break
            clock.advance(POLL)
    except Crash:
        event("crashed mid-step")
        backend.crash_at = None
        # The process died mid-step: the operator runs execute again (a new run of the plan).
        report = Executor(backend, plan, options=options(), store=StateStore(store.location),
                          clock=clock.now, sleep=clock.advance).run()
    else:
        event(f"stopped between steps ({how})")
        backend.crash_at = None  # the write it was to die at never came
        # Stopped between two steps: another worker continues from the store alone.
        second = Executor.from_store(backend, StateStore(store.location), clock=clock.now)
        while not second.step():
            clock.advance(POLL)
        report = second.report()
    assert report.status == "completed", report.message
    assert assignment(backend) == expected
    clean(backend)


def test_steps_persist_everything_a_fresh_executor_needs(tmp_path) -> None:
    """Stopping between every two steps changes nothing: same polls, same end, same timings."""
    plan = ReassignmentPlan.from_assignment({tp: (4, 5) for tp in list(ORIGINAL)[:4]})
    ref_clock = ManualClock()
    ref = InProcessBackend.for_model(model(), clock=ref_clock)
    ref_ex = Executor(ref, plan, options=options(), store=StateStore(tmp_path / "a"), clock=ref_clock.now)
    ref_ex.start()
    ref_steps = 1
    while not ref_ex.step():
        ref_clock.advance(POLL)
        ref_steps += 1
    clock = ManualClock()
    backend = InProcessBackend.for_model(model(), clock=clock)
    Executor(backend, plan, options=options(), store=StateStore(tmp_path / "b"), clock=clock.now).start()
    steps = 0
    while True:
        steps += 1
        if Executor.from_store(backend, StateStore(tmp_path / "b"), clock=clock.now).step():
            break
        clock.advance(POLL)
    assert steps == ref_steps and clock.now() == ref_clock.now()
    assert assignment(backend) == assignment(ref)
    report = Executor.from_store(backend, StateStore(tmp_path / "b")).report()
    assert report.elapsed == ref_ex.report().elapsed and report.status == "completed"


def test_a_poll_reads_only_the_moves_in_flight() -> None:
    """On a 10,000-partition cluster, a poll with 3 moves in flight reads a handful of partitions."""
    clock = ManualClock()
    cluster = generate_cluster("medium", seed=1)
    backend = InProcessBackend.for_model(cluster, clock=clock)
    movable = [p for p in cluster if len(p.replicas) == 2 and p.size_bytes > 0][:10]
    free = [b for b in cluster.broker_ids if not cluster.partitions_on(b)] or cluster.broker_ids
    plan = ReassignmentPlan.from_assignment({
        p.tp: (next(b for b in free if b not in p.replicas), p.replicas[0]) for p in movable
    })
    ex = Executor(backend, plan, options=options(allow_under_replicated=True), clock=clock.now)
    ex.start()
    reads = []
    for _ in range(6):
        before = backend.partitions_read
        ex.step()
        reads.append(backend.partitions_read - before)
        clock.advance(POLL)
    # At most in_flight partitions to observe plus the candidates read for the drift check.
    assert max(reads) <= 2 * LIMITS.in_flight, reads
    assert len(cluster.partitions) == 10_000


STATEFUL_EXAMPLES = int(os.environ.get("KAFKA_OPS_STATEFUL_EXAMPLES", "30"))


class ExecutionMachine(RuleBasedStateMachine):
    """Steps by fresh or same executors, crashes mid-step, cancels via the store, broker deaths.

    Invariants hold after every rule (NO_LOST_REPLICA, LIMITS); at the end the run is driven to
    its end (brokers restarted, execute run again after a pause) and checked (CLEAN_END, OUTCOME).
    """

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.clock = ManualClock()
        self.backend = CrashingBackend(InProcessBackend.for_model(model(), clock=self.clock))
        self.plan: ReassignmentPlan | None = None
        self.executor: Executor | None = None
        self.ended = False
        self.killed: set[int] = set()
        self.cancelled = False

    def store(self) -> StateStore:
        return StateStore(self.dir.name)

    @precondition(lambda self: self.plan is None)
    @rule(plan=plans())
    def start(self, plan) -> None:
        self.plan = plan
        self.executor = Executor(self.backend, plan, options=options(allow_under_replicated=True),
                                 store=self.store(), clock=self.clock.now)
        self.executor.start()

    @precondition(lambda self: self.plan is not None and not self.ended)
    @rule(fresh=hs.booleans(), crash=hs.none() | hs.tuples(hs.integers(1, 3), hs.booleans()))
    def step(self, fresh, crash) -> None:
        if fresh or self.executor is None:
            self.executor = Executor.from_store(self.backend, self.store(), clock=self.clock.now)
        if crash is not None:
            self.backend.crash_at, self.backend.after = self.backend.writes + crash[0], crash[1]
        try:
            self.ended = self.executor.step()
        except Crash:
            self.executor = None  # the process is gone; the next step is another one
        finally:
            self.backend.crash_at = None
        self.clock.advance(POLL)

    @precondition(lambda self: self.plan is not None and not self.ended and not self.cancelled)
    @rule()
    def cancel(self) -> None:
        self.store().request_cancel()
        self.cancelled = True

    @precondition(lambda self: self.plan is not None and not self.ended and not self.killed)
    @rule(broker=hs.sampled_from(list(BROKERS)))
    def kill_broker(self, broker) -> None:
        self.backend.cluster.stop_broker(broker)
        self.killed.add(broker)

    @rule()
    def wait(self) -> None:
        self.clock.advance(POLL)
        self.backend.cluster.tick()

    @invariant()
    def no_lost_replica(self) -> None:
        for tp, r in ORIGINAL.items():
            assert len(self.backend.cluster.partitions[tp].replicas) >= len(r), "NO_LOST_REPLICA"

    @invariant()
    def limits(self) -> None:
        ongoing = self.backend.list_reassignments()
        assert len(ongoing) <= LIMITS.in_flight, "LIMITS"
        incoming = Counter(b for r in ongoing.values() for b in r.adding)
        assert max(incoming.values(), default=0) <= LIMITS.incoming_per_broker, "LIMITS"

    def teardown(self) -> None:
        try:
            if self.plan is None:
                return
            for b in self.killed:
                self.backend.cluster.start_broker(b)
            for _ in range(20):  # restarted replicas catch up and rejoin their ISRs
                self.clock.advance(1.0)
                self.backend.cluster.tick()
            report = None
            for _ in range(3):  # finish this run, then execute again after a pause
                ex = Executor(self.backend, self.plan, options=options(allow_under_replicated=True),
                              store=self.store(), clock=self.clock.now, sleep=self.clock.advance)
                report = ex.run()
                if report.status != "paused":
                    break
            assert report is not None and report.status in ("completed", "cancelled"), report
            clean(self.backend)
            now = assignment(self.backend)
            for tp, target in self.plan.replicas.items():
                if report.status == "completed":
                    assert now[tp] == target, "OUTCOME"
                else:
                    assert now[tp] == target or set(now[tp]) == set(ORIGINAL[tp]), "OUTCOME"
        finally:
            self.dir.cleanup()


ExecutionMachine.TestCase.settings = settings(
    max_examples=STATEFUL_EXAMPLES, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_execution_machine = ExecutionMachine.TestCase


def test_a_failed_execution_ends_with_a_report_and_further_steps_do_nothing(tmp_path) -> None:
    """on_drift=abort: a partition changed by someone else mid-run fails the execution; its
    moves in flight are cancelled, the report is stored, and a later step (an orchestrator's
    retry) neither polls nor writes."""
    from kafka_ops.errors import ValidationError

    clock = ManualClock()
    backend = InProcessBackend.for_model(model(), clock=clock)
    tps = list(ORIGINAL)
    plan = ReassignmentPlan.from_assignment({tp: (4, 5) for tp in tps[:5]})
    ex = Executor(backend, plan, options=options(on_drift="abort", limits=ExecutionLimits(
        incoming_per_broker=1, outgoing_per_broker=5, in_flight=1)), store=StateStore(tmp_path), clock=clock.now)
    ex.start()
    ex.step()
    backend.alter_reassignments({tps[4]: [1, 5]})  # someone else moves a pending partition
    for _ in range(200):
        clock.advance(POLL)
        if not backend.list_reassignments([tps[4]]):
            break
    with pytest.raises(ValidationError, match="changed during the execution"):
        for _ in range(200):
            clock.advance(POLL)
            ex.step()
    writes, read = backend.writes, backend.partitions_read
    later = Executor.from_store(backend, StateStore(tmp_path), clock=clock.now)
    assert later.step() is True
    assert (backend.writes, backend.partitions_read) == (writes, read)
    report = later.report()
    assert report.status == "failed" and "changed during the execution" in report.message
    clean(backend)


def test_a_resume_recognises_its_own_move_in_flight_though_the_listing_shows_it_done() -> None:
    """The resume reads the replicas, then lists the reassignments: a move finishing between the
    two reads shows in flight in the first (target, then the replicas leaving) and absent from
    the second. It is ours, not a change made outside kafka-ops (a SIGKILL resume under load
    failed so)."""
    from kafka_ops.executor.setup import new_execution, reconcile
    from kafka_ops.executor.tasks import TaskState

    cluster = model()
    tp = sorted(ORIGINAL)[0]
    source = ORIGINAL[tp]
    target = tuple(b for b in BROKERS if b not in source)[:len(source)]
    plan = ReassignmentPlan.from_assignment({tp: target})
    state = new_execution(plan, None, options(), cluster, 0.0)
    task = next(t for t in state.tasks if t.tp == tp)
    task.transition(TaskState.IN_PROGRESS, 0.0)
    in_flight = cluster.with_assignment({tp: target + source})
    reconcile(state, in_flight, {}, 1.0)
    assert task.state is TaskState.IN_PROGRESS and tp in state.submitted
    drifted = cluster.with_assignment({tp: (source[0], *target)})
    reconcile(state, drifted, {}, 2.0)
    assert task.state is TaskState.DEAD and "changed outside kafka-ops" in task.error
