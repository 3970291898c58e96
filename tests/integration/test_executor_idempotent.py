"""Reruns are true no-ops, and a resumed run touches only what is unfinished (issue 10).

Through the ZooKeeper backend on a real ZooKeeper with the emulator behind it. Checked from
outside: every znode's version, child version and modification zxid under the cluster's
chroot (nothing written, created or deleted), and the emulator's own event record (no
reassignment started, no config changed).
"""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from kafka_ops.cli import main
from kafka_ops.executor import Executor, StateStore
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from tests.integration.test_executor_e2e import PLAN, emulated_model, executor, throttles  # noqa: F401

pytestmark = [pytest.mark.zookeeper]


def znodes(zk_connect: str) -> dict[str, tuple[int, int, int]]:
    """Every znode under the chroot: (version, cversion, mzxid)."""
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        found = {}
        todo = ["/"]
        while todo:
            path = todo.pop()
            _, stat = client.get(path)
            found[path] = (stat.version, stat.cversion, stat.mzxid)
            todo.extend(f"{path.rstrip('/')}/{c}" for c in client.get_children(path))
        return found
    finally:
        client.stop()
        client.close()


def writes(events) -> list:
    return [e for e in events if e.kind in ("reassignment_started", "config_changed", "leader_elected")]


def test_rerunning_a_finished_plan_writes_no_znode(zk_emulated, zk_connect, tmp_path):
    report = executor(zk_emulated, store=StateStore(tmp_path / "a")).run()
    assert report.status == "completed", report.message
    plan_file = tmp_path / "plan.json"
    PLAN.write(plan_file)
    before, events = znodes(zk_connect), len(zk_emulated.cluster.events)

    # Same state directory (its execution finished), a fresh one, and the CLI in between.
    again = executor(zk_emulated, store=StateStore(tmp_path / "a")).run()
    fresh = executor(zk_emulated, store=StateStore(tmp_path / "b")).run()
    code = main(["execute", str(plan_file), "--zookeeper", zk_connect, "--state-dir", str(tmp_path / "c"),
                 "--throttle", "1000000", "--no-progress", "--json"])

    assert again.status == fresh.status == "completed" and code == 0
    assert sorted(again.completed) == sorted(PLAN.replicas) and again.rollback_path is None
    assert writes(zk_emulated.cluster.events[events:]) == []
    assert znodes(zk_connect) == before, "a rerun wrote, created or deleted a znode"


class Crash(BaseException):
    """The executor process dies (no cleanup runs, like SIGKILL)."""


def test_a_resumed_run_touches_only_unfinished_moves(zk_emulated, tmp_path):
    store = StateStore(tmp_path)
    polls = {"n": 0}
    first = executor(zk_emulated, store=store)
    base_sleep = first.sleep

    def crash_later(seconds: float) -> None:
        polls["n"] += 1
        state = store.load()
        if any(t.state.value == "completed" for t in state.tasks) and polls["n"] > 2:
            raise Crash
        base_sleep(seconds)

    first.sleep = crash_later
    with pytest.raises(Crash):
        first.run()
    done = {t.tp for t in store.load().tasks if t.state.value == "completed"}
    assert done and done != set(PLAN.replicas)
    mark = len(zk_emulated.cluster.events)

    report = executor(zk_emulated, store=store).run()

    assert report.status == "completed", report.message
    later = zk_emulated.cluster.events[mark:]
    restarted = {TP(e.topic, e.partition) for e in later if e.kind == "reassignment_started"}
    assert not restarted & done, f"finished moves submitted again: {restarted & done}"
    for e in later:  # throttle lists set after the resume name only unfinished partitions
        if e.kind == "config_changed" and e.data.get("entity_type") == "topics":
            for key, value in e.data["config"].items():
                if key.endswith("throttled.replicas") and value:
                    named = {TP(e.topic, int(x.split(":")[0])) for x in value.split(",")}
                    assert not named & done, (key, value)
    assert throttles(zk_emulated.backend) == {}
    now = zk_emulated.backend.describe_cluster()
    assert {tp: now.partitions[tp].replicas for tp in PLAN.replicas} == PLAN.replicas


def test_a_plan_with_nothing_to_move_is_not_submitted(zk_emulated, zk_connect, tmp_path):
    current = zk_emulated.backend.describe_cluster()
    plan = ReassignmentPlan.from_assignment({tp: current.partitions[tp].replicas for tp in PLAN.replicas})
    before, events = znodes(zk_connect), len(zk_emulated.cluster.events)
    report = Executor(zk_emulated.backend, plan, store=StateStore(tmp_path)).run()
    assert report.status == "completed" and sorted(report.completed) == sorted(plan.replicas)
    assert writes(zk_emulated.cluster.events[events:]) == []
    assert znodes(zk_connect) == before
