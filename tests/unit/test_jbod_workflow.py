"""JBOD through the workflow API (plan -> digest -> start -> step... -> report) on the emulator's
core in-process, manual clock: rebalance-disks as a workflow mode, mixed plans in Kafka's order,
log-dir moves recorded in the state (status, cancel, pause/resume, verify) and the alter-log-dirs
throttle set and always cleared. Each step runs on a fresh executor read from the store, as a
different Airflow worker would; outcomes are read from the emulated cluster itself.
"""

from __future__ import annotations

import json

import pytest

from kafka_ops import workflow as wf
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, ClusterModel, LogDir, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend
from kafka_ops.throttle import LOG_DIRS_RATE

MB = 1_000_000
DIRS = tuple(LogDir(f"/disk{i}", 1000 * MB) for i in range(4))
TP = TopicPartition


def jbod_cluster() -> ClusterModel:
    """Four brokers with four 1 GB disks; every replica of brokers 1-3 on /disk0 (one full
    disk among empty ones); broker 4 empty."""
    brokers = [Broker(i, rack=f"r{i % 2}", log_dirs=DIRS) for i in range(1, 5)]
    parts = [Partition("t", i, (1 + i % 3, 1 + (i + 1) % 3), 1 + i % 3,
                       (1 + i % 3, 1 + (i + 1) % 3), size_bytes=(20 + i) * MB,
                       log_dirs=("/disk0", "/disk0")) for i in range(12)]
    return ClusterModel(brokers, parts)


def xcom(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def backend(clock) -> InProcessBackend:
    return InProcessBackend.for_model(jbod_cluster(), clock=clock)


def placement(backend: InProcessBackend) -> dict[tuple[TopicPartition, int], str]:
    return dict(backend.cluster.log_dirs.placement)


def futures(backend: InProcessBackend) -> dict:
    return {k: f.target for k, f in backend.cluster.log_dirs.futures.items()}


def dir_throttled(backend: InProcessBackend) -> list[int]:
    return [b for b in backend.cluster.brokers if LOG_DIRS_RATE in backend.cluster.broker_config(b)]


def step(backend, store, clock, seconds: float = 1.0) -> wf.ExecutionStatus:
    clock.advance(seconds)
    return xcom(wf.step_execution(backend, store, clock=clock.now))


def run_steps(backend, store, clock, limit: int = 400) -> wf.ExecutionStatus:
    status = wf.execution_progress(store)
    for _ in range(limit):
        if status.ended:
            return status
        status = step(backend, store, clock, status.poll_interval)
    pytest.fail(f"execution did not end in {limit} steps: {status}")


def dir_bytes(backend: InProcessBackend, broker: int) -> dict[str, int]:
    """Bytes per directory of the broker, from the emulator's own DescribeLogDirs."""
    return {path: sum(sizes.values()) for path, sizes in backend.cluster.describe_log_dirs(broker).items()}


def test_rebalance_disks_runs_through_the_workflow_throttled_and_leaves_no_throttle(backend, clock, tmp_path):
    snap = xcom(wf.read_cluster(backend, log_dirs=True))
    proposal = xcom(wf.make_plan(snap, {"mode": "rebalance-disks", "disk_threshold": 0.8, "disk_band": 0.05}))
    plan = proposal.reassignment()
    assert plan.log_dirs and all(plan.replicas[tp] == jbod_cluster().partitions[tp].replicas for tp in plan.replicas)
    goals = {g["name"]: g for g in proposal.summary["goals"]}
    assert goals["intra_broker_disk_usage_distribution"]["after"]["worst_spread"] <= 0.1
    moves = sum(d != "any" for dirs in plan.log_dirs.values() for d in dirs)
    digest = wf.approval_digest(plan, snap.model(), summary=proposal.summary)
    assert digest.log_dir_moves == moves and digest.replica_moves == 0
    assert "log-dir moves" in digest.text()
    # The rollback puts each moved replica back in /disk0.
    back = proposal.base()
    assert back.log_dirs and all(d in ("any", "/disk0") for ds in back.log_dirs.values() for d in ds)
    before = placement(backend)

    rate = 10 * MB
    status = wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": rate, "poll_interval": 1.0},
                                base=back, approved_hash=digest.content_hash, clock=clock.now)
    status = step(backend, tmp_path, clock)
    assert status.progress["log_dir_moves"]["moving"] > 0
    state = wf.state_dict(wf.open_store(tmp_path).load())
    assert state["log_dir_throttled_brokers"] == [1, 2, 3] and state["in_flight_log_dirs"]
    assert dir_throttled(backend) == [1, 2, 3] and futures(backend)
    status = run_steps(backend, tmp_path, clock)
    assert status.status == "completed", status.message
    assert dir_throttled(backend) == [] and futures(backend) == {}
    after = placement(backend)
    assert set(after) == set(before), "a replica left its broker"
    for b in (1, 2, 3):
        by_dir = dir_bytes(backend, b)
        mean = sum(by_dir.values()) / len(by_dir)
        assert all(abs(v - mean) <= 0.05 * 1000 * MB for v in by_dir.values()), (b, by_dir)
    for tp, ds in plan.log_dirs.items():
        for b, d in zip(plan.replicas[tp], ds, strict=True):
            assert d == "any" or after[tp, b] == d
    report = wf.final_report(tmp_path)
    assert report.report["log_dir_moves"]["completed"] == moves and not report.report["log_dir_moves"]["not_completed"]
    # Throttled: the busiest broker copied its bytes at no more than the rate.
    size = {p.tp: p.size_bytes for p in jbod_cluster()}
    moved_on = {b: sum(size[tp] for (tp, bb) in after
                       if bb == b and after[tp, bb] != before[tp, bb]) for b in (1, 2, 3)}
    assert report.report["elapsed_seconds"] >= max(moved_on.values()) / rate - 1
    assert ReassignmentPlan.from_dict(report.rollback_plan).log_dirs  # back to /disk0, if wanted
    verify = wf.verify_and_clear_throttles(backend, plan)
    assert verify.complete and set(verify.log_dirs.values()) == {"completed"}


