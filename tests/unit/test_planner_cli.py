"""``kafka-ops plan <mode>``: files written, JSON output, clear errors (through cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_ops.cli import main
from kafka_ops.generator import generate_cluster
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.snapshot import load_snapshot, save_snapshot


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    save_snapshot(generate_cluster("small", seed=0), path)
    return path


def test_rebalance_writes_plan_and_rollback(snapshot: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "plan.json"
    assert main(["plan", "rebalance", "--cluster", str(snapshot), "--output", str(out),
                 "--throttle", "10485760"]) == 0
    text = capsys.readouterr().out
    assert "replica_count" in text and "estimated duration" in text
    # The plan went to the file: the terminal gets the summary, not the plan's JSON.
    assert '"partitions"' not in text and '"version"' not in text
    plan = ReassignmentPlan.read(out)
    rollback = ReassignmentPlan.read(tmp_path / "plan.rollback.json")
    cluster = load_snapshot(snapshot)
    assert plan.partitions == rollback.partitions
    assert all(rollback.replicas[tp] == cluster.partitions[tp].replicas for tp in rollback.replicas)
    plan.validate_against(cluster)


def test_without_output_the_plan_is_printed(snapshot: Path, capsys) -> None:
    assert main(["plan", "rebalance", "--cluster", str(snapshot)]) == 0
    text = capsys.readouterr().out
    plan = json.loads(text[text.index("{"):])
    assert plan["version"] == 1 and plan["partitions"]


def test_json_output_has_summary_and_plan(snapshot: Path, capsys) -> None:
    assert main(["plan", "demote", "--cluster", str(snapshot), "--brokers", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["mode"] == "demote"
    assert data["summary"]["replica_moves"] == 0
    assert data["plan"]["version"] == 1 and data["plan"]["partitions"]
    assert all(p["replicas"][0] != 1 for p in data["plan"]["partitions"])


def test_caps_and_goals_reach_the_planner(snapshot: Path, capsys) -> None:
    assert main(["plan", "rebalance", "--cluster", str(snapshot), "--max-moves", "3",
                 "--goals", "replica_count,disk", "--threshold", "disk=0.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["summary"]
    assert data["replica_moves"] <= 3 and "max_moves" in data["capped_by"]
    assert [g["name"] for g in data["goals"] if not g["hard"]] == ["replica_count", "disk"]


def test_set_rf_and_remove_brokers_run(snapshot: Path, capsys) -> None:
    assert main(["plan", "set-rf", "--cluster", str(snapshot), "--topics", "topic-00000",
                 "--rf", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["replica_moves"] == 0
    assert main(["plan", "remove-brokers", "--cluster", str(snapshot), "--brokers", "5"]) == 0
    assert "remove-brokers" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--threshold", "disk"], "expected GOAL=FRACTION"),
    (["--threshold", "disk=lots"], "is not a number"),
    (["--goals", "capacity"], "is a hard goal"),
    (["--max-moves", "-1"], "argument --max-moves: -1 is out of range"),
    (["--throttle", "0"], "argument --throttle: '0' must be a finite number of bytes/s"),
])
def test_bad_options_are_one_line_errors(snapshot: Path, capsys, args, message) -> None:
    assert main(["plan", "rebalance", "--cluster", str(snapshot), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_migrate_pool_needs_pools(snapshot: Path, capsys) -> None:
    assert main(["plan", "migrate-pool", "--cluster", str(snapshot)]) == 2
    assert "needs a pools file" in capsys.readouterr().err


def test_empty_plan_writes_nothing(tmp_path: Path, capsys) -> None:
    snapshot = tmp_path / "c.json"
    snapshot.write_text(json.dumps({"version": 1, "brokers": [{"id": 0}, {"id": 1}], "topics": [
        {"name": "t", "partitions": [{"partition": 0, "replicas": [0, 1]},
                                     {"partition": 1, "replicas": [1, 0]}]}]}))
    out = tmp_path / "p.json"
    assert main(["plan", "fix-offline", "--cluster", str(snapshot), "-o", str(out)]) == 0
    assert "nothing to change" in capsys.readouterr().out
    assert not out.exists()


def test_chart_draws_the_load_before_and_after(snapshot: Path, tmp_path: Path, capsys) -> None:
    chart = tmp_path / "load.png"
    assert main(["plan", "rebalance", "--cluster", str(snapshot), "--chart", str(chart)]) == 0
    assert f"broker load chart: {chart}" in capsys.readouterr().out
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
