"""Emulator fidelity on a real ZooKeeper: znode schemas and ZooKeeper-mode controller behaviour.

Everything is observed on the znodes themselves with a separate kazoo client, the way an
operator or our ZooKeeper backend sees Kafka. A ManualClock drives replication: brokers move
100 bytes/s each way, partitions start at 1,000 bytes.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kafka_ops.backends.zk_paths import (
    parse_reassignment,
    parse_topic,
    topic_id_from_string,
    topic_id_string,
)
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.emulator.zk_face import ZooKeeperFace
from kafka_ops.errors import KafkaOpsError
from kafka_ops.generator import generate_cluster
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


def small_model() -> ClusterModel:
    capacity = BrokerCapacity(10**9, 100.0, 100.0)
    brokers = [Broker(i, rack="r1" if i < 4 else None, host="localhost", port=9090 + i,
                      capacity=capacity) for i in range(1, 7)]
    partitions = [Partition("t", 0, (1, 2, 3), 1, (1, 2, 3), size_bytes=1000),
                  Partition("t", 1, (2, 3, 1), 2, (2, 3, 1), size_bytes=1000)]
    return ClusterModel(brokers, partitions, {"t": {"retention.ms": "3600000"}})


def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within timeout")
        time.sleep(0.02)


@dataclass
class Env:
    cluster: EmulatedCluster
    clock: ManualClock
    face: ZooKeeperFace
    zk: KazooClient

    def read(self, path: str):
        return json.loads(self.zk.get(path)[0])

    def version(self, path: str) -> int:
        return self.zk.exists(path).version

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.cluster.tick()
        self.face.flush()

    def write(self, path: str, data: dict | bytes) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        if self.zk.exists(path):
            self.zk.set(path, raw)
        else:
            self.zk.create(path, raw, makepath=True)

    def settle(self, condition: Callable[[], object]) -> None:
        """Wait for the face to react to an operator's write, then for its writes to land."""
        wait_until(condition)
        self.face.flush()


@pytest.fixture
def env(zk_connect: str) -> Iterator[Env]:
    clock = ManualClock()
    cluster = EmulatedCluster(small_model(), clock=clock, cluster_id="test-cluster")
    face = ZooKeeperFace(cluster, zk_connect).start()
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    env = Env(cluster, clock, face, zk)
    try:
        yield env
    finally:
        zk.stop()
        zk.close()
        env.face.stop()  # a test may have replaced it


def reassign(env: Env, moves: dict[TopicPartition, list[int]]) -> None:
    env.write("/admin/reassign_partitions", {"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": r} for tp, r in moves.items()]})


