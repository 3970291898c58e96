"""Fault injection: the executor (a real ``kafka-ops execute`` process) against the emulator on
a real ZooKeeper, while things go wrong: the executor SIGKILLed or frozen (SIGSTOP), a broker
stopped, ZooKeeper frozen past the session timeout or restarted, a controller failover, and a
cancel at random points.

The scenarios that are not about ZooKeeper run on both backends: ZooKeeper mode (kazoo) and
KRaft through the Admin API (confluent-kafka and kafka-python over real sockets).

Every check is made through the cluster's own interfaces — the znodes via our ZooKeeper backend
and the emulator's own state — never through the executor's internals:
- during the run, a monitor samples every partition: its in-sync replicas never drop below its
  replication factor, except for replicas on a broker the test itself stopped;
- at the end: no throttle left, no reassignment running, every partition at its plan target
  (or, after a cancel, at its target or its original replicas), none under-replicated.

The emulator runs on a scaled clock (20 emulated seconds per second), so a 400 MB move at the
10 MB/s throttle takes about 2 s of wall time: long enough to hit a run mid-way. Its own
ZooKeeper server, so freezing and restarting it disturbs no other test.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.cluster_state import safety_violations
from kafka_ops.testing.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]

MB = 1_000_000
SPEED = 20.0
THROTTLE = 10 * MB
PAIRS = [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (3, 2)]
ORIGINAL = {TP("orders", p): r for p, r in enumerate(PAIRS)}
PLAN = ReassignmentPlan.from_assignment({
    TP("orders", 0): (4, 1), TP("orders", 1): (5, 2), TP("orders", 2): (6, 3),
    TP("orders", 3): (4, 3), TP("orders", 4): (5, 1), TP("orders", 5): (6, 2),
})
RF = {tp: 2 for tp in PLAN.replicas}


def model() -> ClusterModel:
    capacity = BrokerCapacity(10**12, 100 * MB, 100 * MB)
    brokers = [Broker(i, rack=f"r{i % 3}", capacity=capacity) for i in range(1, 7)]
    parts = [Partition("orders", p, r, r[0], r, size_bytes=400 * MB) for p, r in enumerate(PAIRS)]
    return ClusterModel(brokers, parts)


@pytest.fixture(scope="module")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        if server.frozen:
            server.thaw()
        server.cleanup()


@dataclass
class Env:
    zk: ZooKeeperServer
    connect: str
    emulator: Emulator
    tmp: Path
    kind: str  # "zookeeper" (ZooKeeper mode, kazoo) or "admin" (KRaft, the Admin API)
    stopped: set[int] = field(default_factory=set)  # brokers the test stopped on purpose
    violations: list[str] = field(default_factory=list)

    @property
    def cluster(self):
        return self.emulator.cluster

    def plan_path(self) -> Path:
        path = self.tmp / "plan.json"
        if not path.exists():
            PLAN.write(path)
        return path

    def cli(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "kafka_ops.cli", *argv]

    def cluster_args(self) -> list[str]:
        if self.kind == "zookeeper":
            return ["--zookeeper", self.connect]
        return ["--bootstrap-server", self.emulator.bootstrap_servers]

    def backend(self):
        if self.kind == "zookeeper":
            return ZooKeeperBackend(self.connect, election_timeout_s=10.0)
        return AdminApiBackend(self.emulator.bootstrap_servers, request_timeout_s=15.0)

    def execute_cmd(self) -> list[str]:
        return self.cli("execute", str(self.plan_path()), *self.cluster_args(),
                        "--state-dir", str(self.tmp / "state"), "--throttle", str(THROTTLE),
                        "--max-in-flight", "2", "--poll-interval", "0.2", "--no-progress")

    def start_execute(self) -> subprocess.Popen:
        return subprocess.Popen(self.execute_cmd(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def run(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)

    def started(self) -> int:
        return sum(1 for e in list(self.cluster.events) if e.kind == "reassignment_started")

    def moving(self) -> bool:
        return bool(self.cluster.list_reassignments())

    def replicas(self) -> dict[TP, tuple[int, ...]]:
        m = self.cluster.to_model()
        return {tp: m.partitions[tp].replicas for tp in PLAN.replicas}

    def final_checks(self, allowed: Callable[[TP, tuple[int, ...]], bool]) -> None:
        """Through the cluster's own interfaces: the znodes (our backend) and the emulator."""
        assert self.violations == [], self.violations[:5]
        backend = self.backend()
        try:
            deadline = time.monotonic() + 30  # the emulator's znodes trail its state a little
            while (problems := safety_violations(backend, RF)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert problems == [], problems
            model = backend.describe_cluster()
            for tp in PLAN.replicas:
                assert allowed(tp, model.partitions[tp].replicas), (tp, model.partitions[tp])
                assert not model.partitions[tp].reassignment_in_progress
        finally:
            backend.close()


def wait_true(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


def monitor(env: Env, stop: threading.Event) -> None:
    """Every 50 ms: no partition with fewer in-sync replicas than its RF, beyond replicas on
    brokers the test stopped (those are the fault, not the executor's doing)."""
    while not stop.wait(0.05):
        m = env.cluster.to_model()
        for tp, rf in RF.items():
            p = m.partitions[tp]
            excused = sum(1 for r in set(p.replicas) if r in env.stopped)
            if len(set(p.isr)) < rf - excused:
                env.violations.append(f"{tp}: isr {p.isr} of replicas {p.replicas}")


def _env(kind: str, zk_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Env]:
    connect = f"{zk_server.connect_string}/faults-{uuid.uuid4().hex[:8]}"
    if kind == "zookeeper":
        emulator = Emulator(model(), zookeeper=connect, mode="zk", speed=SPEED).start()
    else:
        emulator = Emulator(model(), mode="kraft", speed=SPEED, wire=True).start()
    e = Env(zk_server, connect, emulator, tmp_path, kind)
    stop = threading.Event()
    watcher = threading.Thread(target=monitor, args=(e, stop), daemon=True)
    watcher.start()
    try:
        yield e
    finally:
        stop.set()
        watcher.join(5)
        if zk_server.frozen:
            zk_server.thaw()
        emulator.stop()


@pytest.fixture(params=["zookeeper", "admin"])
def env(request: pytest.FixtureRequest, zk_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Env]:
    """Both backends: ZooKeeper mode through kazoo, KRaft through the Admin API."""
    yield from _env(request.param, zk_server, tmp_path)


@pytest.fixture
def zk_env(zk_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Env]:
    """ZooKeeper faults concern the ZooKeeper backend only."""
    yield from _env("zookeeper", zk_server, tmp_path)


def mid_run(env: Env, proc: subprocess.Popen, moves_started: int = 2) -> None:
    def ready() -> bool:
        assert proc.poll() is None, proc.communicate()
        return env.started() >= moves_started and env.moving()
    wait_true(ready, f"{moves_started} moves started, one in flight")


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"executor did not finish within {timeout:g}s: {err[-2000:]}")
    assert "Traceback" not in err, err[-3000:]
    return proc.returncode, out, err


def at_plan(tp: TP, replicas: tuple[int, ...]) -> bool:
    return replicas == PLAN.replicas[tp]


def at_plan_or_original(tp: TP, replicas: tuple[int, ...]) -> bool:
    """After a cancel: the target, or the original replica SET. Kafka's cancel restores the
    original replicas in the in-flight list's order (RS minus AR, RS = TRS ++ ORS), so the
    order, and with it the preferred leader, may differ from before the run."""
    return replicas == PLAN.replicas[tp] or sorted(replicas) == sorted(ORIGINAL[tp])


def rerun_until_done(env: Env, first_code: int, err: str) -> None:
    """A paused (exit 3) or unfinished (exit 1) run is resumed by running the same command
    again, as an operator would; the final state is what the test checks."""
    code = first_code
    for _ in range(3):
        if code == 0:
            return
        assert code in (1, 3), f"exit {code}: {err[-2000:]}"
        result = env.run(env.execute_cmd())
        code, err = result.returncode, result.stdout + result.stderr
        assert "Traceback" not in err, err[-3000:]
    assert code == 0, err[-2000:]


# -- the scenarios ----------------------------------------------------------------------------
def test_executor_sigkilled_mid_run_resumes_to_the_plan(env: Env) -> None:
    proc = env.start_execute()
    mid_run(env, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    result = env.run(env.execute_cmd())
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    env.final_checks(at_plan)


def test_executor_frozen_holds_its_lock_and_finishes_when_thawed(env: Env) -> None:
    proc = env.start_execute()
    mid_run(env, proc)
    proc.send_signal(signal.SIGSTOP)
    try:
        second = env.run(env.execute_cmd(), timeout=60)
        assert second.returncode == 2 and second.stderr.count("error:") == 1, second.stderr
        assert "another kafka-ops executor is running" in second.stderr
        time.sleep(2)  # frozen for a while: replication goes on without it
    finally:
        proc.send_signal(signal.SIGCONT)
    code, _, err = finish(proc)
    rerun_until_done(env, code, err)
    env.final_checks(at_plan)


def test_broker_stopped_mid_run_pauses_without_losing_a_replica_then_resumes(env: Env) -> None:
    proc = env.start_execute()
    mid_run(env, proc)
    moving_to = {b for _, adding, _ in env.cluster.list_reassignments().values()
                 for b in adding} or {4}  # a broker receiving a replica right now
    victim = min(moving_to)
    env.stopped.add(victim)
    stopped_at = time.monotonic()
    env.cluster.stop_broker(victim)
    code, _, err = finish(proc)
    print(f"{env.kind}: broker {victim} stopped -> executor exit {code} after "
          f"{time.monotonic() - stopped_at:.1f}s")
    assert code in (0, 3), (code, err[-2000:])  # paused (3), unless it was already done
    env.cluster.start_broker(victim)
    wait_true(lambda: all(set(p.isr) == set(p.replicas)
                          for p in env.cluster.to_model().partitions.values()
                          if victim in p.replicas), "the broker back in sync", timeout=60)
    env.stopped.discard(victim)
    rerun_until_done(env, code, err)
    env.final_checks(at_plan)


def test_zookeeper_frozen_past_the_session_timeout(zk_env: Env) -> None:
    """Frozen longer than the executor's 18 s session: the session expires when ZooKeeper
    comes back. The executor must reconnect and continue (or pause safely), not crash."""
    env = zk_env
    proc = env.start_execute()
    mid_run(env, proc)
    env.zk.freeze()
    try:
        time.sleep(22)  # the fault itself: ZooKeeper hung past the session timeout
    finally:
        env.zk.thaw()
    code, out, err = finish(proc, timeout=180)
    print(f"first run: exit {code}\n{out[-1500:]}{err[-1500:]}")
    assert "SessionExpired" not in err and code in (0, 3), (code, err[-2000:])
    rerun_until_done(env, code, err)
    env.final_checks(at_plan)


def test_zookeeper_restarted_mid_run(zk_env: Env) -> None:
    env = zk_env
    proc = env.start_execute()
    mid_run(env, proc)
    env.zk.restart()
    code, _, err = finish(proc, timeout=180)
    assert code in (0, 3), (code, err[-2000:])
    rerun_until_done(env, code, err)
    env.final_checks(at_plan)


def test_controller_failover_mid_run(env: Env) -> None:
    proc = env.start_execute()
    mid_run(env, proc)
    before = env.cluster.controller_id
    env.cluster.stop_broker(before)  # the controller dies: another broker takes over
    env.stopped.add(before)
    wait_true(lambda: env.cluster.controller_id not in (before, -1), "a new controller")
    env.cluster.start_broker(before)
    wait_true(lambda: all(set(p.isr) == set(p.replicas)
                          for p in env.cluster.to_model().partitions.values()
                          if before in p.replicas), "the old controller back in sync", timeout=60)
    env.stopped.discard(before)
    code, _, err = finish(proc)
    rerun_until_done(env, code, err)
    env.final_checks(at_plan)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cancel_at_a_random_point(env: Env, seed: int) -> None:
    rng = random.Random(seed)
    proc = env.start_execute()
    mid_run(env, proc, moves_started=rng.randint(1, 5))
    time.sleep(rng.uniform(0, 1.5))
    cancel = env.run(env.cli("cancel", *env.cluster_args(), "--state-dir",
                             str(env.tmp / "state"), "--wait", "90"))
    code, _, err = finish(proc)
    assert "Traceback" not in cancel.stderr
    if cancel.returncode == 2:  # the run finished first: nothing to cancel
        assert "nothing to cancel" in cancel.stderr and code == 0, cancel.stderr
        env.final_checks(at_plan)
        return
    assert cancel.returncode == 4 and code == 4, (cancel.returncode, cancel.stderr, code, err)
    env.final_checks(at_plan_or_original)
