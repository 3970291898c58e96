"""The executor end to end on the emulator, through a real backend (ZooKeeper, Admin API).

Every check is made from outside the executor: the emulator's own event record (concurrency),
the configs the backend reads back (throttles), the cluster state (replicas, leaders). Emulated
time moves only when the executor sleeps, so a multi-batch plan takes seconds.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kafka_ops.backends.base import ConfigResource
from kafka_ops.errors import (
    BrokerNotAvailableError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.executor import ExecutionLimits, ExecutionOptions, Executor, StateStore
from kafka_ops.executor.state import RUNNING
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)

MB = 1_000_000
THROTTLE = 10 * MB  # 10 MB/s: a 20 MB partition takes about 2 emulated seconds per move


@pytest.fixture
def emulated_model() -> ClusterModel:
    """Six brokers; "orders" (6 x RF2, 20 MB) and "events" (2 x RF2, 5 MB) on brokers 1-3."""
    capacity = BrokerCapacity(10**12, 100 * MB, 100 * MB)
    brokers = [Broker(i, rack=f"r{i % 3}", capacity=capacity) for i in range(1, 7)]
    pairs = [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)]
    parts = [Partition("orders", p, r, r[0], r, size_bytes=20 * MB) for p, r in enumerate(pairs)]
    parts += [Partition("events", p, r, r[0], r, size_bytes=5 * MB) for p, r in enumerate(pairs[:2])]
    return ClusterModel(brokers, parts)


# Every partition gets one replica on 4-6 and a new preferred leader, so leaders must move.
PLAN = ReassignmentPlan.from_assignment({
    TP("orders", 0): (4, 1), TP("orders", 1): (5, 2), TP("orders", 2): (6, 3),
    TP("orders", 3): (4, 3), TP("orders", 4): (5, 1), TP("orders", 5): (6, 2),
    TP("events", 0): (4, 2), TP("events", 1): (5, 3),
})
LIMITS = ExecutionLimits(incoming_per_broker=1, outgoing_per_broker=1, in_flight=3, leader_changes=3)


def options(**overrides) -> ExecutionOptions:
    values = dict(throttle=THROTTLE, limits=LIMITS, poll_interval=0.5, missing_grace=5.0)
    values.update(overrides)
    return ExecutionOptions(**values)


def emulated_sleep(emulated):
    """The executor's sleep: move emulated time, then let the emulator's faces catch up."""

    def sleep(seconds: float) -> None:
        emulated.advance(seconds)
        time.sleep(0.01)

    return sleep


def executor(emulated, plan=PLAN, store=None, on_progress=None, **opts) -> Executor:
    return Executor(
        emulated.backend, plan, options=options(**opts), store=store,
        clock=emulated.clock.now, sleep=emulated_sleep(emulated), on_progress=on_progress,
    )


def concurrency(events) -> tuple[int, int, int]:
    """Peak per-broker incoming, outgoing and cluster-wide moves, from the emulator's record."""
    running: dict[tuple, tuple[list[int], list[int]]] = {}
    peak_in = peak_out = peak_all = 0
    for e in events:
        tp = (e.topic, e.partition)
        if e.kind == "reassignment_started":
            running[tp] = (e.data["adding"], e.data["removing"])
        elif e.kind in ("reassignment_completed", "reassignment_cancelled"):
            running.pop(tp, None)
        else:
            continue
        incoming = Counter(b for adding, _ in running.values() for b in adding)
        outgoing = Counter(b for _, removing in running.values() for b in removing)
        peak_in = max(peak_in, *incoming.values(), 0)
        peak_out = max(peak_out, *outgoing.values(), 0)
        peak_all = max(peak_all, len(running))
    return peak_in, peak_out, peak_all


def throttles(backend, topics=("orders", "events"), brokers=range(1, 7)) -> dict:
    """Every throttle config the cluster holds, read back through the backend."""
    found = {}
    for t in topics:
        cfg = {k: v for k, v in backend.describe_configs(ConfigResource.topic(t)).items()
               if k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)}
        if cfg:
            found[t] = cfg
    for b in brokers:
        cfg = {k: v for k, v in backend.describe_configs(ConfigResource.broker(b)).items()
               if k in (LEADER_RATE, FOLLOWER_RATE)}
        if cfg:
            found[b] = cfg
    return found


def replicas(emulated) -> dict[TP, tuple[int, ...]]:
    return emulated.backend.describe_cluster().assignment