# -- schemas ---------------------------------------------------------------------------------
def test_znodes_follow_kafka_schemas(env: Env):
    broker = env.read("/brokers/ids/1")
    assert broker.pop("timestamp").isdigit()
    assert broker == {
        "version": 5, "host": "localhost", "port": 9091, "jmx_port": -1,
        "endpoints": ["PLAINTEXT://localhost:9091"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "rack": "r1", "features": {},
    }
    assert "rack" not in env.read("/brokers/ids/5")
    assert env.zk.exists("/brokers/ids/1").ephemeralOwner != 0
    assert env.cluster.brokers[1].epoch == env.zk.exists("/brokers/ids/1").czxid
    topic_id = topic_id_string(env.cluster.topic_ids["t"])
    assert len(topic_id) == 22
    assert env.read("/brokers/topics/t") == {
        "version": 3, "topic_id": topic_id, "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        "adding_replicas": {}, "removing_replicas": {},
    }
    assert env.read("/brokers/topics/t/partitions/1/state") == {
        "version": 1, "leader": 2, "leader_epoch": 0, "controller_epoch": 1, "isr": [2, 3, 1]}
    assert env.version("/brokers/topics/t/partitions/1/state") == 0
    controller = env.read("/controller")
    assert controller.pop("timestamp").isdigit()
    assert controller == {"version": 2, "brokerid": 1, "kraftControllerEpoch": -1}
    assert env.zk.get("/controller_epoch")[0] == b"1"
    assert env.read("/config/topics/t") == {"version": 1, "config": {"retention.ms": "3600000"}}
    assert env.read("/cluster/id") == {"version": "1", "id": "test-cluster"}
    for path in ("/brokers/seqid", "/config/changes", "/admin/delete_topics",
                 "/isr_change_notification", "/config/brokers"):
        assert env.zk.exists(path), path


def test_znode_parsers_are_as_strict_as_kafka():
    topic_id = str(uuid.uuid4())
    assert topic_id_from_string(topic_id_string(topic_id)) == topic_id
    assert parse_topic(b'{"version":1,"partitions":{"0":[1,2]}}') == (None, {0: ([1, 2], [], [])})
    assert parse_reassignment(b'{"version":1}') == {}
    for bad in (b'{"version":1,"partitions":[{"topic":"t","partition":true,"replicas":[1]}]}',
                b'{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]}]}',
                b'{"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', b'[]'):
        with pytest.raises(ValueError):
            parse_reassignment(bad)


def test_never_overwrites_another_cluster_but_clears_its_own_leftovers(env: Env, zk_connect):
    same_id = EmulatedCluster(small_model(), clock=ManualClock(), cluster_id="test-cluster")
    with pytest.raises(KafkaOpsError, match="6 live brokers"):
        ZooKeeperFace(same_id, zk_connect).start()
    env.face.stop()  # brokers deregister; topics, configs and /cluster/id stay
    other = EmulatedCluster(small_model(), clock=ManualClock(), cluster_id="someone-else")
    with pytest.raises(KafkaOpsError, match="cluster id 'test-cluster'"):
        ZooKeeperFace(other, zk_connect).start()
    env.cluster.stop_broker(6)
    env.cluster.create_topic("extra", {0: [1]})
    env.face = ZooKeeperFace(env.cluster, zk_connect).start()
    assert sorted(env.zk.get_children("/brokers/topics")) == ["extra", "t"]
    assert env.read("/brokers/topics/t/partitions/0/state")["leader_epoch"] == 0
    assert "6" not in env.zk.get_children("/brokers/ids")


# -- reassignment through /admin/reassign_partitions -----------------------------------------
def test_reassignment_steps_on_the_znodes(env: Env):
    # 4, 5, 6 fetch at 30, 20, 10 B/s so each ISR join is visible on its own.
    for broker, factor in ((4, 0.3), (5, 0.2), (6, 0.1)):
        env.cluster.slow_broker(broker, factor)
    state_path, topic_path = "/brokers/topics/t/partitions/0/state", "/brokers/topics/t"
    reassign(env, {T0: [4, 5, 6]})
    env.settle(lambda: env.cluster.list_reassignments())
    topic = env.read(topic_path)
    assert (topic["partitions"]["0"], topic["adding_replicas"], topic["removing_replicas"]) == (
        [4, 5, 6, 1, 2, 3], {"0": [4, 5, 6]}, {"0": [1, 2, 3]})
    assert env.read(state_path)["isr"] == [1, 2, 3] and env.read(state_path)["leader_epoch"] == 1
    # RS/AR/RR reached /brokers/topics before the state znode changed (U1 before A1), or in
    # the same transaction (the mirror batches writes with multi: one zxid, seen at once).
    assert env.zk.exists(topic_path).mzxid <= env.zk.exists(state_path).mzxid
    isrs = []
    for seconds in (35.0, 20.0, 50.0):  # 4 caught up at 33 s, 5 at 50 s, 6 at 100 s
        env.advance(seconds)
        isrs.append(env.read(state_path)["isr"])
    assert isrs[:2] == [[1, 2, 3, 4], [1, 2, 3, 4, 5]]
    state = env.read(state_path)
    # ISR grew to six (epoch 4), leader moved to 4 (5), three ISR shrinks (8): version = epoch.
    assert (state["leader"], state["isr"], state["leader_epoch"]) == (4, [4, 5, 6], 5)
    assert env.version(state_path) == 8
    assert env.read(topic_path)["partitions"]["0"] == [4, 5, 6]
    assert env.read(topic_path)["adding_replicas"] == {}
    assert env.zk.exists(state_path).mzxid <= env.zk.exists(topic_path).mzxid  # B4 before B6
    assert env.zk.exists("/admin/reassign_partitions") is None  # B7: entry dropped, znode gone


def test_throttle_from_config_znodes_limits_only_listed_replicas(env: Env):
    env.write("/config/topics/t", {"version": 1, "config": {
        "follower.replication.throttled.replicas": "0:4"}})
    env.write("/config/brokers/4", {"version": 1, "config": {
        "follower.replication.throttled.rate": "10"}})
    env.zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t"}',
                  sequence=True)
    env.zk.create("/config/changes/config_change_",
                  b'{"version":1,"entity_type":"brokers","entity_name":"4"}', sequence=True)
    env.settle(lambda: env.cluster.broker_config(4) and env.cluster.topic_config("t").get(
        "follower.replication.throttled.replicas"))
    assert env.cluster.topic_config("t") == {"follower.replication.throttled.replicas": "0:4"}
    reassign(env, {T0: [4, 5, 6]})
    env.settle(lambda: env.cluster.list_reassignments())
    env.advance(10.0)
    replica_bytes = env.cluster.partitions[T0].replica_bytes
    assert replica_bytes[4] == pytest.approx(100.0)  # 10 B/s
    assert replica_bytes[5] == pytest.approx(450.0)  # unthrottled share of the leader's 100 B/s