def test_a_mixed_plan_reassigns_first_then_moves_log_dirs(backend, clock, tmp_path):
    plan = ReassignmentPlan.from_json(
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[4,2],"log_dirs":["/disk2","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["/disk1","/disk3"]}]}')
    wf.start_execution(backend, plan, tmp_path, {"throttle": 5 * MB, "log_dirs_throttle": 5 * MB,
                                                 "poll_interval": 1.0}, clock=clock.now)
    status = run_steps(backend, tmp_path, clock)
    assert status.status == "completed", status.message
    now = placement(backend)
    assert backend.cluster.partitions[TP("t", 0)].replicas == [4, 2]
    assert now[TP("t", 0), 4] == "/disk2" and now[TP("t", 0), 2] == "/disk0"
    assert now[TP("t", 1), 2] == "/disk1" and now[TP("t", 1), 3] == "/disk3"
    events = backend.cluster.events
    # The new replica on broker 4 was created in /disk2 (named before the reassignment), not copied.
    assert not [e for e in events if e.kind == "log_dir_swapped" and e.broker == 4]
    done = max(i for i, e in enumerate(events) if e.kind == "reassignment_completed")
    first_dir_move = min(i for i, e in enumerate(events) if e.kind == "log_dir_move" and e.broker != 4)
    assert done < first_dir_move, "a log-dir move was sent before the reassignment completed"
    assert dir_throttled(backend) == []
    report = wf.final_report(tmp_path).report
    assert report["log_dir_moves"]["completed"] == 3 and report["log_dir_moves"]["already_in_place"] == 1


def test_cancel_drops_future_replicas_and_the_throttle(backend, clock, tmp_path):
    plan = ReassignmentPlan({TP("t", 0): (1, 2), TP("t", 3): (1, 2)},
                            {TP("t", 0): ("/disk3", "any"), TP("t", 3): ("/disk2", "any")})
    before = placement(backend)
    wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": MB, "poll_interval": 1.0}, clock=clock.now)
    status = step(backend, tmp_path, clock)
    assert status.progress["log_dir_moves"]["moving"] == 2 and len(futures(backend)) == 2
    wf.request_cancel(tmp_path)
    status = step(backend, tmp_path, clock)
    assert status.ended and status.status == "cancelled"
    clock.advance(200)  # long enough for both copies, had they not been dropped
    backend.cluster.tick()
    assert futures(backend) == {} and placement(backend) == before
    assert dir_throttled(backend) == []
    report = wf.final_report(tmp_path).report
    assert report["log_dir_moves"]["cancelled"] == 2


def test_cancel_from_another_process_when_no_executor_runs(backend, clock, tmp_path):
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): ("/disk3", "/disk1")})
    wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": MB, "poll_interval": 1.0}, clock=clock.now)
    step(backend, tmp_path, clock)
    assert len(futures(backend)) == 2 and dir_throttled(backend) == [1, 2]
    result = wf.cancel_execution(tmp_path, lambda: backend)
    assert result.status == "cancelled" and result.by == "here"
    assert futures(backend) == {} and dir_throttled(backend) == []