def test_multi_batch_plan_completes_within_limits_throttled_with_preferred_leaders(emulated, tmp_path):
    seen_throttles = []

    def check_throttles(progress):
        ongoing = emulated.backend.list_reassignments()
        if not ongoing:
            return
        current = throttles(emulated.backend)
        seen_throttles.append(current)
        follower = {(t, int(e.split(":")[0]), int(e.split(":")[1]))
                    for t, c in current.items() if isinstance(t, str)
                    for e in c.get(FOLLOWER_REPLICAS, "").split(",") if e}
        for tp, r in ongoing.items():  # every move in flight is throttled on its new replicas
            for b in r.adding:
                assert (tp.topic, tp.partition, b) in follower, (tp, b, current)
        # ... and only moves in flight (or just finished this poll) are throttled
        assert {(t, p) for t, p, _ in follower} <= {(tp.topic, tp.partition) for tp in PLAN.replicas}

    report = executor(emulated, store=StateStore(tmp_path), on_progress=check_throttles).run()

    assert report.status == "completed", report.message
    assert sorted(report.completed) == sorted(PLAN.replicas)
    cluster = emulated.backend.describe_cluster()
    assert {tp: cluster.partitions[tp].replicas for tp in PLAN.replicas} == PLAN.replicas
    assert all(cluster.partitions[tp].leader == r[0] for tp, r in PLAN.replicas.items())
    assert report.leaders is not None and report.leaders.ok
    peak_in, peak_out, peak_all = concurrency(emulated.cluster.events)
    assert (peak_in, peak_out) == (1, 1) and peak_all <= 3
    starts = [e for e in emulated.cluster.events if e.kind == "reassignment_started"]
    assert len(starts) == len(PLAN)  # each partition moved exactly once
    assert len({e.time for e in starts}) >= 3  # several batches
    assert seen_throttles and any(LEADER_RATE in c for c in seen_throttles[0].values() if isinstance(c, dict))
    assert throttles(emulated.backend) == {}
    assert StateStore(tmp_path).load().status == "completed"


def test_cancel_mid_way_reverts_in_flight_and_reports_what_completed(emulated, tmp_path):
    store = StateStore(tmp_path)

    def cancel_after_first(progress):
        if progress.completed >= 1:
            ex.request_cancel()

    ex = executor(emulated, store=store, on_progress=cancel_after_first)
    report = ex.run()

    assert report.status == "cancelled"
    assert report.completed and report.aborted and report.pending
    assert emulated.backend.list_reassignments() == {}
    now = replicas(emulated)
    for tp in report.completed:
        assert now[tp] == PLAN.replicas[tp]
    for tp in report.aborted + report.pending:
        assert set(now[tp]) == set(emulated_model_base()[tp])
    assert throttles(emulated.backend) == {}
    # the rollback plan puts back exactly what moved
    rollback = ReassignmentPlan.read(report.rollback_path)
    assert set(rollback.replicas) == {tp for tp in PLAN.replicas if now[tp] != emulated_model_base()[tp]}
    assert all(rollback.replicas[tp] == emulated_model_base()[tp] for tp in rollback.replicas)


def emulated_model_base() -> dict[TP, tuple[int, ...]]:
    pairs = [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)]
    base = {TP("orders", p): r for p, r in enumerate(pairs)}
    base.update({TP("events", p): r for p, r in enumerate(pairs[:2])})
    return base


def test_broker_dying_mid_run_pauses_with_every_partition_whole_then_resumes(emulated, tmp_path, wait_until):
    store = StateStore(tmp_path)
    victim = 4  # a destination of the first moves

    def kill_when_moving_onto_victim(progress):
        if any(victim in m.waiting_for for m in progress.moves) and emulated.cluster.brokers[victim].alive:
            emulated.cluster.stop_broker(victim)

    report = executor(emulated, store=store, on_progress=kill_when_moving_onto_victim).run()

    assert report.status == "paused"
    assert "broker(s) 4 went offline" in report.message
    assert emulated.backend.list_reassignments() == {}
    cluster = emulated.backend.describe_cluster()
    for tp, base in emulated_model_base().items():
        assert len(cluster.partitions[tp].replicas) >= len(base)  # nobody lost a replica
    assert report.pending  # nothing new was started after the broker died
    live = [b for b in range(1, 7) if b != victim]
    assert throttles(emulated.backend, brokers=live) == {}
    paused = store.load()
    assert paused.status == "paused" and not paused.throttles.topics
    # a dead broker's rates cannot be removed through the Admin API: they stay recorded
    assert set(paused.throttles.brokers) <= {victim}

    with pytest.raises(BrokerNotAvailableError, match="still offline"):
        executor(emulated, store=store).run()
    emulated.cluster.start_broker(victim)
    wait_until(lambda: victim in emulated.backend.describe_cluster().alive_broker_ids,
               what=f"broker {victim} back")
    resumed = executor(emulated, store=store, allow_under_replicated=True).run()
    assert resumed.status == "completed", resumed.message
    now = replicas(emulated)
    assert {tp: now[tp] for tp in PLAN.replicas} == PLAN.replicas
    assert throttles(emulated.backend) == {}
    assert emulated.cluster.broker_config(victim) == {}