def test_broker_killed_mid_reassignment_leaves_it_pending(env: Env):
    reassign(env, {T0: [4, 5, 6]})
    env.settle(lambda: env.cluster.list_reassignments())
    env.advance(15.0)
    old_czxid = env.zk.exists("/brokers/ids/5").czxid
    env.cluster.stop_broker(5)
    env.face.flush()
    assert env.zk.exists("/brokers/ids/5") is None
    env.advance(100.0)
    assert env.read("/admin/reassign_partitions")["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [4, 5, 6]}]
    assert env.read("/brokers/topics/t")["adding_replicas"] == {"0": [4, 5, 6]}
    assert env.read("/brokers/topics/t/partitions/0/state")["isr"] == [1, 2, 3, 4, 6]
    env.cluster.start_broker(5)
    env.face.flush()
    assert env.zk.exists("/brokers/ids/5").czxid > old_czxid
    assert env.cluster.brokers[5].epoch == env.zk.exists("/brokers/ids/5").czxid
    env.advance(10.0)
    assert env.read("/brokers/topics/t")["partitions"]["0"] == [4, 5, 6]
    assert env.zk.exists("/admin/reassign_partitions") is None


def test_leader_death_is_mirrored(env: Env):
    env.cluster.stop_broker(1)
    env.face.flush()
    assert env.read("/controller")["brokerid"] == 2
    assert env.zk.get("/controller_epoch")[0] == b"2"
    state = env.read("/brokers/topics/t/partitions/0/state")
    assert (state["leader"], state["isr"], state["controller_epoch"]) == (2, [2, 3], 2)
    assert env.version("/brokers/topics/t/partitions/0/state") == 1


def test_malformed_reassignment_is_logged_and_ignored(env: Env, caplog):
    caplog.set_level(logging.WARNING, logger="kafka_ops.emulator.zk_face")
    env.write("/admin/reassign_partitions", b'{"version":1,"partitions":[{"topic":"t",')
    env.settle(lambda: "invalid json" in caplog.text)
    assert env.cluster.list_reassignments() == {}
    assert env.zk.exists("/admin/reassign_partitions")  # Kafka leaves it in place
    env.zk.delete("/admin/reassign_partitions")
    reassign(env, {T0: [1, 2, 4]})  # the watch is still armed for the next creation
    env.settle(lambda: env.cluster.list_reassignments())


def test_data_written_while_the_znode_exists_waits_for_next_creation(env: Env):
    reassign(env, {T0: [1, 2, 4]})
    env.settle(lambda: env.cluster.list_reassignments())
    reassign(env, {T0: [1, 2, 4], T1: [2, 3, 5]})  # setData: the controller ignores it
    env.advance(10.0)
    assert env.cluster.partitions[T1].replicas == [2, 3, 1]
    assert env.read("/admin/reassign_partitions")["partitions"] == [
        {"topic": "t", "partition": 1, "replicas": [2, 3, 5]}]


def test_unknown_partitions_are_removed_from_the_znode(env: Env):
    env.cluster.slow_broker(4, 0.01)
    reassign(env, {T0: [1, 2, 4], TopicPartition("nope", 0): [1]})
    env.settle(lambda: env.cluster.list_reassignments())
    assert env.read("/admin/reassign_partitions")["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]


def test_api_reassignment_is_mirrored_and_overrides_zk_entry(env: Env):
    env.cluster.slow_broker(4, 0.01)
    reassign(env, {T0: [1, 2, 4], T1: [2, 3, 4]})
    env.settle(lambda: len(env.cluster.list_reassignments()) == 2)
    env.cluster.alter_reassignments({T1: [2, 3, 5]})  # as the wire face would
    env.face.flush()
    assert env.read("/admin/reassign_partitions")["partitions"] == [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 4]}]
    topic = env.read("/brokers/topics/t")
    assert topic["adding_replicas"] == {"0": [4], "1": [5]}
    assert topic["removing_replicas"] == {"0": [3], "1": [1]}


