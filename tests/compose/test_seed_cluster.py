"""scripts/seed_cluster.py against the emulator, reached as a real cluster is: the script runs as
a subprocess and speaks the Kafka protocol to the emulator's listeners (confluent-kafka);
what it did is read back through kafka-ops' own backends (the Admin API one, and for the
ZooKeeper-mode cluster the ZooKeeper one that the compose stack's DAGs use).

The expected placement is decided here from the script's documented rule, not from its code:
with brokers 1-4 on racks a, b, a, b and RF 2, the hot brokers are 1 and 2 (lowest ids, one per
rack), and ``--skew 0.75`` of 8 partitions puts 6 per topic on them, led by broker 1.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_ops.backends.admin import AdminApiBackend
from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "seed_cluster.py"
TOPICS = [f"seed.{i}" for i in range(4)]
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-a", 4: "rack-b"}


def four_brokers() -> ClusterModel:
    capacity = BrokerCapacity(disk_bytes=10**12, network_in_bytes_per_sec=10**8,
                              network_out_bytes_per_sec=10**8)
    brokers = [Broker(id=i, rack=r, capacity=capacity) for i, r in RACKS.items()]
    return ClusterModel(brokers, [Partition("existing", 0, (3, 4), 3, (3, 4), size_bytes=10**6)])


@contextmanager
def cluster(mode: str, zk_connect: str | None = None) -> Iterator[tuple[str, ClusterBackend]]:
    """The emulated cluster's bootstrap servers, and the backend kafka-ops would use on it."""
    if mode == "kraft":
        with Emulator(four_brokers(), mode="kraft", wire=True) as emu:
            backend = AdminApiBackend(emu.bootstrap_servers, request_timeout_s=15.0)
            try:
                yield emu.bootstrap_servers, backend
            finally:
                backend.close()
    else:
        with Emulator(four_brokers(), zookeeper=zk_connect, mode="zk", wire=True) as emu:
            backend = ZooKeeperBackend(zk_connect)
            try:
                yield emu.bootstrap_servers, backend
            finally:
                backend.close()


def seed(bootstrap: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--bootstrap-server", bootstrap, "--topics", "4",
         "--partitions", "8", "--replication-factor", "2", "--skew", "0.75", "--timeout", "15",
         *args],
        capture_output=True, text=True, timeout=timeout, check=False)


def seeded(backend: ClusterBackend, want: int = len(TOPICS), timeout: float = 15) -> ClusterModel:
    """The cluster as the backend sees it once ``want`` seeded topics are visible and each of
    their partitions has a leader. The ZooKeeper face, as ZooKeeper-mode Kafka does, writes a
    created topic's znode a moment after the Admin API answers, and each partition's state
    (leader, ISR) after that: read in between, a partition shows leader -1 (a CI run under
    load read 8 such partitions)."""
    deadline = time.monotonic() + timeout
    while True:
        model = backend.describe_cluster()
        seen = [t for t in TOPICS if t in model.topics]
        led = not any(p.is_offline for t in seen for p in model.topics[t])
        if (len(seen) >= want and led) or time.monotonic() > deadline:
            return model
        time.sleep(0.1)


@pytest.mark.parametrize("mode", ["kraft", pytest.param("zk", marks=pytest.mark.zookeeper)])
def test_seed_creates_unbalanced_rack_aware_topics(mode: str,
                                                   request: pytest.FixtureRequest) -> None:
    zk_connect = request.getfixturevalue("zk_connect") if mode == "zk" else None
    with cluster(mode, zk_connect) as (bootstrap, backend):
        before = backend.describe_cluster()
        result = seed(bootstrap, "--json")
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        model = seeded(backend)

        assert sorted(summary["created"]) == TOPICS and summary["hot_brokers"] == [1, 2]
        replicas, leaders = Counter(), Counter()
        for topic in TOPICS:
            parts = model.topics[topic]
            assert len(parts) == 8
            on_hot = [p for p in parts if set(p.replicas) == {1, 2} and p.replicas[0] == 1]
            assert len(on_hot) >= 6, f"{topic}: {[p.replicas for p in parts]}"
            for p in parts:
                assert len(p.replicas) == 2
                assert len({RACKS[b] for b in p.replicas}) == 2, f"{p} not rack-aware"
                replicas.update(p.replicas)
                leaders[p.leader] += 1
        # Skewed: the hot brokers hold most replicas, broker 1 leads most partitions.
        assert min(replicas[1], replicas[2]) >= 3 * max(replicas[3], replicas[4])
        assert leaders[1] >= 0.75 * sum(leaders.values())
        # The script's own summary is what the cluster holds.
        assert {int(b): n for b, n in summary["replicas"].items()} == dict(replicas)
        assert {int(b): n for b, n in summary["leaders"].items()} == dict(leaders)
        # Nothing else was touched.
        assert model.topics["existing"] == before.topics["existing"]


def test_rerun_leaves_existing_topics_as_they_are() -> None:
    with cluster("kraft") as (bootstrap, backend):
        assert seed(bootstrap).returncode == 0
        first = seeded(backend)
        again = seed(bootstrap, "--json", "--skew", "0")  # another placement, were it applied
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
        assert summary["created"] == [] and sorted(summary["already_existed"]) == TOPICS
        second = backend.describe_cluster()
        assert {t: second.topics[t] for t in TOPICS} == {t: first.topics[t] for t in TOPICS}


