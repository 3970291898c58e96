"""Random plans, with random cancels, broker deaths and executor crashes, on the emulator.

Hypothesis draws a plan for a small cluster and a schedule of faults (at which poll they hit);
the executor runs through a real backend. Checked at every poll and at the end (named as in
Cruise Control's OptimizationVerifier):
- NO_LOST_REPLICA: no partition ever has fewer replicas than before the run;
- LIMITS: never more moves in flight into/out of a broker than allowed (the cluster's own view);
- CLEAN_END: nothing left moving and no throttle left on a live broker or any topic;
- OUTCOME: every partition is at its target, or back at its original replicas, or (after a
  pause) untouched; a resumed execution finishes the plan.
"""

from __future__ import annotations

import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor, StateStore
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from tests.integration.conftest import EMULATED_BACKENDS
from tests.integration.test_executor_e2e import throttles

MB = 1_000_000
BROKERS = range(1, 6)
LIMITS = ExecutionLimits(incoming_per_broker=1, outgoing_per_broker=2, in_flight=3)
ORIGINAL = {TP("t", p): r for p, r in enumerate([(1, 2), (2, 3), (3, 1), (1, 3), (2, 1)])}


def model() -> ClusterModel:
    capacity = BrokerCapacity(10**12, 100 * MB, 100 * MB)
    return ClusterModel(
        [Broker(i, capacity=capacity) for i in BROKERS],
        [Partition(tp.topic, tp.partition, r, r[0], r, size_bytes=(tp.partition + 1) * 4 * MB)
         for tp, r in ORIGINAL.items()],
    )


@hs.composite
def plans(draw) -> ReassignmentPlan:
    moved = draw(hs.lists(hs.sampled_from(sorted(ORIGINAL)), min_size=1, max_size=5, unique=True))
    return ReassignmentPlan.from_assignment({
        tp: tuple(draw(hs.permutations(list(BROKERS))))[:2] for tp in moved
    })


# Any broker may die, broker 1 (the emulator's first controller) included.
faults = hs.lists(
    hs.tuples(hs.integers(1, 8), hs.sampled_from(["cancel", "kill", "crash"]),
              hs.sampled_from(list(BROKERS))),
    min_size=1, max_size=2,
)


class Crash(BaseException):
    """The executor process dies (no cleanup runs, like SIGKILL)."""


@pytest.mark.parametrize("kind", list(EMULATED_BACKENDS))
@settings(max_examples=6, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(), schedule=faults)
def test_random_plans_and_faults_keep_every_partition_whole(kind, zk_connect, plan, schedule):
    with EMULATED_BACKENDS[kind](model(), zk_connect) as emulated, tempfile.TemporaryDirectory() as d:
        store = StateStore(d)
        polls = Counter()
        faults_at = {poll: (what, broker) for poll, what, broker in schedule}
        killed: set[int] = set()

        def check(progress) -> None:
            cluster = emulated.backend.describe_cluster()
            for tp, r in ORIGINAL.items():
                assert len(cluster.partitions[tp].replicas) >= len(r), "NO_LOST_REPLICA"
            ongoing = emulated.backend.list_reassignments()
            assert len(ongoing) <= LIMITS.in_flight, "LIMITS"
            incoming = Counter(b for r in ongoing.values() for b in r.adding)
            assert max(incoming.values(), default=0) <= LIMITS.incoming_per_broker, "LIMITS"

        def sleep(seconds: float) -> None:
            polls["n"] += 1
            what, broker = faults_at.get(polls["n"], (None, None))
            if what == "cancel":
                ex.request_cancel()
            elif what == "kill" and len(killed) < 1:
                emulated.cluster.stop_broker(broker)
                killed.add(broker)
            elif what == "crash":
                raise Crash
            emulated.advance(seconds)

        def run() -> Executor:
            options = ExecutionOptions(throttle=4 * MB, limits=LIMITS, poll_interval=0.5,
                                       missing_grace=5.0, allow_under_replicated=True)
            return Executor(emulated.backend, plan, options=options, store=store,
                            clock=emulated.clock.now, sleep=sleep, on_progress=check)

        ex = run()
        try:
            report = ex.run()
        except Crash:
            faults_at.clear()
            ex = run()
            if killed:
                for b in killed:
                    emulated.cluster.start_broker(b)
                killed.clear()
                _wait_alive(emulated)
            report = ex.run()
        if report.status == "paused":
            for b in killed:
                emulated.cluster.start_broker(b)
            _wait_alive(emulated)
            faults_at.clear()
            ex = run()
            report = ex.run()

        assert report.status in ("completed", "cancelled"), report.message
        assert emulated.backend.list_reassignments() == {}, "CLEAN_END"
        assert throttles(emulated.backend, topics=["t"], brokers=BROKERS) == {}, "CLEAN_END"
        now = emulated.backend.describe_cluster().assignment
        for tp in plan.replicas:
            if report.status == "completed":
                assert now[tp] == plan.replicas[tp], "OUTCOME"
            else:
                assert now[tp] == plan.replicas[tp] or set(now[tp]) == set(ORIGINAL[tp]), "OUTCOME"


def _wait_alive(emulated) -> None:
    import time

    deadline = time.monotonic() + 15
    while set(emulated.backend.describe_cluster().alive_broker_ids) != set(BROKERS):
        assert time.monotonic() < deadline, "brokers did not come back"
        time.sleep(0.02)
    for _ in range(10):  # let restarted replicas rejoin their ISRs
        emulated.advance(1.0)