# -- elections, topics, configs --------------------------------------------------------------
def test_preferred_replica_election_znode(env: Env):
    env.cluster.stop_broker(1)
    env.cluster.start_broker(1)
    env.advance(1.0)
    assert env.read("/brokers/topics/t/partitions/0/state")["leader"] == 2
    env.write("/admin/preferred_replica_election",
              {"version": 1, "partitions": [{"topic": "t", "partition": 0}]})
    env.settle(lambda: env.zk.exists("/admin/preferred_replica_election") is None)
    assert env.read("/brokers/topics/t/partitions/0/state")["leader"] == 1


def test_topic_creation_and_partition_addition_as_admin_zk_client_does(env: Env):
    env.cluster.stop_broker(6)
    env.write("/config/topics/new", {"version": 1, "config": {"cleanup.policy": "compact"}})
    env.write("/brokers/topics/new", {"version": 1, "partitions": {"0": [6, 4], "1": [5, 6]}})
    env.settle(lambda: env.zk.exists("/brokers/topics/new/partitions/1/state"))
    assert env.read("/brokers/topics/new/partitions/0/state")["leader"] == 4
    assert env.read("/brokers/topics/new/partitions/0/state")["isr"] == [4]
    assert env.cluster.topic_config("new") == {"cleanup.policy": "compact"}
    wait_until(lambda: "topic_id" in env.read("/brokers/topics/new"))  # the controller adds it
    assert env.read("/brokers/topics/new")["topic_id"] == topic_id_string(
        env.cluster.topic_ids["new"])
    env.write("/brokers/topics/new", {"version": 1, "partitions": {
        "0": [6, 4], "1": [5, 6], "2": [4, 5]}})
    env.settle(lambda: env.zk.exists("/brokers/topics/new/partitions/2/state"))
    assert env.read("/brokers/topics/new/partitions/2/state")["leader"] == 4


def test_partition_addition_refused_while_reassigning(env: Env, caplog):
    caplog.set_level(logging.ERROR, logger="kafka_ops.emulator.zk_face")
    env.cluster.slow_broker(4, 0.01)
    reassign(env, {T0: [1, 2, 4]})
    env.settle(lambda: env.cluster.list_reassignments())
    topic = env.read("/brokers/topics/t")
    topic["partitions"]["2"] = [1, 2, 3]
    env.write("/brokers/topics/t", topic)
    env.settle(lambda: "A partition reassignment is in progress for the topic 't'." in caplog.text)
    assert TopicPartition("t", 2) not in env.cluster.partitions
    wait_until(lambda: "2" not in env.read("/brokers/topics/t")["partitions"])


def test_config_changes_from_the_api_are_written_with_a_notice(env: Env):
    env.cluster.incremental_alter_configs(
        "broker", "", [("leader.replication.throttled.rate", 0, "1000")])
    env.face.flush()
    assert env.read("/config/brokers/<default>") == {
        "version": 1, "config": {"leader.replication.throttled.rate": "1000"}}
    notices = env.zk.get_children("/config/changes")
    assert len(notices) == 1 and notices[0].startswith("config_change_")
    assert env.read(f"/config/changes/{notices[0]}") == {
        "version": 2, "entity_path": "brokers/<default>"}


# -- controller failover ---------------------------------------------------------------------
def test_failover_resumes_reassignment(env: Env):
    reassign(env, {T0: [4, 5, 6]})
    env.settle(lambda: env.cluster.list_reassignments())
    env.advance(15.0)
    env.zk.delete("/controller")
    env.settle(lambda: env.zk.exists("/controller"))
    assert env.zk.get("/controller_epoch")[0] == b"2"
    assert env.cluster.list_reassignments() == {T0: ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])}
    env.advance(15.0)
    assert env.read("/brokers/topics/t")["partitions"]["0"] == [4, 5, 6]


def test_failover_after_topic_znode_rewrite_cancels(env: Env):
    reassign(env, {T0: [4, 5, 6]})
    env.settle(lambda: env.cluster.list_reassignments())
    env.advance(15.0)
    # The ZooKeeper-era cancel: original replicas back, no adding/removing, znode gone,
    # controller moved.
    topic = env.read("/brokers/topics/t")
    topic.update(partitions={"0": [1, 2, 3], "1": [2, 3, 1]}, adding_replicas={},
                 removing_replicas={})
    env.write("/brokers/topics/t", topic)
    env.zk.delete("/admin/reassign_partitions")
    env.zk.delete("/controller")
    env.settle(lambda: not env.cluster.list_reassignments())
    p = env.cluster.partitions[T0]
    assert (p.replicas, p.leader, p.isr) == ([1, 2, 3], 1, [1, 2, 3])
    env.advance(100.0)
    assert env.read("/brokers/topics/t")["partitions"]["0"] == [1, 2, 3]
    assert env.cluster.describe_log_dirs(4) == {"/var/kafka-logs": {}}