def test_traffic_is_refused_at_once_by_a_cluster_without_produce() -> None:
    """The emulator has no data path (it serves no Produce): seeding says so plainly and
    quickly, after the topics are in place, instead of waiting out the delivery timeout."""
    with cluster("kraft") as (bootstrap, backend):
        started = time.monotonic()
        result = seed(bootstrap, "--traffic-mb", "0.1", "--traffic-timeout", "60")
        elapsed = time.monotonic() - started
        assert result.returncode == 1
        assert "does not serve Produce" in result.stderr
        assert elapsed < 45, f"took {elapsed:.0f}s: the refusal should not wait for the timeout"
        assert all(t in seeded(backend).topics for t in TOPICS)


def load_script():
    spec = importlib.util.spec_from_file_location("seed_cluster", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["seed_cluster"] = module
    spec.loader.exec_module(module)
    return module


def test_traffic_reaches_a_cluster_that_serves_produce() -> None:
    """The traffic path against librdkafka's built-in mock cluster (a real client speaking the
    Kafka protocol to brokers that serve Produce and Metadata, nothing else): every record is
    acknowledged, and the hot third of the topics gets the most of it."""
    seed_cluster = load_script()
    topics = [f"t{i}" for i in range(6)]
    result = seed_cluster.produce({"test.mock.num.brokers": "3"}, topics, 2.0, timeout=30)
    records = int(2.0 * 1_000_000 / 1024)
    assert result["records"] == result["delivered"] == records and result["failed"] == 0
    assert sum(result["per_topic"].values()) == records
    hot, cold = [result["per_topic"][t] for t in topics[:2]], \
        [result["per_topic"][t] for t in topics[2:]]
    assert min(hot) >= 3 * max(cold), result["per_topic"]


@pytest.mark.parametrize("args,complaint", [
    (["--replication-factor", "5"], "--replication-factor 5 is more than the 4 brokers"),
    (["--hot-brokers", "1,9"], "--hot-brokers [9] are not brokers"),
    (["--skew", "1.5"], "--skew must be between 0 and 1"),
    (["--prefix", "bad name "], "illegal topic names"),
])
def test_bad_input_is_named_and_creates_nothing(args: list[str], complaint: str) -> None:
    with cluster("kraft") as (bootstrap, backend):
        result = seed(bootstrap, *args)
        assert result.returncode == 2
        assert complaint in result.stderr
        assert set(backend.describe_cluster().topics) == {"existing"}


@pytest.mark.slow
def test_the_planner_sees_the_imbalance_it_should_fix() -> None:
    """What the compose stack's first DAG run meets: kafka-ops' own planner, on the seeded
    cluster, proposes moves that spread the replicas."""
    with cluster("kraft") as (bootstrap, backend):
        assert seed(bootstrap).returncode == 0
        model = seeded(backend)
        per_broker = Counter(b for p in model.partitions.values() for b in p.replicas)
        result = subprocess.run(
            [sys.executable, "-c", "from kafka_ops.cli import main; raise SystemExit(main())",
             "plan", "rebalance", "--bootstrap-server", bootstrap,
             "--goals", "replica_count,leader_count", "--json"],
            capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)
        after = Counter(per_broker)
        moves = plan_partitions(plan)
        assert moves, "the planner proposes nothing on a skewed cluster"
        for p in model.partitions.values():
            if (p.topic, p.partition) in moves:
                after.subtract(p.replicas)
                after.update(moves[(p.topic, p.partition)])
        def spread(counts: Counter) -> int:
            return max(counts.values()) - min(counts[b] for b in RACKS)

        assert spread(after) < spread(per_broker) / 2, (per_broker, after)


def plan_partitions(output: dict) -> dict[tuple[str, int], list[int]]:
    """The reassignment (Kafka's JSON: partitions of topic/partition/replicas) in the
    planner's --json output, wherever it nests it."""
    stack = [output]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            parts = node.get("partitions")
            if isinstance(parts, list) and parts and isinstance(parts[0], dict) \
                    and "replicas" in parts[0]:
                return {(p["topic"], p["partition"]): p["replicas"] for p in parts}
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return {}


@pytest.mark.slow
def test_a_sasl_cluster_is_seeded_with_credentials_kept_out_of_the_output(
        tmp_path: Path) -> None:
    """Secrets come from --command-config (Kafka tools' properties) and never show, whether
    the login works or not."""
    secret = "pw-3f9a1c77e2"
    with Emulator(four_brokers(), mode="kraft", wire=True,
                  sasl_plain_users={"kafka-ops": secret}) as emu:
        for password, code in ((secret, 0), ("wrong-" + secret, 1)):
            config = tmp_path / f"client-{code}.properties"
            config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                              f"sasl.username=kafka-ops\nsasl.password={password}\n")
            result = seed(emu.bootstrap_servers, "--command-config", str(config),
                          "--timeout", "5", "--prefix", f"sasl{code}.")
            assert result.returncode == code, result.stderr
            assert secret not in result.stdout + result.stderr
            if code == 0:
                assert "created 4 topics" in result.stdout
            else:
                assert "seed: failed:" in result.stderr and "uthentication" in result.stderr