def test_drift_is_skipped_or_aborts(emulated, tmp_path):
    base = dict(emulated_model_base())
    base[TP("orders", 0)] = (1, 3)  # the plan was computed when orders-0 was elsewhere
    with pytest.raises(ValidationError, match="1 partitions changed since the plan was computed"):
        Executor(emulated.backend, PLAN, base=base, options=options(on_drift="abort")).run()
    assert emulated.backend.list_reassignments() == {}
    assert throttles(emulated.backend) == {}
    assert not [e for e in emulated.cluster.events if e.kind == "reassignment_started"]

    report = Executor(
        emulated.backend, PLAN, base=base, options=options(), clock=emulated.clock.now,
        sleep=emulated_sleep(emulated),
    ).run()
    assert report.status == "completed"
    assert [s.tp for s in report.skipped] == [TP("orders", 0)]
    assert "replicas are [1, 2], the plan expected [1, 3]" in report.skipped[0].reason
    assert replicas(emulated)[TP("orders", 0)] == (1, 2)  # never blindly applied


def test_refuses_while_another_reassignment_runs(emulated):
    emulated.backend.alter_reassignments({TP("orders", 0): [1, 6]})
    with pytest.raises(ReassignmentInProgressError, match="existing partition reassignment"):
        executor(emulated).run()
    assert set(emulated.backend.list_reassignments()) == {TP("orders", 0)}
    assert throttles(emulated.backend) == {}


def test_refuses_offline_target_broker(emulated, wait_until):
    emulated.cluster.stop_broker(3)  # holds replicas, so every backend still knows it
    # The backends see the stop asynchronously, as they would a real broker's.
    wait_until(lambda: not emulated.backend.describe_cluster().brokers[3].alive,
               what="broker 3 reported dead")
    with pytest.raises(BrokerNotAvailableError, match="broker\\(s\\) 3 of the plan are offline"):
        executor(emulated).run()
    assert emulated.backend.list_reassignments() == {}


def test_one_replica_at_a_time_never_exceeds_rf_plus_one(emulated):
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (4, 5), TP("orders", 1): (6, 4)})
    report = executor(emulated, plan=plan, one_replica_at_a_time=True).run()
    assert report.status == "completed", report.message
    sizes = [len(e.data["replicas"]) for e in emulated.cluster.events
             if e.kind == "partition_changed" and e.topic == "orders" and e.partition in (0, 1)
             and "replicas" in e.data]
    assert sizes and max(sizes) == 3  # RF 2 + 1
    now = replicas(emulated)
    assert (now[TP("orders", 0)], now[TP("orders", 1)]) == ((4, 5), (6, 4))


def _cli_cluster_args(emulated, zk_connect: str) -> list[str]:
    if emulated.kind == "zookeeper":
        return ["--zookeeper", zk_connect]
    brokers = sorted(emulated.cluster.brokers.values(), key=lambda b: b.id)
    return ["--bootstrap-server", ",".join(f"127.0.0.1:{b.port}" for b in brokers if b.alive)]