def test_a_completion_just_before_the_failover_wins_over_the_reverted_znode(env: Env, monkeypatch):
    """The cancel race: an operator reverts the topic znode and deletes /controller, and the
    reassignment completes in the old controller before the new one has loaded. Kafka's
    controller handles both on one event queue, so the completion (B4-B6) comes first: the
    old replica is gone and RS = TRS is written over the revert. Loading the revert on top
    would bring back the deleted replica empty and leave the partition under-replicated."""
    reassign(env, {T0: [1, 2, 4]})
    env.settle(lambda: env.cluster.list_reassignments())
    env.advance(5.0)  # broker 4 has half of the 1,000 bytes
    topic = env.read("/brokers/topics/t")
    topic.update(partitions={"0": [1, 2, 3], "1": [2, 3, 1]}, adding_replicas={},
                 removing_replicas={})
    env.write("/brokers/topics/t", topic)
    env.zk.delete("/admin/reassign_partitions")
    failover = env.cluster.controller_failover

    def failover_as_the_last_bytes_land() -> None:
        env.clock.advance(100.0)  # the next tick completes the reassignment, unmirrored
        failover()

    monkeypatch.setattr(env.cluster, "controller_failover", failover_as_the_last_bytes_land)
    env.zk.delete("/controller")
    env.settle(lambda: env.zk.exists("/controller"))
    p = env.cluster.partitions[T0]
    assert not env.cluster.list_reassignments()
    assert (p.replicas, sorted(p.isr)) == ([1, 2, 4], [1, 2, 4])
    assert env.read("/brokers/topics/t")["partitions"]["0"] == [1, 2, 4]
    assert sorted(env.read("/brokers/topics/t/partitions/0/state")["isr"]) == [1, 2, 4]
    assert set(env.cluster.describe_log_dirs(3)["/var/kafka-logs"]) == {T1}  # t-0 deleted


# -- runtime ---------------------------------------------------------------------------------
def test_emulator_runtime_ticks_on_its_own(zk_connect: str):
    model = generate_cluster("small", seed=1)
    with Emulator(model, zookeeper=zk_connect, speed=10_000, tick_interval=0.01) as emulator:
        zk = KazooClient(hosts=zk_connect)
        zk.start(timeout=15)
        try:
            tp = next(iter(model.partitions))
            target = [b for b in model.broker_ids if b not in model.partitions[tp].replicas][:2]
            zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": target}]}).encode())
            wait_until(lambda: json.loads(zk.get(f"/brokers/topics/{tp.topic}")[0])[
                "partitions"][str(tp.partition)] == target, timeout=30)
            assert sorted(zk.get_children("/brokers/ids")) == sorted(
                str(b) for b in model.broker_ids)
        finally:
            zk.stop()
            zk.close()
    assert emulator.cluster.partitions[tp].replicas == target


EMULATOR = [sys.executable, "-m", "kafka_ops.emulator"]  # its own program, not a kafka-ops command


def test_cli_runs_until_sigterm_and_takes_faults(zk_connect: str, tmp_path: Path):
    control = str(tmp_path / "control.sock")
    process = subprocess.Popen(
        [*EMULATOR, "run", "--zookeeper", zk_connect, "--preset", "small",
         "--seed", "2", "--speed", "60", "--control-socket", control],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)

    def fault(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*EMULATOR, "fault", "--control-socket", control,
                               *args], capture_output=True, text=True, timeout=60)

    try:
        ready = process.stdout.readline()
        assert ready.startswith("emulator ready: 6 brokers, 60 partitions"), (
            ready + process.stderr.read() if process.poll() is not None else ready)
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2", "3", "4", "5"]
        assert fault("stop-broker", "3").returncode == 0
        wait_until(lambda: "3" not in zk.get_children("/brokers/ids"))
        refused = fault("slow-broker", "9", "0.5")
        assert (refused.returncode, refused.stderr) == (
            2, "error: fault refused: unknown broker 9\n")
        assert fault("start-broker", "3").returncode == 0
        wait_until(lambda: "3" in zk.get_children("/brokers/ids"))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stdout.read().strip() == "emulator stopped"
        assert not Path(control).exists()
        assert zk.get_children("/brokers/ids") == []  # the session ended with the process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        zk.stop()
        zk.close()
