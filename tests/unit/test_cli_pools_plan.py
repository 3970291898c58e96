"""``kafka-ops pools ...`` and ``kafka-ops plan ...``: output, exit codes, and that bad input
writes nothing. Driven through cli.main() (the console script's entry point) on the bundled
example cluster; one test runs the installed console script in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_ops.cli import main
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.snapshot import load_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "kafka_ops" / "examples"
CLUSTER = str(EXAMPLES / "cluster.json")
POOLS = str(EXAMPLES / "pools.yaml")
BASE = ["--cluster", CLUSTER, "--pools", POOLS]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fail(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run a command that must fail: exit 2, nothing on stdout, one line on stderr."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture
def plan_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "plan.json"
    assert run(capsys, "pools", "migrate", *BASE, "--pool", "payments", "-o", str(path))[0] == 0
    return path


# -- pools -----------------------------------------------------------------------------------
def test_pools_validate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pools", "validate", *BASE)
    assert code == 0 and out.startswith("pools OK: 3 pools;")
    code, out, _ = run(capsys, "pools", "validate", *BASE, "--json")
    report = json.loads(out)
    assert report["valid"] is True and report["misplaced_partitions"] > 0


def test_pools_show_json_accounts_for_every_topic(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pools", "show", *BASE, "--json")
    report = json.loads(out)
    cluster = load_snapshot(CLUSTER)
    listed = [t for p in report["pools"] for t in p["topics"]] + report["unpooled_topics"]
    assert sorted(listed) == sorted(cluster.topics)
    payments = next(p for p in report["pools"] if p["name"] == "payments")
    assert payments["brokers"] == [1, 2, 3] and "ledger" in payments["topics"]
    assert report["default_pool"] == "shared"
    code, out, _ = run(capsys, "pools", "show", *BASE)
    assert code == 0 and "shared (default)" in out


def test_pools_assign_new_topic(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["pools", "assign", *BASE, "--topic", "payments.chargebacks", "--partitions", "3"]
    argv += ["--replication-factor", "3", "--start-index", "0"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and json.loads(out) == {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}
    code, out, _ = run(capsys, *argv)
    assert "in pool 'payments'" in out and out.rstrip().endswith(
        "--replica-assignment 1:2:3,2:3:1,3:1:2"
    )


def test_pools_assign_new_partitions_lists_the_whole_topic_for_kafka_topics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["pools", "assign", *BASE, "--topic", "payments.refunds", "--partitions", "8"]
    new = json.loads(run(capsys, *argv, "--json")[1])
    assert sorted(new) == ["6", "7"] and all(set(r) <= {1, 2, 3} for r in new.values())
    text = run(capsys, *argv)[1].rstrip().splitlines()[-1]
    assert len(text.split()[1].split(",")) == 8


def test_pools_migrate_writes_plan_and_rollback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan, rollback = tmp_path / "plan.json", tmp_path / "rollback.json"
    argv = ["pools", "migrate", *BASE, "--pool", "payments", "-o", str(plan)]
    code, out, _ = run(capsys, *argv, "--rollback-output", str(rollback))
    assert code == 0 and "migrate 25 partitions" in out and "replica moves" in out
    cluster = load_snapshot(CLUSTER)
    p, r = ReassignmentPlan.read(plan), ReassignmentPlan.read(rollback)
    assert r.replicas == {tp: cluster.partitions[tp].replicas for tp in p.replicas}
    assert all(set(reps) <= {1, 2, 3} for reps in p.replicas.values())
    assert sorted(f.name for f in tmp_path.iterdir()) == ["plan.json", "rollback.json"]


def test_pools_migrate_json_and_nothing_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pools", "migrate", *BASE, "--pool", "analytics", "--json")
    assert code == 0 and json.loads(out) == {"pool": "analytics", "plan": None}
    out = run(
        capsys, "pools", "migrate", *BASE, "--pool", "payments", "--topic", "ledger", "--json"
    )[1]
    data = json.loads(out)
    assert [e["topic"] for e in data["plan"]["partitions"]] == ["ledger"] * 3
    assert data["summary"]["totals"]["partitions_changed"] == 3


def _bad_pools(tmp_path: Path, text: str) -> list[str]:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    return ["--cluster", CLUSTER, "--pools", str(f)]


@pytest.mark.parametrize(
    ("pools_text", "message"),
    [
        ("pools: {a: {brokers: [1, 2]}, b: {brokers: [2]}}", "broker 2 is in two pools"),
        ("pools: {a: {brokers: [1, 99]}}", "pool 'a': broker 99 is not in the cluster"),
        ("pools: {a: {brokers: []}}", "pool 'a' has no brokers"),
        (
            "pools: {a: {brokers: [1, 2, 3], topic_patterns: ['pay.*']}, b: {brokers: [4, 5, 6], "
            "topic_patterns: ['.*orders']}}",
            "topic 'payments.orders' matches the patterns of pools 'a' and 'b'",
        ),
        (
            "pools: {a: {brokers: [1, 2], topics: [ledger]}}",
            "topic 'ledger' has replication factor 3",
        ),
        ("pools: {a: {brokers: [1], topic_patterns: ['[']}}", "bad topic pattern '['"),
        ("pools: [", "is not valid YAML"),
    ],
)
def test_bad_pools_file_fails_every_pools_command_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pools_text: str, message: str
) -> None:
    base = _bad_pools(tmp_path, pools_text)
    out = tmp_path / "plan.json"
    for argv in (
        ["pools", "validate", *base],
        ["pools", "show", *base, "--json"],
        [
            "pools",
            "assign",
            *base,
            "--topic",
            "x",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
        ["pools", "migrate", *base, "--pool", "a", "-o", str(out)],
    ):
        assert message in fail(capsys, *argv)
    assert not out.exists()


def test_bad_migrate_and_assign_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, rb = tmp_path / "p.json", tmp_path / "r.json"
    files = ["-o", str(out), "--rollback-output", str(rb)]
    migrate = ["pools", "migrate", *BASE]
    assert "unknown pool 'gold'" in fail(capsys, *migrate, "--pool", "gold", *files)
    assert "unknown topic 'ghost'" in fail(
        capsys, *migrate, "--pool", "payments", "--topic", "ghost", *files
    )
    assert "belongs to pool 'analytics', not 'payments'" in fail(
        capsys, *migrate, "--pool", "payments", "--topic", "clickstream", *files
    )
    assert "must be different files" in fail(
        capsys, *migrate, "--pool", "payments", "-o", str(out), "--rollback-output", str(out)
    )
    assert "does not exist" in fail(  # refused while parsing, before any work
        capsys,
        *migrate,
        "--pool",
        "payments",
        "-o",
        str(out),
        "--rollback-output",
        str(tmp_path / "no" / "r"),
    )
    assert list(tmp_path.iterdir()) == []
    assign = ["pools", "assign", *BASE, "--topic", "payments.x", "--partitions", "3"]
    assert "Replication factor: 4 larger than available brokers: 3." in fail(
        capsys, *assign, "--replication-factor", "4"
    )
    assert "needs a replication factor" in fail(capsys, *assign)


def test_missing_or_malformed_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot read cluster snapshot" in fail(
        capsys, "pools", "validate", "--cluster", str(tmp_path / "none.json"), "--pools", POOLS
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "is not valid JSON" in fail(
        capsys, "pools", "show", "--cluster", str(bad), "--pools", POOLS
    )


# -- plan ------------------------------------------------------------------------------------
def test_plan_show_without_and_with_cluster(
    plan_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "plan", "show", str(plan_file))
    assert code == 0 and out.rstrip().endswith("25 partitions of 4 topics")
    data = json.loads(run(capsys, "plan", "show", str(plan_file), "--json")[1])
    assert {b["broker"] for b in data["brokers"]} == {1, 2, 3}
    code, out, _ = run(capsys, "plan", "show", str(plan_file), "--cluster", CLUSTER, "--json")
    summary = json.loads(out)["summary"]
    assert len(summary["brokers"]) == 9 and summary["totals"]["partitions_changed"] == 25


def test_plan_diff(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "diff", str(plan_file), "--cluster", CLUSTER, "--json")
    diff = json.loads(out)
    assert code == 0 and diff["totals"]["replica_moves"] == sum(
        len(p["added"]) for p in diff["partitions"]
    )
    assert all(b["replicas_in"] == 0 for b in diff["brokers"] if b["broker"] > 3)
    out = run(capsys, "plan", "diff", str(plan_file), "--cluster", CLUSTER)[1]
    assert "bytes to move" in out and "replica moves" in out


def test_plan_validate(plan_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "plan", "validate", str(plan_file), "--cluster", CLUSTER, "--pools", POOLS
    )
    assert code == 0 and out.startswith("plan OK: 25 partitions")
    data = json.loads(run(capsys, "plan", "validate", str(plan_file), "--json")[1])
    assert data == {"valid": True, "partitions": 25, "checked": ["Kafka's rules"]}


def test_plan_rollback(plan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "rollback", str(plan_file), "--cluster", CLUSTER)
    assert code == 0
    rollback = ReassignmentPlan.from_json(out)
    cluster = load_snapshot(CLUSTER)
    assert rollback.replicas == {tp: cluster.partitions[tp].replicas for tp in rollback.replicas}
    target = tmp_path / "rb.json"
    run(capsys, "plan", "rollback", str(plan_file), "--cluster", CLUSTER, "-o", str(target))
    assert ReassignmentPlan.read(target) == rollback


@pytest.mark.parametrize(
    ("plan_text", "message"),
    [
        ("{oops", "reassignment JSON is malformed"),
        ('{"version":1,"partitions":[]}', "Partition reassignment list cannot be empty"),
        (
            '{"partitions":[{"topic":"ledger","partition":0,"replicas":[1,1,2]}]}',
            "ledger-0 contains multiple entries for 1",
        ),
        (
            '{"partitions":[{"topic":"ledger","partition":0,"replicas":[1,2,42]}]}',
            "Unknown broker id 42",
        ),
        (
            '{"partitions":[{"topic":"ledger","partition":9,"replicas":[1]}]}',
            "non-existent partitions: ledger-9",
        ),
        (
            '{"partitions":[{"topic":"ledger","partition":0,"replicas":[1,2,3,4,5,6,7,8,9,10]}]}',
            "Unknown broker id 10",
        ),
    ],
)
def test_bad_plans_fail_every_plan_command_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plan_text: str, message: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(plan_text)
    out = tmp_path / "rollback.json"
    for argv in (
        ["plan", "diff", str(path), "--cluster", CLUSTER],
        ["plan", "validate", str(path), "--cluster", CLUSTER],
        ["plan", "show", str(path), "--cluster", CLUSTER],
        ["plan", "rollback", str(path), "--cluster", CLUSTER, "-o", str(out)],
    ):
        assert message in fail(capsys, *argv)
    assert not out.exists()


def test_plan_validate_with_pools_rejects_replicas_outside_the_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{"partitions":[{"topic":"ledger","partition":0,"replicas":[1,2,7]}]}')
    err = fail(capsys, "plan", "validate", str(path), "--cluster", CLUSTER, "--pools", POOLS)
    assert "ledger-0 would have a replica on broker 7, outside its pool 'payments'" in err


def test_demo_script_writes_plan_and_rollback(tmp_path: Path) -> None:
    """The README's first command (without its setup step) runs end to end."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "KAFKA_OPS_ARTIFACTS": str(tmp_path)}
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "demo_cli.sh"), "--no-setup"],
        capture_output=True,
        text=True,
        timeout=280,  # a hang guard only: a loaded 2-core machine needs well over a minute
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "plan OK: 25 partitions" in proc.stdout
    plan = ReassignmentPlan.read(tmp_path / "payments-plan.json")
    rollback = ReassignmentPlan.read(tmp_path / "payments-rollback.json")
    assert plan.partitions == rollback.partitions and len(plan) == 25


def test_console_script_exit_code(tmp_path: Path) -> None:
    """The installed entry point, in a real process: exit 2 and one line on bad input."""
    exe = shutil.which("kafka-ops", path=str(Path(sys.executable).parent))
    assert exe is not None
    bad = tmp_path / "plan.json"
    bad.write_text('{"partitions":[{"topic":"ledger","partition":0,"replicas":[1,1]}]}')
    proc = subprocess.run(
        [exe, "plan", "validate", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(
        "error: Partition replica lists may not contain duplicate entries"
    )
    ok = subprocess.run(
        [exe, "pools", "validate", *BASE], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0 and ok.stdout.startswith("pools OK")