def test_killed_executor_process_resumes_without_moving_anything_twice(emulated, zk_connect, tmp_path):
    plan_path = tmp_path / "plan.json"
    PLAN.write(plan_path)
    state_dir = tmp_path / "state"
    store = StateStore(state_dir)
    cmd = [sys.executable, "-c", "import sys; from kafka_ops.cli import main; sys.exit(main())",
           "execute", str(plan_path),
           *_cli_cluster_args(emulated, zk_connect), "--state-dir", str(state_dir),
           "--throttle", str(THROTTLE), "--max-incoming", "1", "--max-outgoing", "1",
           "--max-in-flight", "3", "--poll-interval", "0.05", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the executor never got mid-way"
            state = store.load() if store.path.exists() else None
            if state is not None:
                states = Counter(t.state.value for t in state.tasks)
                if states["completed"] >= 2 and states["in_progress"] >= 1 and state.submitted:
                    break
            emulated.advance(0.1)  # emulated time moves slowly while the process runs
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Killed with moves in flight: throttles are left behind, and the state says so.
    state = store.load()
    assert state.status == RUNNING and (state.throttles.topics or state.throttles.brokers)
    assert throttles(emulated.backend) != {}
    completed_before = {t.tp for t in state.tasks if t.state.value == "completed"}

    report = executor(emulated, store=store).run()  # the same plan and state dir: resume

    assert report.status == "completed", report.message
    assert sorted(report.completed) == sorted(PLAN.replicas)
    now = replicas(emulated)
    assert {tp: now[tp] for tp in PLAN.replicas} == PLAN.replicas
    starts = Counter((e.topic, e.partition) for e in emulated.cluster.events if e.kind == "reassignment_started")
    assert all(n == 1 for n in starts.values()), starts  # nothing moved twice
    assert {(tp.topic, tp.partition) for tp in completed_before} <= set(starts)
    assert throttles(emulated.backend) == {}
    assert emulated.backend.list_reassignments() == {}


def test_cli_status_verify_and_cancel(emulated, zk_connect, tmp_path, capsys):
    from kafka_ops.cli import main

    plan_path = tmp_path / "plan.json"
    PLAN.write(plan_path)
    cluster_args = _cli_cluster_args(emulated, zk_connect)
    assert main(["verify", str(plan_path), *cluster_args]) == 1
    out = capsys.readouterr().out
    assert "There is no active reassignment of partition events-0, but replica set is [1, 2] rather than [4, 2]." in out

    # an execution killed mid-way (simulated: stop after the first poll), then cancelled by the CLI
    store = StateStore(tmp_path / "state")

    class Stop(BaseException):
        pass

    def stop(seconds):
        raise Stop

    with pytest.raises(Stop):
        Executor(emulated.backend, PLAN, options=options(), store=store,
                 clock=emulated.clock.now, sleep=stop).run()
    assert main(["status", "--state-dir", str(store.dir)]) == 0
    assert "status: running" in capsys.readouterr().out
    assert main(["cancel", *cluster_args, "--state-dir", str(store.dir)]) == 4
    out = capsys.readouterr().out
    assert "status: cancelled" in out
    assert emulated.backend.list_reassignments() == {}
    assert throttles(emulated.backend) == {}
    assert main(["cancel", *cluster_args, "--state-dir", str(store.dir)]) == 2
    assert "nothing to cancel" in capsys.readouterr().err
    assert Path(store.rollback_path).exists() or all(
        replicas(emulated)[tp] == r for tp, r in emulated_model_base().items()
    )


def test_cancel_command_stops_a_running_executor_process(emulated, zk_connect, tmp_path, capsys):
    """The operator's path: ``execute`` runs in one terminal, ``cancel`` in another.

    Its stderr is a pipe here, so progress comes as log lines (as in Airflow task logs)."""
    from kafka_ops.cli import main

    plan_path = tmp_path / "plan.json"
    PLAN.write(plan_path)
    store = StateStore(tmp_path / "state")
    cmd = [sys.executable, "-c", "import sys; from kafka_ops.cli import main; sys.exit(main())",
           "execute", str(plan_path), *_cli_cluster_args(emulated, zk_connect),
           "--state-dir", str(store.dir), "--throttle", str(THROTTLE), "--max-incoming", "1",
           "--max-outgoing", "1", "--poll-interval", "0.05"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (store.path.exists() and any(t.state.value == "in_progress" for t in store.load().tasks)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the executor never started a move"
            time.sleep(0.02)
        assert store.executor_running()
        assert main(["cancel", "--state-dir", str(store.dir), "--wait", "60"]) == 4
        assert "status: cancelled" in capsys.readouterr().out
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 4, err
    assert "status: cancelled" in out
    assert re.search(r"^moving: \d+% done \d+/\d+ moving \d+ pending \d+", err, re.M), err
    assert "reverted 3" in err  # progress lines while cancelling
    assert emulated.backend.list_reassignments() == {}
    assert throttles(emulated.backend) == {}
    assert not store.cancel_requested()


def test_stalled_move_is_reported(emulated, caplog):
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (4, 1), TP("events", 0): (5, 2)})
    emulated.cluster.slow_broker(4, 1e-9)  # broker 4 fetches (almost) nothing
    stalled = []

    def watch(progress):
        stalled.extend(progress.stalled)
        if progress.stalled:
            ex.request_cancel()

    ex = executor(emulated, plan=plan, on_progress=watch, stall_timeout=3.0)
    report = ex.run()
    assert set(stalled) == {TP("orders", 0)}
    assert report.status == "cancelled" and report.completed == [TP("events", 0)]
    assert "move of orders-0 stalled: no progress for" in caplog.text