def test_a_dead_broker_pauses_the_log_dir_phase_and_execute_again_resumes(backend, clock, tmp_path):
    plan = ReassignmentPlan({TP("t", 0): (1, 2), TP("t", 2): (3, 1)},
                            {TP("t", 0): ("/disk3", "/disk1"), TP("t", 2): ("/disk2", "any")})
    request = {"log_dirs_throttle": MB, "poll_interval": 1.0}
    wf.start_execution(backend, plan, tmp_path, request, clock=clock.now)
    step(backend, tmp_path, clock)
    assert len(futures(backend)) == 3
    backend.cluster.stop_broker(2)
    status = step(backend, tmp_path, clock)
    assert status.ended and status.status == "paused"
    assert futures(backend) == {} and dir_throttled(backend) == []  # nothing copies unthrottled
    state = wf.open_store(tmp_path).load()
    assert {m.state for m in state.dir_moves} == {"pending"}
    backend.cluster.start_broker(2)
    wf.start_execution(backend, plan, tmp_path, request, clock=clock.now)  # execute again
    status = run_steps(backend, tmp_path, clock)
    assert status.status == "completed", status.message
    now = placement(backend)
    assert (now[TP("t", 0), 1], now[TP("t", 0), 2], now[TP("t", 2), 3]) == ("/disk3", "/disk1", "/disk2")
    assert dir_throttled(backend) == []


def test_verify_reports_moves_in_progress_and_keeps_throttles_until_done(backend, clock, tmp_path):
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): ("/disk3", "any")})
    wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": MB, "poll_interval": 1.0}, clock=clock.now)
    step(backend, tmp_path, clock)
    result = wf.verify_and_clear_throttles(backend, plan)
    assert result.log_dirs == {"t-0-1": "in_progress"} and not result.complete and not result.throttles_cleared
    assert "Reassignment of replica t-0-1 is still in progress." in result.messages
    assert dir_throttled(backend) == [1]
    run_steps(backend, tmp_path, clock)
    result = wf.verify_and_clear_throttles(backend, plan)
    assert result.complete and "Reassignment of replica t-0-1 completed successfully." in result.messages


def test_verify_with_a_broker_down_reports_it_and_still_clears_throttles(backend, clock, tmp_path):
    """A run paused because a broker died is made safe by verify + clear: the down broker cannot
    answer DescribeLogDirs, so its replicas read ``offline`` (not complete) while the live
    brokers are still verified and every throttle goes."""
    plan = ReassignmentPlan({TP("t", 0): (1, 2), TP("t", 2): (3, 1)},
                            {TP("t", 0): ("/disk3", "any"), TP("t", 2): ("/disk2", "any")})
    wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": MB, "poll_interval": 1.0},
                       clock=clock.now)
    run_steps(backend, tmp_path, clock)
    backend.cluster.stop_broker(3)
    result = wf.verify_and_clear_throttles(backend, plan)
    assert result.log_dirs == {"t-0-1": "completed", "t-2-3": "offline"} and not result.complete
    assert "Broker 3 is offline: the log dir of replica t-2-3 cannot be checked." in result.messages
    assert result.throttles_cleared and dir_throttled(backend) == []


def test_rerunning_a_finished_log_dir_plan_writes_nothing(backend, clock, tmp_path):
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): ("/disk3", "any")})
    request = {"log_dirs_throttle": MB, "poll_interval": 1.0, "elect_leaders": False}
    wf.start_execution(backend, plan, tmp_path, request, clock=clock.now)
    assert run_steps(backend, tmp_path, clock).status == "completed"
    writes = backend.writes
    wf.start_execution(backend, plan, tmp_path, request, clock=clock.now)
    assert run_steps(backend, tmp_path, clock).status == "completed"
    assert backend.writes == writes, "a rerun sent a log-dir move or a throttle"
    assert wf.final_report(tmp_path).report["log_dir_moves"]["already_in_place"] == 1


