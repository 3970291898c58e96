"""Every bad input to every command is refused: exit 2, ONE ``error:`` line naming it, no
traceback, and — where a live cluster is given — the cluster unchanged.

The table is built from the inputs each command takes (files, numbers, paths, connection
strings) crossed with the ways each can be wrong: missing, a directory, empty, binary, Latin-1,
nested 100,000 levels deep, over the size cap, malformed, the wrong JSON type, out of Kafka's
ranges, NaN/inf. Cases naming ``{zk}`` run against an emulated cluster on a real ZooKeeper:
every znode's mzxid/pzxid is compared before and after (even a rewrite with the same bytes
changes them), and so is the emulator's own event record. Hypothesis then throws arbitrary
JSON, YAML and bytes at the plan and pools readers. Expected answers are decided by the table
(refused or not), never by the code under test.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import string
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_ops import inputs
from kafka_ops.cli import main
from kafka_ops.model import Broker, ClusterModel, Partition
from kafka_ops.snapshot import save_snapshot
from kafka_ops.testing.cluster_state import zk_fingerprint

GOOD_PLAN = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 4]}]}
GOOD_POOLS = "pools:\n  a:\n    brokers: [1, 2]\n    topics: [orders]\n  b:\n    brokers: [3, 4]\n"
SIZE_CAP = 64 * 1024  # the size cap during these tests (the real one is 512 MiB)


def small_cluster() -> ClusterModel:
    brokers = [Broker(i, rack=f"r{i % 2}") for i in range(1, 5)]
    parts = [Partition("orders", p, r, r[0], r, size_bytes=1000)
             for p, r in enumerate([(1, 2), (2, 1), (1, 2)])]
    parts += [Partition("events", p, r, r[0], r, size_bytes=1000)
              for p, r in enumerate([(3, 4), (4, 3)])]
    return ClusterModel(brokers, parts)


def plan_with(**entry) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [3, 4], **entry}]})


# -- bad file contents, shared by every file input -------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000
BAD_FILES: dict[str, bytes | None] = {
    "missing": None,
    "directory": b"<dir>",
    "empty": b"",
    "binary": bytes(range(256)) * 8,
    "latin1": '{"version":1,"partitions":[{"topic":"caf\u00e9","partition":0,"replicas":[1]}]}'
              .encode("latin-1"),
    "utf16": json.dumps(GOOD_PLAN).encode("utf-16"),
    "deep-list": DEEP.encode(),
    "deep-object": ('{"a":' * 50_000 + "1" + "}" * 50_000).encode(),
    "oversized": b'{"version":1,"partitions":[' + b" " * (SIZE_CAP + 10) + b"]}",
    "not-json": b"{oops",
    "json-list": b"[1, 2, 3]",
    "bigint": ('{"version":1,"partitions":[{"topic":"orders","partition":' + "9" * 5000
               + ',"replicas":[1]}]}').encode(),
}
PLAN_ONLY: dict[str, bytes] = {
    "version-string": json.dumps({**GOOD_PLAN, "version": "1"}).encode(),
    "version-2": json.dumps({**GOOD_PLAN, "version": 2}).encode(),
    "nan-partition": plan_with(partition=float("nan")).encode(),
    "negative-broker": plan_with(replicas=[-1, 3]).encode(),
    "int32-overflow-broker": plan_with(replicas=[2**31, 3]).encode(),
    "negative-partition": plan_with(partition=-1).encode(),
    "float-broker": plan_with(replicas=[3.5, 4]).encode(),
    "bad-topic-name": plan_with(topic="a/b").encode(),
    "empty-topic": plan_with(topic="").encode(),
    "replicas-string": plan_with(replicas="3,4").encode(),
    "duplicate-replicas": plan_with(replicas=[3, 3]).encode(),
    "empty-replicas": plan_with(replicas=[]).encode(),
    "empty-plan": b'{"version":1,"partitions":[]}',
    "partitions-object": b'{"version":1,"partitions":{"0":[1]}}',
    "log-dirs-mismatch": plan_with(log_dirs=["any"]).encode(),
    "duplicate-partition": json.dumps({"version": 1, "partitions": [
        GOOD_PLAN["partitions"][0], GOOD_PLAN["partitions"][0]]}).encode(),
}
CLUSTER_PLAN_ONLY: dict[str, bytes] = {  # valid files, refused only against the cluster
    "plan-unknown-broker": plan_with(replicas=[3, 99]).encode(),
    "plan-unknown-topic": json.dumps({"version": 1, "partitions": [
        {"topic": "ghost", "partition": 0, "replicas": [3, 4]}]}).encode(),
    "plan-unknown-partition": plan_with(partition=7).encode(),
}
POOLS_ONLY: dict[str, bytes] = {
    "pools-yaml-syntax": b"pools: [\n",
    "pools-yaml-tab": b"pools:\n\ta: 1\n",
    "pools-duplicate-key": b"pools:\n  a: {brokers: [1]}\n  a: {brokers: [2]}\n",
    "pools-pools-list": b"pools: [1, 2]\n",
    "pools-broker-string": b"pools:\n  a: {brokers: ['1']}\n",
    "pools-broker-negative": b"pools:\n  a: {brokers: [-1]}\n",
    "pools-unknown-key": b"pools:\n  a: {brokers: [1], color: red}\n",
    "pools-alias-bomb": (b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                   b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                   b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                   b"pools:\n  a: {brokers: *f}\n"),
    "pools-python-tag": b"pools: !!python/object/apply:os.system ['true']\n",
    "pools-unknown-broker": b"pools:\n  a: {brokers: [1, 2, 99], topics: [orders]}\n",
}
SNAPSHOT_ONLY: dict[str, bytes] = {
    "snap-version-2": b'{"version":2,"brokers":[],"topics":[]}',
    "snap-brokers-object": b'{"version":1,"brokers":{"1":{}},"topics":[]}',
    "snap-capacity-string": b'{"version":1,"brokers":[{"id":1,"capacity":{"disk_bytes":"lots"}}],'
                       b'"topics":[]}',
    "snap-replicas-string": b'{"version":1,"brokers":[{"id":1}],"topics":[{"name":"t",'
                       b'"partitions":[{"partition":0,"replicas":"1"}]}]}',
    "snap-topic-not-object": b'{"version":1,"brokers":[{"id":1}],"topics":["t"]}',
    "snap-config-list": b'{"version":1,"brokers":[{"id":1}],"topics":[{"name":"t","config":[1],'
                   b'"partitions":[]}]}',
}
PROPERTIES_ONLY: dict[str, bytes] = {
    "props-no-equals": b"security.protocol\n",
    "props-unknown-setting": b"sasl.pasword=hunter2\n",
    "props-bad-protocol": b"security.protocol=SASL_TLS\n",
}
STATE_FILES: dict[str, bytes] = {
    "state-binary": bytes(range(256)),
    "state-latin1": '{"status":"caf\u00e9"}'.encode("latin-1"),
    "state-not-json": b"{",
    "state-list": b"[]",
    "state-missing-keys": b'{"status":"running"}',
    "state-deep": DEEP.encode(),
}


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    live: bool = False  # runs against the emulated cluster ({zk} in argv)
    words: str = ""  # the error must contain this (case-insensitive), when given


def _file_cases(
    files: dict[str, bytes | None], make: callable, prefix: str, live: bool = False
) -> list[Case]:
    return [Case(f"{prefix}:{kind}", tuple(make(f"@{kind}")), live) for kind in files]


def build_cases() -> list[Case]:
    """The table: every command, every input it takes, every way that input can be wrong."""
    plan_files = {**BAD_FILES, **PLAN_ONLY}
    cases: list[Case] = []
    snap = "@snapshot"
    zk = ("--zookeeper", "{zk}")
    # Plan files, offline and live.
    for cmd in (("plan", "show"), ("plan", "validate")):
        cases += _file_cases(plan_files, lambda f, c=cmd: [*c, f], " ".join(cmd))
    for cmd in (("plan", "diff"), ("plan", "rollback"), ("plan", "validate")):
        cases += _file_cases({**plan_files, **CLUSTER_PLAN_ONLY},
                             lambda f, c=cmd: [*c, f, "--cluster", snap],
                             " ".join(cmd) + " PLAN (with --cluster)")
    cases += _file_cases({**plan_files, **CLUSTER_PLAN_ONLY},
                         lambda f: ["execute", f, *zk, "--state-dir", "@statedir", "--no-progress"],
                         "execute", live=True)
    cases += _file_cases(plan_files, lambda f: ["verify", f, *zk], "verify", live=True)
    cases += _file_cases(plan_files, lambda f: ["execute", "@plan", *zk, "--state-dir",
                                                "@statedir", "--base", f], "execute --base",
                         live=True)
    # Snapshots, for every command that reads one.
    snapshot_files = {**BAD_FILES, **SNAPSHOT_ONLY}
    snapshot_commands = [
        ("plan", "show", "@plan"), ("plan", "diff", "@plan"), ("plan", "rollback", "@plan"),
        ("plan", "rebalance"), ("plan", "add-brokers", "--brokers", "4"),
        ("plan", "remove-brokers", "--brokers", "4"), ("plan", "demote", "--brokers", "1"),
        ("plan", "fix-offline"), ("plan", "set-rf", "--topics", "orders", "--rf", "3"),
        ("plan", "rebalance-disks"), ("plan", "fix-failed-dirs"),
        ("plan", "replace-broker", "--from", "1", "--to", "3"),
        ("plan", "migrate-pool", "--pools", "@pools"),
        ("pools", "validate", "--pools", "@pools"), ("pools", "show", "--pools", "@pools"),
        ("pools", "assign", "--pools", "@pools", "--topic", "orders", "--partitions", "4"),
        ("pools", "migrate", "--pools", "@pools", "--pool", "a"),
    ]
    for cmd in snapshot_commands:
        cases += _file_cases(snapshot_files, lambda f, c=cmd: [*c, "--cluster", f],
                             " ".join(cmd[:2]) + " --cluster")
    # Pools files.
    pools_files = {**BAD_FILES, **POOLS_ONLY}
    for cmd in (("pools", "validate"), ("pools", "show"), ("plan", "rebalance"),
                ("plan", "migrate-pool"), ("pools", "migrate", "--pool", "a")):
        cases += _file_cases(pools_files, lambda f, c=cmd: [*c, "--cluster", snap, "--pools", f],
                             " ".join(cmd[:2]) + " --pools")
    cases += _file_cases(pools_files, lambda f: ["plan", "validate", "@plan", "--pools", f],
                         "plan validate --pools")
    # --command-config (read before any connection).
    # (an empty properties file is valid; nesting means nothing in a properties file)
    props = {**{k: v for k, v in BAD_FILES.items()
                if k not in ("empty", "deep-list", "deep-object", "bigint")}, **PROPERTIES_ONLY}
    for cmd in (("plan", "rebalance"), ("execute", "@plan", "--state-dir", "@statedir"),
                ("verify", "@plan"), ("plan", "show", "@plan")):
        cases += _file_cases(props, lambda f, c=cmd: [*c, "--bootstrap-server", "127.0.0.1:1",
                                                      "--command-config", f],
                             " ".join(cmd[:2]) + " --command-config")
    # State directories.
    for kind in STATE_FILES:
        for cmd in (["execute", "@plan", *zk], ["cancel", *zk], ["status"]):
            cases.append(Case(f"{cmd[0]} --state-dir:{kind}",
                              (*cmd, "--state-dir", f"@{kind}"), live=cmd[0] != "status"))
    for cmd in (["execute", "@plan", *zk], ["cancel", *zk], ["status"]):
        cases.append(Case(f"{cmd[0]} --state-dir:is-a-file", (*cmd, "--state-dir", "@pools"),
                          live=cmd[0] != "status", words="is a file"))
    # Numbers in Kafka's ranges, paths checked before work.
    execute = ("execute", "@plan", *zk, "--state-dir", "@statedir", "--no-progress")
    for opt, values in {
        "--throttle": ["99999999999999999999", "9223372036854775808", "0", "-5", "1.5", "abc",
                       "nan", "inf"],
        "--poll-interval": ["nan", "inf", "-inf", "-1", "0", "abc", "1e400", "1e12"],
        "--stall-timeout": ["-1", "nan", "inf", "0"],
        "--max-incoming": ["0", "-1", str(2**31), "x"],
        "--max-outgoing": ["0", "-3"],
        "--max-in-flight": ["0", "1.5"],
        "--max-leader-changes": ["0", "-1"],
        "--strategy": ["bogus"],
        "--on-drift": ["ignore"],
    }.items():
        cases += [Case(f"execute {opt}={v}", (*execute, opt, v), live=True, words=opt)
                  for v in values]
    cases += [Case(f"cancel --wait={v}", ("cancel", *zk, "--state-dir", "@statedir", "--wait", v),
                   live=True, words="--wait") for v in ("nan", "-1", "inf")]
    for bad in ("not a url", "localhost", "host:abc", "h:99999", ":9092", "a:1,,b:2", ""):
        cases.append(Case(f"execute --bootstrap-server={bad!r}",
                          ("execute", "@plan", "--bootstrap-server", bad, "--state-dir", "@statedir"),
                          words="bootstrap"))
        cases.append(Case(f"plan rebalance --bootstrap-server={bad!r}",
                          ("plan", "rebalance", "--bootstrap-server", bad), words="bootstrap"))
    for bad in ("zk 2181", "h:2181/kafka/", "h:2181//x", ",h:2181", "h:x"):
        cases.append(Case(f"verify --zookeeper={bad!r}", ("verify", "@plan", "--zookeeper", bad),
                          words="ZooKeeper"))
    rebalance = ("plan", "rebalance", "--cluster", snap)
    for opt, values in {
        "--max-moves": ["-1", "x"], "--max-bytes": ["-1", "1e3"], "--max-leader-changes": ["-2"],
        "--throttle": ["0", "nan", "inf", "-1"], "--threshold": ["disk=nan", "disk=inf",
                                                                "disk=-1", "disk", "bogus=1"],
        "--goals": ["bogus", "capacity"],
        "--output": ["@nodir/plan.json", "@dir"], "--chart": ["@nodir/c.png", "@dir", "@dir/c.xyz",
                                                               "@dir/noextension"],
    }.items():
        cases += [Case(f"plan rebalance {opt}={v}", (*rebalance, opt, v)) for v in values]
    for cmd in ("add-brokers", "remove-brokers", "demote"):
        for v in ("-1,0,1", "1,,2", "x", str(2**31), "", "-1"):
            cases.append(Case(f"plan {cmd} --brokers={v!r}",
                              ("plan", cmd, "--cluster", snap, "--brokers", v), words="brokers"))
    for v in ("0", "-1", "40000", "x"):
        cases.append(Case(f"plan set-rf --rf={v}", ("plan", "set-rf", "--cluster", snap,
                                                      "--topics", "orders", "--rf", v)))
    for a, b in (("-1", "1"), ("1", "-1"), ("x", "1"), (str(2**31), "1"), ("1", "99")):
        cases.append(Case(f"plan replace-broker --from={a} --to={b}",
                          ("plan", "replace-broker", "--cluster", snap, "--from", a, "--to", b)))
    cases.append(Case("plan rollback --output=dir",
                      ("plan", "rollback", "@plan", "--cluster", snap, "--output", "@dir")))
    cases.append(Case("plan rollback --output=missing-dir",
                      ("plan", "rollback", "@plan", "--cluster", snap, "-o", "@nodir/r.json")))
    pools_migrate = ("pools", "migrate", "--cluster", snap, "--pools", "@pools", "--pool", "a")
    for opt in ("--output", "--rollback-output"):
        cases += [Case(f"pools migrate {opt}={v}", (*pools_migrate, opt, v))
                  for v in ("@dir", "@nodir/x.json")]
    cases.append(Case("pools migrate --pool=unknown", (*pools_migrate[:-1], "ghost")))
    pools_assign = ("pools", "assign", "--cluster", snap, "--pools", "@pools", "--topic", "orders")
    for opt, v in (("--partitions", "-1"), ("--partitions", "0"), ("--partitions", str(10**12)),
                   ("--partitions", "x"), ("--replication-factor", "0"),
                   ("--replication-factor", "-1")):
        cases.append(Case(f"pools assign {opt}={v}", (*pools_assign, opt, v)))
    assign = ("assign", "--brokers", "0,1,2")
    for extra in (("--partitions", "3", "--replication-factor", "1", "--brokers", "-1,0,1"),
                  ("--partitions", "3", "--replication-factor", "1", "--brokers", "0,x"),
                  ("--partitions", "0", "--replication-factor", "1"),
                  ("--partitions", "-1", "--replication-factor", "1"),
                  ("--partitions", str(10**12), "--replication-factor", "1"),
                  ("--partitions", "3", "--replication-factor", "0"),
                  ("--partitions", "3", "--replication-factor", "4"),
                  ("--partitions", "3", "--replication-factor", str(2**40)),
                  ("--partitions", "3", "--replication-factor", "1", "--start-index", "-1"),
                  ("--partitions", "3", "--replication-factor", "1", "--racks", "a"),
                  ("--replica-assignment", "0:1,0:x"),
                  ("--replica-assignment", "0:0"),
                  ("--partitions", "3")):
        cases.append(Case(f"assign {' '.join(extra)}", (*assign, *extra)))
    snapshot = ("snapshot", "--cluster", snap, "--dataset", "@dir", "--name", "c1")
    for opt, values in {
        "--step": ["0", "-1", "nan", "inf", "x"], "--start": ["bogus", "nan", "-5"],
        "--end": ["yesterday"], "--dataset": ["@pools", "@nodir/deeper/ds", ""],
        "--prometheus": ["not a url", "ftp://h:9090", "http://:9090", "http://h:99999",
                         "http://user:pw@h:9090"],
    }.items():
        cases += [Case(f"snapshot {opt}={v!r}", (*snapshot, opt, v)) for v in values]
    cases.append(Case("snapshot --end before --start",
                      (*snapshot, "--start", "2000", "--end", "1000")))
    cases += _file_cases(props, lambda f: [*snapshot, "--prometheus", "http://127.0.0.1:1",
                                           "--prometheus-config", f],
                         "snapshot --prometheus-config")
    cases.append(Case("status --state-dir=empty", ("status", "--state-dir", "@statedir")))
    cases.append(Case("cancel nothing to cancel", ("cancel", *zk, "--state-dir", "@statedir"),
                      live=True))
    cases.append(Case("no command", ()))
    cases.append(Case("unknown command", ("rebalance-now",)))
    cases.append(Case("execute without a cluster", ("execute", "@plan")))
    return cases


CASES = build_cases()


# -- running a case ---------------------------------------------------------------------------
@dataclass
class Files:
    root: Path

    def path(self, name: str) -> str:
        return str(self.root / name)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    root = tmp_path_factory.mktemp("bad-input")
    for kind, data in {**BAD_FILES, **PLAN_ONLY, **CLUSTER_PLAN_ONLY, **POOLS_ONLY,
                       **SNAPSHOT_ONLY, **PROPERTIES_ONLY}.items():
        if data is None:
            continue
        if data == b"<dir>":
            (root / kind).mkdir()
        else:
            (root / kind).write_bytes(data)
    (root / "plan").write_text(json.dumps(GOOD_PLAN))
    (root / "pools").write_text(GOOD_POOLS)
    save_snapshot(small_cluster(), root / "snapshot")
    (root / "dir").mkdir()
    for kind, data in STATE_FILES.items():
        (root / kind).mkdir()
        (root / kind / "execution.json").write_bytes(data)
    return Files(root)


@pytest.fixture(scope="module")
def live(zookeeper_server) -> Iterator[str]:
    """An emulated cluster (the small one) on a chroot of the real ZooKeeper; its connect string."""
    import uuid

    from kafka_ops.emulator.clock import ManualClock
    from kafka_ops.emulator.runtime import Emulator

    connect = f"{zookeeper_server.connect_string}/bad-input-{uuid.uuid4().hex[:8]}"
    emulator = Emulator(small_cluster(), zookeeper=connect, mode="zk", clock=ManualClock())
    emulator.start()
    try:
        yield connect, emulator.cluster
    finally:
        emulator.stop()


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def resolve(argv: tuple[str, ...], files: Files, tmp: Path, zk: str | None) -> list[str]:
    out = []
    for arg in argv:
        if arg == "{zk}":
            out.append(zk or "127.0.0.1:1")
        elif arg == "@statedir":
            out.append(str(tmp / "state"))
        elif arg.startswith("@nodir/"):
            out.append(str(tmp / "no-such-dir" / arg[len("@nodir/"):]))
        elif arg.startswith("@dir/"):
            out.append(files.path("dir") + "/" + arg[len("@dir/"):])
        elif arg.startswith("@"):
            out.append(files.path(arg[1:]))
        else:
            out.append(arg)
    return out


def assert_refused(code: int, out: str, err: str, case: Case) -> None:
    assert "Traceback" not in err + out, err
    # execute's "note: no base file" may precede the error line; nothing else may.
    lines = [line for line in err.splitlines() if not line.startswith("note: ")]
    assert code == 2, f"{case.id}: exit {code}\nstdout: {out[:500]}\nstderr: {err[:500]}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{case.id}: {err!r}"
    assert out == "", f"{case.id}: stdout {out[:300]!r}"
    if case.words:
        assert case.words.lower() in err.lower(), f"{case.id}: {err!r}"


@pytest.fixture(autouse=True)
def _small_size_cap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", SIZE_CAP)
    monkeypatch.setenv("KAFKA_OPS_CRASH_DIR", str(tmp_path / "crashes"))


@pytest.mark.parametrize("case", [c for c in CASES if not c.live], ids=lambda c: c.id)
def test_offline_bad_input_is_refused(case: Case, files: Files, tmp_path: Path) -> None:
    code, out, err = run_cli(resolve(case.argv, files, tmp_path, None))
    assert_refused(code, out, err, case)
    assert not (tmp_path / "crashes").exists()
    assert list((files.root / "dir").iterdir()) == []  # nothing written by a refused command


@pytest.mark.zookeeper
@pytest.mark.parametrize("case", [c for c in CASES if c.live], ids=lambda c: c.id)
def test_live_bad_input_is_refused_and_changes_nothing(
    case: Case, files: Files, tmp_path: Path, live
) -> None:
    connect, cluster = live
    before, events = zk_fingerprint(connect), len(cluster.events)
    code, out, err = run_cli(resolve(case.argv, files, tmp_path, connect))
    assert_refused(code, out, err, case)
    assert zk_fingerprint(connect) == before, f"{case.id} changed znodes"
    assert len(cluster.events) == events, f"{case.id}: {cluster.events[events:]}"


def test_the_table_covers_every_command_and_the_issues_cases() -> None:
    from kafka_ops.cli import build_parser

    commands = set()
    for action in build_parser()._subparsers._group_actions[0].choices.items():
        name, parser = action
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if subs:
            commands |= {f"{name} {s}" for s in subs[0].choices}
        else:
            commands.add(name)
    assert len({c.id for c in CASES}) == len(CASES)  # ids name cases uniquely
    covered = {" ".join(c.argv[:2]) if c.argv and c.argv[0] in ("plan", "pools") else
               (c.argv[0] if c.argv else "") for c in CASES}
    missing = sorted(c for c in commands - covered if not c.startswith("emulator"))
    assert missing == []
    ids = {c.id for c in CASES}
    for must in ("execute --throttle=99999999999999999999", "execute --stall-timeout=-1",
                 "execute --poll-interval=nan", "execute --poll-interval=inf",
                 "plan show:version-string", "plan add-brokers --brokers='-1,0,1'",
                 "execute --bootstrap-server='not a url'", "plan show:deep-list",
                 "plan show:binary", "plan show:latin1", "pools validate --pools:latin1",
                 "plan rebalance --cluster:binary", "execute --base:latin1",
                 "plan rebalance --command-config:latin1", "execute --state-dir:is-a-file",
                 "status --state-dir:state-not-json", "plan rebalance --output=@dir",
                 "plan rebalance --chart=@dir/c.xyz", "plan rebalance --chart=@nodir/c.png"):
        assert must in ids, must
    assert len(CASES) >= 400


def test_a_refused_option_is_refused_by_the_real_process(files: Files, tmp_path: Path) -> None:
    """The console entry point, as a process: same one line, exit 2."""
    result = subprocess.run(
        [sys.executable, "-m", "kafka_ops.cli", "assign", "--brokers", "-1,0,1", "--partitions",
         "3", "--replication-factor", "2"], capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("error: --brokers: -1 is out of range: must be 0..2147483647 "
                             "(broker ids are non-negative int32)\n")


def test_an_unexpected_failure_is_one_line_and_a_crash_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: Files
) -> None:
    """The last resort: a bug (here: a planner raising ZeroDivisionError) is one error line,
    exit 70, and the traceback in a file named in that line."""
    from kafka_ops.cli import plan_goals

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a planner bug")

    monkeypatch.setattr(plan_goals, "plan_cluster", broken)
    code, out, err = run_cli(["plan", "rebalance", "--cluster", files.path("snapshot")])
    assert code == 70 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: unexpected ZeroDivisionError: a planner bug")
    log = Path(err.split("traceback in ")[1].rstrip(")\n"))
    assert log.parent == tmp_path / "crashes"
    assert "Traceback" in log.read_text() and "broken" in log.read_text()


# -- fuzzing: arbitrary input files never crash a reader -----------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=5),
    max_leaves=30,
)
plan_like = st.fixed_dictionaries(
    {"partitions": st.lists(st.dictionaries(
        st.sampled_from(["topic", "partition", "replicas", "log_dirs", "x"]),
        json_values | st.sampled_from(["orders", 0, 1, [3, 4], [1, 2, 3], ["any", "any"]]),
        max_size=5), max_size=4)},
    optional={"version": st.sampled_from([1, "1", 2, None, 1.0, True])},
)
pools_like = st.fixed_dictionaries(
    {"pools": st.dictionaries(
        st.text(string.ascii_lowercase, max_size=5) | st.integers(),
        st.dictionaries(st.sampled_from(["brokers", "topics", "topic_patterns", "x"]),
                        json_values | st.lists(st.integers(-2, 5), max_size=4)
                        | st.lists(st.sampled_from(["orders", "(", ".*", ""]), max_size=3),
                        max_size=4) | json_values,
        max_size=3)},
    optional={"default_pool": json_values | st.sampled_from(["a", "b"])},
)


def _check_fuzz(argv: list[str]) -> None:
    code, _, err = run_cli(argv)
    assert "Traceback" not in err and code in (0, 2), (code, err[:500])
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err[:500]


FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(data=plan_like | json_values)
def test_fuzzed_plan_files(files: Files, data) -> None:
    path = files.root / "fuzz-plan.json"
    path.write_text(json.dumps(data, allow_nan=True))
    _check_fuzz(["plan", "validate", str(path)])
    _check_fuzz(["plan", "show", str(path), "--cluster", files.path("snapshot"), "--json"])


@pytest.mark.slow
@FUZZ
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_fuzzed_plan_bytes(files: Files, data: bytes) -> None:
    path = files.root / "fuzz-plan.bin"
    path.write_bytes(data)
    _check_fuzz(["plan", "validate", str(path)])


@pytest.mark.slow
@FUZZ
@given(data=pools_like | json_values, as_json=st.booleans())
def test_fuzzed_pools_files(files: Files, data, as_json: bool) -> None:
    import yaml

    path = files.root / "fuzz-pools.yaml"
    text = json.dumps(data, allow_nan=True) if as_json else yaml.safe_dump(data)
    path.write_text(text)
    _check_fuzz(["pools", "validate", "--cluster", files.path("snapshot"), "--pools", str(path)])


@pytest.mark.slow
@FUZZ
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_fuzzed_pools_bytes(files: Files, data: bytes) -> None:
    path = files.root / "fuzz-pools.bin"
    path.write_bytes(data)
    _check_fuzz(["pools", "show", "--cluster", files.path("snapshot"), "--pools", str(path)])


def test_nan_and_inf_never_pass_the_number_validators() -> None:
    for value in ("nan", "inf", "-inf", "NaN", "1e400"):
        with pytest.raises(inputs.InputError):
            inputs.seconds(value)
        with pytest.raises(inputs.InputError):
            inputs.positive_rate(value)
    assert inputs.throttle_rate(str(2**63 - 1)) == 2**63 - 1
    assert math.isclose(inputs.seconds("0.05"), 0.05)
