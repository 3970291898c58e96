"""The CLI against live clusters: `kafka-ops-emulator run` (python -m kafka_ops.emulator) in a
process of its own, and the planner reading state through the ZooKeeper backend and through the Admin API backend.

Everything crosses real process boundaries and real sockets, as an operator's shell would.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_ops.plan import ReassignmentPlan
from kafka_ops.snapshot import load_snapshot

KAFKA_OPS = str(Path(sys.executable).parent / "kafka-ops")
EMULATOR = [sys.executable, "-m", "kafka_ops.emulator"]  # its own program, not a kafka-ops command


def _start(*args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Run the emulator CLI; return it with what it printed up to its ready line."""
    process = subprocess.Popen(
        [*EMULATOR, "run", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    printed = {}
    for line in process.stdout:  # bounded: the process exits (EOF) if start-up fails
        key, _, value = line.partition(": ")
        printed[key] = value.strip()
        if key == "emulator ready":
            return process, printed
    raise AssertionError(f"emulator did not start: {process.stderr.read()}")


@pytest.fixture
def emulator_process(request) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    process, printed = _start(*request.param)
    try:
        yield process, printed
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()


def _plan(tmp_path: Path, *where: str) -> tuple[ReassignmentPlan, dict]:
    out = tmp_path / "plan.json"
    run = subprocess.run(
        [KAFKA_OPS, "plan", "rebalance", *where, "--output", str(out), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return ReassignmentPlan.read(out), json.loads(run.stdout)


SNAPSHOT = str(Path(__file__).parents[2] / "kafka_ops" / "examples" / "cluster.json")


def test_kraft_mode_refuses_zookeeper_and_zk_mode_needs_one():
    for args, message in (
        (["--mode", "kraft", "--embedded-zookeeper"], "--mode kraft runs without ZooKeeper (Kafka 4 has none)"),
        (["--mode", "zk"], "--mode zk needs --zookeeper or --embedded-zookeeper"),
    ):
        run = subprocess.run([*EMULATOR, "run", "--snapshot", SNAPSHOT, *args],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2
        assert run.stderr == f"error: {message}\n"


@pytest.mark.parametrize(
    "emulator_process", [("--mode", "kraft", "--snapshot", SNAPSHOT)], indirect=True
)
def test_planner_reads_a_kraft_cluster_through_the_admin_api(emulator_process, tmp_path):
    _, printed = emulator_process
    plan, summary = _plan(tmp_path, "--bootstrap-server", printed["bootstrap servers"])
    snapshot = load_snapshot(SNAPSHOT)
    plan.validate_against(snapshot)
    # Read live, the cluster has the snapshot's replicas (log sizes come from DescribeLogDirs;
    # the Admin API has no traffic rates), so the plan balances the same replica counts.
    goals = {g["name"]: g for g in summary["summary"]["goals"]}
    assert goals["replica_count"]["before"]["max_minus_min"] == 64
    assert goals["replica_count"]["after"]["max_minus_min"] <= 1
    assert summary["summary"]["replica_moves"] > 0


def test_planner_reads_a_zookeeper_mode_cluster(zk_connect, tmp_path):
    process, printed = _start("--zookeeper", zk_connect, "--wire", "--snapshot", SNAPSHOT)
    try:
        assert "bootstrap servers" in printed
        via_zk, _ = _plan(tmp_path, "--zookeeper", zk_connect)
        via_admin, _ = _plan(tmp_path, "--bootstrap-server", printed["bootstrap servers"])
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    # ZooKeeper holds no log sizes, so the plan may differ from the snapshot's; it is still
    # valid against the cluster it was read from.
    via_zk.validate_against(load_snapshot(SNAPSHOT))
    via_admin.validate_against(load_snapshot(SNAPSHOT))