@pytest.mark.parametrize("dirs, message", [
    (("/disk9", "any"), "broker 1 has no log directory '/disk9'"),
    (("disk1", "any"), "neither \"any\" nor an absolute path"),
])
def test_bad_log_dirs_are_refused_before_anything_is_written(backend, clock, tmp_path, dirs, message):
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): dirs})
    with pytest.raises(ValidationError, match=message):
        wf.start_execution(backend, plan, tmp_path, clock=clock.now)
    assert backend.writes == 0 and wf.open_store(tmp_path).load() is None


def test_an_offline_target_directory_is_refused(backend, clock, tmp_path):
    backend.cluster.fail_log_dir(1, "/disk3")
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): ("/disk3", "any")})
    with pytest.raises(ValidationError, match="'/disk3' of broker 1 is offline"):
        wf.start_execution(backend, plan, tmp_path, clock=clock.now)
    assert backend.writes == 0


def test_fix_offline_moves_the_replicas_of_a_failed_directory(backend, clock, tmp_path):
    backend.cluster.fail_log_dir(1, "/disk0")
    snap = xcom(wf.read_cluster(backend, log_dirs=True))
    hit = {tp for (tp, b), d in placement(backend).items() if b == 1 and d == "/disk0"}
    assert hit and all(1 not in backend.cluster.partitions[tp].isr for tp in hit)
    proposal = xcom(wf.make_plan(snap, {"mode": "fix-offline"}))
    plan = proposal.reassignment()
    assert hit <= set(plan.replicas)
    wf.start_execution(backend, plan, tmp_path, {"allow_under_replicated": True, "poll_interval": 1.0},
                       clock=clock.now)
    assert run_steps(backend, tmp_path, clock).status == "completed"
    for tp in hit:
        p = backend.cluster.partitions[tp]
        assert 1 not in p.replicas and set(p.isr) == set(p.replicas), p
        assert all(backend.cluster.log_dirs.placement[tp, b] != "/disk0" or b != 1 for b in p.replicas)


@pytest.mark.parametrize("data, message", [
    ({"mode": "rebalance-disks", "disk_threshold": 0}, "disk_threshold must be in (0, 1]"),
    ({"mode": "rebalance-disks", "disk_band": 1.5}, "disk_band must be in [0, 1)"),
    ({"mode": "rebalance-disks", "disk_band": "x"}, "disk_band must be a number"),
    ({"mode": "rebalance", "disk_band": 0.1}, "disk_band does not apply to rebalance"),
])
def test_bad_rebalance_disks_requests(data, message):
    with pytest.raises(ValidationError) as e:
        wf.PlanRequest.from_dict(data)
    assert message in str(e.value)


def test_bad_log_dir_throttle_is_refused():
    with pytest.raises(ValidationError, match="log_dirs_throttle must be a positive"):
        wf.ExecutionRequest.from_dict({"log_dirs_throttle": 0})


def test_a_move_into_a_directory_too_small_fails_the_execution_and_clears_the_throttle(clock, tmp_path):
    """The copy outgrows the target directory: the directory fails (KAFKA_STORAGE_ERROR from
    then on), the move is reported failed, the replica stays where it was, no throttle stays."""
    dirs = (LogDir("/big", 1000 * MB), LogDir("/small", 30 * MB))
    brokers = [Broker(i, rack=f"r{i % 2}", log_dirs=dirs) for i in range(1, 4)]
    part = Partition("t", 0, (1, 2), 1, (1, 2), size_bytes=50 * MB, log_dirs=("/big", "/big"))
    backend = InProcessBackend.for_model(ClusterModel(brokers, [part]), clock=clock)
    plan = ReassignmentPlan({TP("t", 0): (1, 2)}, {TP("t", 0): ("/small", "any")})
    wf.start_execution(backend, plan, tmp_path, {"log_dirs_throttle": 5 * MB, "poll_interval": 1.0,
                                                 "elect_leaders": False}, clock=clock.now)
    status = run_steps(backend, tmp_path, clock)
    assert status.status == "failed" and "KAFKA_STORAGE_ERROR" in status.message, status.message
    assert not backend.cluster.log_dirs.dirs[1]["/small"].online
    assert placement(backend)[TP("t", 0), 1] == "/big" and 1 in backend.cluster.partitions[TP("t", 0)].isr
    assert dir_throttled(backend) == [] and futures(backend) == {}
    report = wf.final_report(tmp_path).report["log_dir_moves"]
    assert report["failed"] == 1 and "KAFKA_STORAGE_ERROR" in report["not_completed"]["t-0 on broker 1"]
