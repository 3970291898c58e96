"""JBOD end to end on both backends and the emulator: intra-broker balancing, a mixed plan, a
failed directory repaired. The ZooKeeper backend reads and moves log dirs over the brokers'
Admin API (as Kafka's reassign tool does), so its emulator serves both faces.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kafka_ops.backends.base import ConfigResource
from kafka_ops.backends.log_dirs import describe_cluster_with_log_dirs
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import Executor
from kafka_ops.executor.log_dirs import log_dir_moves
from kafka_ops.executor.options import ExecutionOptions
from kafka_ops.model import Broker, ClusterModel, LogDir, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner.disks import plan_fix_failed_dirs, plan_rebalance_disks
from kafka_ops.throttle import LOG_DIRS_RATE
from tests.integration.conftest import Emulated

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]

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


@contextmanager
def zookeeper_jbod(model: ClusterModel, zk_connect: str) -> Iterator[Emulated]:
    from kafka_ops.backends.zookeeper import ZooKeeperBackend
    from kafka_ops.emulator.runtime import Emulator

    clock = ManualClock()
    with Emulator(model, zookeeper=zk_connect, mode="zk", clock=clock, wire=True) as emulator:
        backend = ZooKeeperBackend(zk_connect, election_timeout_s=10.0)
        try:
            yield Emulated("zookeeper", backend, emulator.cluster, clock)
        finally:
            backend.close()


@contextmanager
def admin_jbod(model: ClusterModel, zk_connect: str, mode: str = "kraft") -> Iterator[Emulated]:
    """The Admin API backend on a KRaft cluster, or (mode "zk") on a ZooKeeper-mode Kafka."""
    from kafka_ops.backends.admin import AdminApiBackend
    from kafka_ops.emulator.runtime import Emulator

    clock = ManualClock()
    with Emulator(model, mode=mode, clock=clock, wire=True) as emulator:
        backend = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=15.0)
        try:
            yield Emulated(f"admin-{mode}", backend, emulator.cluster, clock)
        finally:
            backend.close()


@pytest.fixture(params=["zookeeper", "admin", "admin-zk"])
def jbod(request: pytest.FixtureRequest, zk_connect: str) -> Iterator[Emulated]:
    if request.param == "zookeeper":
        factory = zookeeper_jbod(jbod_cluster(), zk_connect)
    else:
        factory = admin_jbod(jbod_cluster(), zk_connect, "zk" if request.param == "admin-zk" else "kraft")
    with factory as e:
        yield e


def sleeper(e: Emulated):
    def sleep(seconds: float) -> None:
        e.advance(seconds)
        time.sleep(0.01)
    return sleep


def preset_throttle(e: Emulated, rate: int, brokers: list[int]) -> None:
    """Set the log-dir throttle and wait until the brokers apply it: over ZooKeeper a broker
    applies a dynamic config when its change notification arrives, a moment after the write
    (as in Kafka), and a move submitted before that would copy unthrottled."""
    for b in brokers:
        e.backend.alter_configs(ConfigResource.broker(b), {LOG_DIRS_RATE: str(rate)})
    e.wait_emulator(lambda c: all(c.broker_config(b).get(LOG_DIRS_RATE) == str(rate)
                                  for b in brokers), "log-dir throttle applied")


def no_log_dir_throttle(e: Emulated) -> bool:
    return all(LOG_DIRS_RATE not in e.backend.describe_configs(ConfigResource.broker(b))
               for b in range(1, 5))


def test_one_full_disk_is_balanced_inside_its_broker(jbod: Emulated):
    before = describe_cluster_with_log_dirs(jbod.backend)
    assert before.partition("t", 0).log_dirs == ("/disk0", "/disk0")
    result = plan_rebalance_disks(before, threshold=0.8, band=0.05)
    plan = ReassignmentPlan.from_json(result.plan.to_json())
    assert result.moves > 0 and all(len(plan.log_dirs[tp]) == len(r)
                                    for tp, r in plan.replicas.items())
    preset_throttle(jbod, 10 * MB, [1, 2, 3])
    options = ExecutionOptions(log_dirs_throttle=10 * MB, poll_interval=1.0, elect_leaders=False)
    report = Executor(jbod.backend, plan, options=options, clock=jbod.clock.now, sleep=sleeper(jbod)).run()
    assert report.status == "completed", report.message
    assert report.log_dirs is not None and report.log_dirs["counts"]["completed"] == result.moves
    assert report.elapsed >= result.moved_bytes / (3 * 10 * MB) - 1  # throttled, 3 brokers
    after = describe_cluster_with_log_dirs(jbod.backend)
    for p in after:
        assert p.replicas == before.partitions[p.tp].replicas  # no replica left its broker
        assert set(p.isr) == set(p.replicas)
    for b in (1, 2, 3):
        used = {d.path: 0 for d in DIRS}
        for p in after.partitions_on(b):
            used[p.log_dir_of(b)] += p.size_bytes
        mean = sum(used.values()) / 4
        assert all(abs(u - mean) <= 0.05 * 1000 * MB for u in used.values()), (b, used)
    assert no_log_dir_throttle(jbod)
    again = Executor(jbod.backend, plan, options=options, clock=jbod.clock.now, sleep=sleeper(jbod)).run()
    assert again.log_dirs is not None and again.log_dirs["already"] == result.moves  # rerun: nothing to do


def test_mixed_plan_runs_the_reassignment_then_the_log_dir_moves(jbod: Emulated):
    plan = ReassignmentPlan.from_json(
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[4,2],"log_dirs":["/disk2","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["/disk1","/disk3"]}]}')
    options = ExecutionOptions(throttle=50 * MB, log_dirs_throttle=5 * MB, poll_interval=1.0)
    report = Executor(jbod.backend, plan, options=options, clock=jbod.clock.now, sleep=sleeper(jbod)).run()
    assert report.status == "completed", report.message
    model = describe_cluster_with_log_dirs(jbod.backend)
    assert model.partition("t", 0).replicas == (4, 2)
    assert model.partition("t", 0).log_dirs == ("/disk2", "/disk0")
    assert model.partition("t", 1).log_dirs == ("/disk1", "/disk3")
    # The new replica on broker 4 was created in /disk2, never copied there afterwards.
    swaps = [e for e in jbod.cluster.events if e.kind == "log_dir_swapped" and e.broker == 4]
    assert swaps == []
    kinds = [e.kind for e in jbod.cluster.events if e.kind in ("reassignment_completed",
                                                               "log_dir_swapped")]
    assert kinds and kinds[-1] == "log_dir_swapped"
    assert no_log_dir_throttle(jbod)


def test_a_failed_directory_is_repaired(jbod: Emulated):
    jbod.cluster.fail_log_dir(1, "/disk0")
    # In ZooKeeper mode the controller acts on the broker's log_dir_event_notification: wait.
    deadline = time.monotonic() + 15
    broken = describe_cluster_with_log_dirs(jbod.backend)
    while any(1 in p.isr for p in broken if 1 in p.replicas):
        assert time.monotonic() < deadline, "replicas of the failed directory stayed in the ISR"
        time.sleep(0.05)
        broken = describe_cluster_with_log_dirs(jbod.backend)
    assert not broken.brokers[1].log_dir("/disk0").online and broken.brokers[1].alive
    hit = [p for p in broken if 1 in p.replicas]
    assert hit
    plan = plan_fix_failed_dirs(broken)
    assert set(plan.replicas) == {p.tp for p in hit}
    report = Executor(jbod.backend, plan, options=ExecutionOptions(poll_interval=1.0,
                                                                   allow_under_replicated=True),
                      clock=jbod.clock.now, sleep=sleeper(jbod)).run()
    assert report.status == "completed"
    fixed = describe_cluster_with_log_dirs(jbod.backend)
    for p in fixed:
        assert 1 not in p.replicas or p.tp not in plan.replicas
        assert set(p.isr) == set(p.replicas), p  # nothing under-replicated any more
        assert all(d is not None and d != "/disk0" or b != 1
                   for b, d in zip(p.replicas, p.log_dirs, strict=True))


def test_cli_plans_and_executes_rebalance_disks_over_the_admin_api(tmp_path, capsys):
    """`kafka-ops plan rebalance-disks` reads directories live, `kafka-ops execute` runs the
    log_dirs plan (throttled) and leaves no throttle; emulated time runs 50x real time."""
    from kafka_ops.backends.admin import AdminApiBackend
    from kafka_ops.cli import main
    from kafka_ops.emulator.clock import ScaledClock
    from kafka_ops.emulator.runtime import Emulator

    with Emulator(jbod_cluster(), mode="kraft", clock=ScaledClock(50), wire=True) as emulator:
        where = ["--bootstrap-server", emulator.bootstrap_servers]
        plan_file = tmp_path / "disks.json"
        assert main(["plan", "rebalance-disks", *where, "-o", str(plan_file)]) == 0
        assert "intra-broker moves" in capsys.readouterr().out
        plan = ReassignmentPlan.read(plan_file)
        assert plan.log_dirs
        assert main(["execute", str(plan_file), *where, "--no-progress", "--poll-interval", "0.2",
                     "--state-dir", str(tmp_path / "state"),
                     "--replica-alter-log-dirs-throttle", str(50 * MB)]) == 0
        out = capsys.readouterr().out
        moves = len(log_dir_moves(plan))
        assert f"log-dir moves: {moves} moved" in out
        assert main(["status", "--state-dir", str(tmp_path / "state")]) == 0
        assert f"log-dir moves: completed {moves}" in capsys.readouterr().out
        assert main(["verify", str(plan_file), *where]) == 0
        out = capsys.readouterr().out
        assert out.count("completed successfully") >= moves and "Clearing broker-level throttles" in out
        backend = AdminApiBackend(emulator.bootstrap_servers, request_timeout_s=15.0)
        try:
            model = describe_cluster_with_log_dirs(backend)
            for tp, dirs in plan.log_dirs.items():
                for b, d in zip(plan.replicas[tp], dirs, strict=True):
                    assert d == "any" or model.partitions[tp].log_dir_of(b) == d
            assert all(LOG_DIRS_RATE not in backend.describe_configs(ConfigResource.broker(b))
                       for b in range(1, 5))
        finally:
            backend.close()


def test_cancel_drops_the_future_replicas_and_the_throttle(jbod: Emulated):
    before = describe_cluster_with_log_dirs(jbod.backend)
    plan = ReassignmentPlan({TP("t", 0): (1, 2), TP("t", 3): (1, 2)},
                            {TP("t", 0): ("/disk3", "any"), TP("t", 3): ("/disk2", "any")})
    preset_throttle(jbod, MB, [1])
    executor = Executor(jbod.backend, plan, options=ExecutionOptions(log_dirs_throttle=MB, poll_interval=1.0),
                        clock=jbod.clock.now)
    seen = []

    def sleep(seconds: float) -> None:
        jbod.advance(seconds)
        futures = jbod.backend.describe_log_dirs([1])[1].futures
        seen.append(set(futures))
        if set(futures) == {TP("t", 0), TP("t", 3)}:  # copying, 1 MB/s: far from done
            executor.request_cancel()

    executor.sleep = sleep
    report = executor.run()
    assert report.status == "cancelled" and {TP("t", 0), TP("t", 3)} in seen
    assert report.log_dirs is not None and report.log_dirs["counts"]["cancelled"] == 2
    jbod.advance(120)  # long enough for both copies, had they not been dropped
    after = jbod.backend.describe_log_dirs([1])[1]
    assert after.futures == {}
    for tp in (TP("t", 0), TP("t", 3)):
        assert after.replicas[tp] == before.partitions[tp].log_dir_of(1)
    assert no_log_dir_throttle(jbod)


def test_zookeeper_mode_reads_log_dirs_from_brokers_behind_sasl(zk_connect, caplog):
    """ZooKeeper holds no log directories: the ZooKeeper backend asks the brokers' Admin API,
    with the client security settings of the connection (here SASL/PLAIN), like Kafka's
    reassign tool with --command-config; the password stays out of logs."""
    import logging

    from kafka_ops.backends.connection import ClusterConnection, connect
    from kafka_ops.emulator.runtime import Emulator

    password = "jb0d-Secr3t"
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "admin", "sasl.password": password}
    caplog.set_level(logging.DEBUG)
    with Emulator(jbod_cluster(), zookeeper=zk_connect, mode="zk", clock=ManualClock(), wire=True,
                  sasl_plain_users={"admin": password}) as emulator:
        backend = connect(ClusterConnection(zookeeper=zk_connect, security=sasl))
        try:
            described = backend.describe_log_dirs([1])  # type: ignore[attr-defined]
            assert [d.path for d in described[1].dirs] == [d.path for d in DIRS]
            assert described[1].replicas[TP("t", 0)] == "/disk0"
            answers = backend.alter_replica_log_dirs({(TP("t", 0), 1): "/disk1"})  # type: ignore[attr-defined]
            assert answers == {(TP("t", 0), 1): None}
            emulator.cluster.tick()
            assert emulator.cluster.log_dirs.placement[TP("t", 0), 1] == "/disk1"
        finally:
            backend.close()
    assert password not in caplog.text and password not in repr(backend)


def test_emulator_cli_fails_a_log_dir_and_fix_offline_repairs_it(zk_connect, tmp_path):
    """`kafka-ops-emulator fault fail-log-dir` on a running emulator (own process): the
    directory goes offline, its replicas leave the ISRs (seen in ZooKeeper), DescribeLogDirs
    answers KAFKA_STORAGE_ERROR for it; then the workflow's fix-offline plan moves those
    replicas to healthy brokers and directories."""
    import json
    import subprocess
    import sys

    from kafka_ops import workflow as wf
    from kafka_ops.backends.zookeeper import ZooKeeperBackend
    from kafka_ops.snapshot import model_to_dict

    emulator = [sys.executable, "-m", "kafka_ops.emulator"]  # its own program
    snapshot = tmp_path / "jbod.json"
    snapshot.write_text(json.dumps(model_to_dict(jbod_cluster())))
    control = str(tmp_path / "control.sock")
    process = subprocess.Popen(
        [*emulator, "run", "--zookeeper", zk_connect, "--snapshot", str(snapshot), "--wire",
         "--speed", "20", "--control-socket", control],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fault(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*emulator, "fault", "--control-socket", control, *args],
                              capture_output=True, text=True, timeout=60)

    backend = None
    try:
        while not (line := process.stdout.readline()).startswith("emulator ready"):  # type: ignore[union-attr]
            assert line, process.stderr.read()  # type: ignore[union-attr]
        backend = ZooKeeperBackend(zk_connect, election_timeout_s=10.0)
        hosted = {p.tp for p in backend.describe_cluster() if 1 in p.replicas}
        refused = fault("fail-log-dir", "1", "/nowhere")
        assert (refused.returncode, refused.stderr) == (
            2, "error: fault refused: broker 1 has no log directory '/nowhere'\n")
        done = fault("fail-log-dir", "1", "/disk0")
        assert (done.returncode, done.stdout) == (0, "fail-log-dir 1 /disk0: done\n")
        deadline = time.monotonic() + 30
        while any(1 in p.isr for p in backend.describe_cluster() if p.tp in hosted):
            assert time.monotonic() < deadline, "replicas of the failed directory stayed in the ISR"
            time.sleep(0.1)
        described = backend.describe_log_dirs([1])[1]
        assert not next(d for d in described.dirs if d.path == "/disk0").online
        snap = wf.read_cluster(backend, log_dirs=True)
        plan = wf.make_plan(snap, {"mode": "fix-offline"}).reassignment()
        assert hosted <= set(plan.replicas) and all(1 not in plan.replicas[tp] for tp in hosted)
        wf.start_execution(backend, plan, tmp_path / "state", {"allow_under_replicated": True,
                                                               "poll_interval": 0.2})
        status = wf.execution_progress(tmp_path / "state")
        deadline = time.monotonic() + 120
        while not status.ended:
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
            status = wf.step_execution(backend, tmp_path / "state")
        assert status.status == "completed", status.message
        after = backend.describe_cluster()
        for tp in hosted:
            p = after.partitions[tp]
            assert 1 not in p.replicas and set(p.isr) == set(p.replicas), p
    finally:
        if backend is not None:
            backend.close()
        process.terminate()
        process.wait(timeout=30)


def test_zookeeper_mode_a_failed_dir_reaches_the_controller_through_log_dir_event_notification(zk_connect):
    """Kafka's ZooKeeper mode: the broker writes /log_dir_event_notification/log_dir_event_N,
    the controller takes the replicas offline (the ISR in the partition state znodes shrinks)
    and deletes the notification. A notification written by hand (as a broker would) is
    processed and deleted too."""
    import json
    import re

    from kazoo.client import KazooClient

    events = "/log_dir_event_notification"
    with zookeeper_jbod(jbod_cluster(), zk_connect) as e:
        zk = KazooClient(hosts=zk_connect)
        zk.start(timeout=15)
        try:
            hosted = [p.tp for p in e.backend.describe_cluster() if 1 in p.replicas]
            before = zk.exists(events).cversion
            e.cluster.fail_log_dir(1, "/disk0")

            def isr(tp: TopicPartition) -> list[int]:
                data, _ = zk.get(f"/brokers/topics/{tp.topic}/partitions/{tp.partition}/state")
                return json.loads(data)["isr"]

            def settled(changes: int) -> bool:
                stat = zk.exists(events)
                return stat.cversion - before >= changes and stat.numChildren == 0

            deadline = time.monotonic() + 15
            while any(1 in isr(tp) for tp in hosted) or not settled(2):
                assert time.monotonic() < deadline, [isr(tp) for tp in hosted]
                time.sleep(0.05)
            assert zk.exists(events).cversion - before == 2  # one notification: created, deleted
            # A notification as a broker writes it: read, acted on (nothing more offline), deleted.
            path = zk.create(events + "/log_dir_event_", b'{"version":1,"broker":1,"event":1}', sequence=True)
            assert re.fullmatch(events + r"/log_dir_event_\d{10}", path)
            deadline = time.monotonic() + 15
            while not settled(4):
                assert time.monotonic() < deadline, "the controller left the notification"
                time.sleep(0.05)
            assert all(1 not in isr(tp) for tp in hosted)
        finally:
            zk.stop()
            zk.close()
