"""``kafka-ops assign``: the output contract and every validation path.

Most cases call ``main()`` in-process (fast); a few run the installed ``kafka-ops`` console
script to pin the contract other tooling relies on (stdout JSON, exit codes, stderr).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_ops.cli import main

KAFKA_OPS = Path(sys.executable).parent / "kafka-ops"

SEED_000_JSON = {
    "0": [0, 1, 2], "1": [1, 2, 3], "2": [2, 3, 4], "3": [3, 4, 0], "4": [4, 0, 1],
    "5": [0, 2, 3], "6": [1, 3, 4], "7": [2, 4, 0], "8": [3, 0, 1], "9": [4, 1, 2],
}  # fmt: skip


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["assign", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assign_ok(capsys, *argv: str) -> dict[str, list[int]]:
    code, out, err = run_main(capsys, *argv)
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert list(result) == sorted(result, key=int), "keys must come in partition order"
    return result


def assert_error(capsys, message: str, *argv: str) -> None:
    code, out, err = run_main(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err == f"error: {message}\n"


# -- the console script -------------------------------------------------------------------


def test_console_script_prints_the_seed_000_table():
    proc = subprocess.run(
        [KAFKA_OPS, "assign", "--brokers", "0,1,2,3,4", "--partitions", "10",
         "--replication-factor", "3", "--start-index", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    assert list(json.loads(proc.stdout).items()) == list(SEED_000_JSON.items())


def test_console_script_reports_a_validation_error_on_stderr():
    proc = subprocess.run(
        [KAFKA_OPS, "assign", "--brokers", "0,1", "--partitions", "2",
         "--replication-factor", "3"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "error: Replication factor: 3 larger than available brokers: 2.\n"


# -- computed assignments -----------------------------------------------------------------


def test_start_index_fixes_start_and_shift(capsys):
    result = assign_ok(
        capsys, "--brokers", "0,1,2,3,4", "--partitions", "10", "--replication-factor", "3",
        "--start-index", "0",
    )  # fmt: skip
    assert result == SEED_000_JSON


def test_racks_and_replica_shift_give_the_seed_001_example(capsys):
    result = assign_ok(
        capsys, "--brokers", "0,1,2,3,4,5", "--racks", "A,A,A,B,B,B", "--partitions", "2",
        "--replication-factor", "3", "--start-index", "3", "--replica-shift", "0",
    )  # fmt: skip
    assert result == {"0": [4, 2, 5], "1": [2, 5, 0]}


def test_start_partition_numbers_from_p(capsys):
    result = assign_ok(
        capsys, "--brokers", "0,1,2,3,4", "--partitions", "5", "--replication-factor", "3",
        "--start-index", "0", "--start-partition", "5",
    )  # fmt: skip
    assert result == {str(p): SEED_000_JSON[str(p)] for p in range(5, 10)}


def test_without_start_index_start_and_shift_are_random(capsys):
    """Each run is one of Kafka's N*N (start, shift) layouts, and runs differ (30 runs over
    25 layouts all alike has probability 25**-29)."""
    argv = ["--brokers", "0,1,2,3,4", "--partitions", "10", "--replication-factor", "3"]
    layouts = [
        assign_ok(capsys, *argv, "--start-index", str(s), "--replica-shift", str(k))
        for s in range(5) for k in range(5)
    ]  # fmt: skip
    runs = [assign_ok(capsys, *argv) for _ in range(30)]
    assert all(run in layouts for run in runs)
    assert len({json.dumps(run) for run in runs}) > 1


def test_replica_shift_without_start_index_keeps_the_random_start(capsys):
    result = assign_ok(
        capsys, "--brokers", "0,1,2,3,4", "--partitions", "5", "--replication-factor", "2",
        "--replica-shift", "0",
    )  # fmt: skip
    # Shift 0: the follower is always the next broker in the list.
    assert all(r[1] == (r[0] + 1) % 5 for r in result.values())


def test_empty_rack_entry_means_no_rack(capsys):
    argv = ["--brokers", "0,1,2", "--partitions", "3", "--replication-factor", "2",
            "--start-index", "0"]  # fmt: skip
    assert_error(
        capsys, "Not all brokers have rack information for replica rack aware assignment.",
        *argv, "--racks", "a,,b",
    )  # fmt: skip
    safe = assign_ok(capsys, *argv, "--racks", "a,,b", "--rack-aware-mode", "safe")
    assert safe == assign_ok(capsys, *argv)


def test_rack_aware_mode_disabled_ignores_racks(capsys):
    argv = ["--brokers", "0,1,2,3", "--partitions", "4", "--replication-factor", "2",
            "--start-index", "0"]  # fmt: skip
    disabled = assign_ok(capsys, *argv, "--racks", "a,a,b,b", "--rack-aware-mode", "disabled")
    assert disabled == assign_ok(capsys, *argv)
    assert assign_ok(capsys, *argv, "--racks", "a,a,b,b") != disabled


# -- manual assignments -------------------------------------------------------------------


def test_replica_assignment_is_validated_and_printed(capsys):
    result = assign_ok(capsys, "--brokers", "0,1,2", "--replica-assignment", "0:1,1:2,2:0")
    assert result == {"0": [0, 1], "1": [1, 2], "2": [2, 0]}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("0:3", "Partition 0: the manual partition assignment includes broker 3, but no such "
                "broker is registered."),
        ("0:1,1:1", "Partition replica lists may not contain duplicate entries: partition 1 "
                    "contains multiple entries for 1"),
        ("0:1,2", "Partition 1 has different replication factor: [2]"),
        ("0:x", "invalid broker id 'x' in the replica list of partition 0: expected a "
                "non-negative integer"),
        ("", "replica assignment is empty; expected broker lists like '0:1:2,3:4:5' "
             "(',' between partitions, ':' between replicas)"),
    ],
)  # fmt: skip
def test_replica_assignment_errors(capsys, assignment, message):
    assert_error(capsys, message, "--brokers", "0,1,2", "--replica-assignment", assignment)


@pytest.mark.parametrize(
    "extra",
    [["--partitions", "2"], ["--replication-factor", "2"], ["--start-index", "0"],
     ["--replica-shift", "1"], ["--start-partition", "3"]],
)  # fmt: skip
def test_replica_assignment_excludes_algorithm_options(capsys, extra):
    assert_error(
        capsys, f"--replica-assignment cannot be combined with {extra[0]}",
        "--brokers", "0,1", "--replica-assignment", "0:1", *extra,
    )  # fmt: skip


def test_replica_assignment_rejects_duplicate_brokers(capsys):
    assert_error(
        capsys, "Broker list contains duplicate entries: [1]",
        "--brokers", "0,1,1", "--replica-assignment", "0:1",
    )  # fmt: skip


# -- validation errors --------------------------------------------------------------------

BASE = ["--brokers", "0,1,2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replication-factor", "1"],
         "--partitions is required (unless --replica-assignment is given)"),
        (["--partitions", "1"],
         "--replication-factor is required (unless --replica-assignment is given)"),
        (["--partitions", "0", "--replication-factor", "1"],
         "Number of partitions must be larger than 0."),
        (["--partitions", "3", "--replication-factor", "0"],
         "Replication factor must be larger than 0."),
        (["--partitions", "3", "--replication-factor", "4"],
         "Replication factor: 4 larger than available brokers: 3."),
        (["--partitions", "3", "--replication-factor", "1", "--racks", "a,b"],
         "--racks has 2 entries but --brokers has 3; give one rack per broker in the same "
         "order (an empty entry means no rack)"),
        (["--partitions", "3", "--replication-factor", "1", "--start-index", "-1"],
         "--start-index must be >= 0, got -1"),
        (["--partitions", "3", "--replication-factor", "1", "--replica-shift", "-2"],
         "--replica-shift must be >= 0, got -2"),
        (["--partitions", "3", "--replication-factor", "1", "--start-partition", "-1"],
         "--start-partition must be >= 0, got -1"),
    ],
)  # fmt: skip
def test_validation_errors(capsys, argv, message):
    assert_error(capsys, message, *BASE, *argv)


@pytest.mark.parametrize(
    ("brokers", "message"),
    [("0,x,2", "--brokers: 'x' is not an integer"),
     ("", "--brokers: '' is not an integer"),
     ("0,1,0", "Broker list contains duplicate entries: [0]")],
)  # fmt: skip
def test_bad_broker_lists(capsys, brokers, message):
    assert_error(
        capsys, message, "--brokers", brokers, "--partitions", "1", "--replication-factor", "1"
    )


@pytest.mark.parametrize(
    "argv",
    [["--partitions", "x", "--replication-factor", "1"],
     ["--partitions", "1", "--replication-factor", "1", "--rack-aware-mode", "strict"],
     ["--replication-factor", "1", "--partitions"]],
)  # fmt: skip
def test_usage_errors_exit_2_with_argparse_message(capsys, argv):
    assert main(["assign", *BASE, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: kafka-ops assign: ") and err.count("\n") == 1, err


def test_brokers_is_required(capsys):
    assert main(["assign", "--partitions", "1", "--replication-factor", "1"]) == 2
    assert "the following arguments are required: --brokers" in capsys.readouterr().err
