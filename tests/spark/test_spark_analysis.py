"""spark_jobs/balance_analysis.py on a real local SparkSession: exact aggregates on hand-computed
inputs, gaps reported, agreement with the pure-Python estimator on generated data, and the job
as a spark-submit subprocess (local and a standalone cluster) whose output the planner reads."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_ops.loads import AnalysisOutputSource
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.monitor.estimate import estimate_loads
from kafka_ops.monitor.schema import TABLES, read_table, write_table
from kafka_ops.snapshot import save_snapshot
from kafka_ops.testing.zookeeper import free_port
from spark_jobs.balance_analysis import analyze

pytestmark = pytest.mark.slow  # a SparkSession takes 10-25 s to start here
ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
T0 = 1_699_999_800  # a multiple of 300
T1 = T0 + 300
TP = TopicPartition


def _brokers_rows(times, up=None, capacity=None, leader_count=None):
    rows = []
    for t in times:
        for b, rack in ((1, "a"), (2, "a"), (3, "b"), (4, "b")):
            rows.append({"time": t, "broker": b, "rack": rack, "alive": True,
                         "up": (up or {}).get((b, t), True), "disk_capacity": (capacity or {}).get(b, 0),
                         "network_in_capacity": 0.0, "network_out_capacity": 0.0,
                         "leader_count": (leader_count or {}).get((b, t))})
    return rows


def _table(name: str, rows: list[dict]) -> pa.Table:
    schema = TABLES[name]
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(cols, schema=schema)


def hand_dataset(root: Path) -> None:
    """Four brokers (racks a, a, b, b; broker 4 empty), two sample times, gaps on purpose."""
    parts = []
    layout = [("a", 0, [1, 2], 1, (100, 110)), ("a", 1, [2, 3], 2, (200, 220)),
              ("a", 2, [1, 3], 1, (300, None)), ("b", 0, [3, 1], 3, (50, 60)),
              ("c", 0, [2, 3], -1, (None, None))]
    for i, t in enumerate((T0, T1)):
        for topic, p, replicas, leader, sizes in layout:
            parts.append({"time": t, "topic": topic, "partition": p, "leader": leader,
                          "replicas": replicas, "isr_size": 0 if leader < 0 else 2,
                          "size_bytes": sizes[i]})
    bt = [
        {"time": T0, "broker": 1, "topic": "a", "bytes_in": 10.0, "bytes_out": 20.0, "messages_in": 1.0},
        {"time": T0, "broker": 2, "topic": "a", "bytes_in": 6.0, "bytes_out": 0.0, "messages_in": 1.0},
        {"time": T0, "broker": 3, "topic": "b", "bytes_in": 4.0, "bytes_out": 8.0, "messages_in": 1.0},
        {"time": T1, "broker": 1, "topic": "a", "bytes_in": 30.0, "bytes_out": 40.0, "messages_in": 1.0},
        # broker 2's topic-a rates at T1 are missing
        {"time": T1, "broker": 3, "topic": "b", "bytes_in": 8.0, "bytes_out": 8.0, "messages_in": 1.0},
    ]
    write_table(root, "partitions", "hand", _table("partitions", parts))
    write_table(root, "broker_topics", "hand", _table("broker_topics", bt))
    write_table(root, "brokers", "hand", _table(
        "brokers", _brokers_rows((T0, T1), up={(2, T0): False}, capacity={3: 600},
                                 # the brokers' own LeaderCount; broker 2 was down at T0
                                 leader_count={(1, T0): 2, (1, T1): 2, (2, T1): 1, (3, T0): 1,
                                               (3, T1): 3, (4, T0): 0, (4, T1): 0})))


def test_exact_aggregates(spark, tmp_path: Path) -> None:
    data, out = tmp_path / "ds", tmp_path / "out"
    hand_dataset(data)
    summary = analyze(spark, str(data), "hand", T0, T1, str(out), pools={1: "p", 2: "p", 3: "q"},
                      charts=False)
    pl = {(r["topic"], r["partition"]): r for r in
          spark.read.parquet(str(out / "partition_loads")).collect()}
    # a-0 and a-2 share broker 1's topic-a rate: (10, 20)/2 then (30, 40)/2.
    assert (pl["a", 0]["bytes_in_per_sec"], pl["a", 0]["bytes_out_per_sec"]) == (10.0, 15.0)
    assert (pl["a", 0]["bytes_in_max"], pl["a", 0]["size_bytes"]) == (15.0, 110)
    # The 95th percentile is exact: the sample of rank ceil(0.95 x samples present).
    assert (pl["a", 0]["bytes_in_p95"], pl["a", 0]["bytes_out_p95"]) == (15.0, 20.0)
    assert (pl["a", 1]["bytes_in_p95"], pl["b", 0]["bytes_in_p95"]) == (6.0, 8.0)
    assert (pl["a", 2]["size_bytes"], pl["a", 2]["size_gaps"]) == (300, 1)  # latest known size
    assert (pl["a", 1]["bytes_in_per_sec"], pl["a", 1]["rate_gaps"]) == (6.0, 1)
    assert (pl["b", 0]["bytes_in_per_sec"], pl["b", 0]["bytes_out_per_sec"]) == (6.0, 8.0)
    assert pl["c", 0]["bytes_in_per_sec"] is None and pl["c", 0]["size_bytes"] is None

    ts = {(r["time"].timestamp(), r["broker"]): r for r in
          spark.read.parquet(str(out / "broker_timeseries")).collect()}
    b1 = ts[T0, 1]
    assert (b1["replicas"], b1["leaders"], b1["disk"]) == (3, 2, 450)
    assert (b1["network_in"], b1["network_out"], b1["leader_bytes_in"]) == (14.0, 30.0, 10.0)
    assert (ts[T1, 2]["network_in"], ts[T1, 2]["network_out"], ts[T1, 2]["rate_gaps"]) == (15.0, 0.0, 1)
    assert (ts[T0, 1]["leader_count"], ts[T0, 2]["leader_count"], ts[T1, 3]["leader_count"]) == (
        2, None, 3)

    bl = {r["broker"]: r for r in spark.read.parquet(str(out / "broker_loads")).collect()}
    assert (bl[1]["network_in"], bl[1]["network_out"], bl[1]["leader_bytes_in"]) == (26.0, 50.0, 20.0)
    assert (bl[2]["network_in"], bl[2]["network_out"], bl[3]["network_in"]) == (13.0, 3.0, 19.0)
    assert [bl[b]["disk"] for b in (1, 2, 3)] == [470, 330, 580]
    assert (bl[4]["replicas"], bl[4]["disk"], bl[2]["down_samples"]) == (0, 0, 1)
    assert [(bl[b]["leader_count_min"], bl[b]["leader_count_max"], bl[b]["leader_count_mean"],
             bl[b]["leader_count_changes"], bl[b]["leader_count_gaps"]) for b in (1, 2, 3)] == [
        (2, 2, 2.0, 0, 0), (1, 1, 1.0, 0, 1), (1, 3, 2.0, 1, 0)]
    lead = summary["leadership"]
    # Spread over live brokers per time: T0 {2, 1, 0} -> 2 (broker 2 not reported), T1 {2, 1, 3, 0} -> 3.
    assert (lead["max_minus_min_worst"], lead["max_minus_min_mean"], lead["missing_samples"]) == (
        3, 2.5, 1)
    assert lead["brokers"]["3"] == {"min": 1, "max": 3, "mean": 2.0, "changes": 1}
    racks = {r["rack"]: r for r in spark.read.parquet(str(out / "rack_loads")).collect()}
    assert (racks["a"]["network_in"], racks["a"]["disk"], racks["b"]["brokers"]) == (39.0, 800, 2)
    pools = {r["pool"]: r for r in spark.read.parquet(str(out / "pool_loads")).collect()}
    assert (pools["p"]["brokers"], pools["q"]["network_in"]) == (2, 19.0)
    topics = {r["topic"]: r for r in spark.read.parquet(str(out / "topic_loads")).collect()}
    assert (topics["a"]["size_bytes"], topics["a"]["bytes_in_per_sec"]) == (630, 26.0)

    imb = summary["imbalance"]["network_in"]
    assert imb["mean"] == pytest.approx(14.5) and imb["max"] == 26.0
    assert imb["max_over_mean"] == pytest.approx(26 / 14.5) and imb["brokers_over"] == [1, 3]
    assert summary["imbalance"]["replicas"]["brokers_over"] == [1, 2, 3]
    assert summary["issues"] == {"missing_size_samples": 1, "missing_rate_samples": 1}
    anomalies = summary["anomalies"]
    assert (anomalies["offline_partitions"], anomalies["under_replicated_partitions"]) == (1, 1)
    assert anomalies["brokers_without_load"] == [4] and anomalies["dead_brokers"] == []
    assert anomalies["over_capacity"] == [
        {"broker": 3, "resource": "disk", "utilisation": pytest.approx(580 / 600)}]
    assert anomalies["metric_gaps"]["brokers_down_samples"] == {2: 1}

    # The load seam: the partition without any estimate is left out and counted, not zeroed.
    loads = AnalysisOutputSource(out).read(ClusterModel([], []))
    assert TP("c", 0) not in loads.partitions
    assert loads.issues["partitions_without_estimate"] == 1
    assert loads.partitions[TP("a", 2)].bytes_in_per_sec == 10.0


def generated_dataset(root: Path, seed: int, times: int = 6) -> None:
    """Random assignments, leaders moving between samples, rates and sizes with random gaps."""
    rng = random.Random(seed)
    brokers = list(range(1, 7))
    layout = [(f"t{t}", p, rng.sample(brokers, rng.choice((1, 2, 3))))
              for t in range(5) for p in range(rng.randint(1, 8))]
    parts, bt = [], []
    for k in range(times):
        t = T0 + 300 * k
        leaders: dict[tuple[int, str], int] = {}
        for topic, p, replicas in layout:
            leader = rng.choice(replicas) if rng.random() > 0.05 else -1
            size = rng.randint(0, 10**6) if rng.random() > 0.1 else None
            parts.append({"time": t, "topic": topic, "partition": p, "leader": leader,
                          "replicas": replicas, "isr_size": len(replicas), "size_bytes": size})
            if leader >= 0:
                leaders[(leader, topic)] = 1
        for broker, topic in leaders:
            if rng.random() < 0.1:
                continue  # a missing sample
            bt.append({"time": t, "broker": broker, "topic": topic,
                       "bytes_in": rng.uniform(0, 1e6), "bytes_out": rng.uniform(0, 3e6),
                       "messages_in": 1.0})
    write_table(root, "partitions", "gen", _table("partitions", parts))
    write_table(root, "broker_topics", "gen", _table("broker_topics", bt))
    brokers_rows = [{"time": T0 + 300 * k, "broker": b, "rack": None, "alive": True, "up": True}
                    for k in range(times) for b in brokers]
    write_table(root, "brokers", "gen", _table("brokers", brokers_rows))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_the_python_estimator(spark, tmp_path: Path, seed: int) -> None:
    """Second implementation: kafka_ops.monitor.estimate, same estimate, no Spark."""
    data, out = tmp_path / "ds", tmp_path / "out"
    generated_dataset(data, seed)
    analyze(spark, str(data), "gen", T0, T0 + 3600, str(out), charts=False)
    spark_loads = AnalysisOutputSource(out).read(ClusterModel([], []))
    python = estimate_loads(read_table(data, "partitions", "gen"),
                            read_table(data, "broker_topics", "gen"))
    both = {tp for tp, load in python.partitions.items() if tp in spark_loads.partitions}
    assert both and len(both) >= len(python.partitions) - python.issues.get(
        "partitions_without_rates", 0)
    for tp in both:
        s, p = spark_loads.partitions[tp], python.partitions[tp]
        assert s.size_bytes == p.size_bytes, tp
        assert s.bytes_in_per_sec == pytest.approx(p.bytes_in_per_sec, rel=1e-9), tp
        assert s.bytes_out_per_sec == pytest.approx(p.bytes_out_per_sec, rel=1e-9), tp


def _env() -> dict[str, str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(ROOT),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    return env


def _submit(master: str, data: Path, out: Path, timeout: float = 240) -> dict:
    cmd = [str(VENV_BIN / "spark-submit"), "--master", master,
           "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.memory=1g",
           "--conf", "spark.executor.memory=512m",
           "--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
           str(ROOT / "spark_jobs" / "balance_analysis.py"), "--snapshots", str(data),
           "--cluster", "hand", "--start", str(T0), "--end", "2023-11-14T22:15:00Z",
           "--output", str(out)]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_spark_submit_local_and_the_planner_reads_it(tmp_path: Path) -> None:
    data, out = tmp_path / "ds", tmp_path / "out"
    hand_dataset(data)
    printed = _submit("local[2]", data, out)
    assert printed["partitions"] == 5 and printed["issues"]["missing_rate_samples"] == 1
    assert (out / "charts" / "broker_load.png").stat().st_size > 1000
    assert (out / "charts" / "imbalance.png").stat().st_size > 1000
    # The planner reads the output through the load seam (kafka-ops plan ... --loads DIR).
    model = ClusterModel([Broker(b, "ab"[b > 2]) for b in (1, 2, 3, 4)], [
        Partition("a", 0, (1, 2), 1, (1, 2)), Partition("a", 1, (2, 3), 2, (2, 3)),
        Partition("a", 2, (1, 3), 1, (1, 3)), Partition("b", 0, (3, 1), 3, (3, 1)),
        Partition("c", 0, (2, 3), 2, (2, 3), size_bytes=7)])
    save_snapshot(model, tmp_path / "cluster.json")
    goals = {}
    for loads in (["--loads", str(out)], []):
        cli = subprocess.run(
            [sys.executable, "-c", "import sys; from kafka_ops.cli import main; sys.exit(main())",
             "plan", "rebalance", "--cluster", str(tmp_path / "cluster.json"), *loads, "--json"],
            env=_env(), capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        goals[bool(loads)] = {g["name"]: g for g in json.loads(cli.stdout)["summary"]["goals"]}
    # With the analysis' loads broker network in is 26, 16, 22, 0 (c-0 has no estimate and keeps
    # its own zero): max/mean 26/16 before the plan. Without them the planner sees no network.
    assert goals[True]["network_in"]["before"]["max_over_mean"] == pytest.approx(1.625, abs=1e-4)
    assert goals[True]["network_in"]["after"]["max_over_mean"] < 1.625
    assert not goals[False]["network_in"]["before"].get("max_over_mean")


def test_spark_standalone_cluster(tmp_path: Path) -> None:
    """A real Spark standalone master and worker from pyspark's spark-class, on loopback."""
    data, out = tmp_path / "ds", tmp_path / "out"
    hand_dataset(data)
    port, ui, wui = free_port(), free_port(), free_port()
    env = _env()
    env["SPARK_WORKER_DIR"] = str(tmp_path / "work")
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"  # no fixed port 6066
    spark_class = str(VENV_BIN / "spark-class")
    logs = [open(tmp_path / "master.log", "wb"), open(tmp_path / "worker.log", "wb")]
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)], env=env, stdout=logs[0],
        stderr=subprocess.STDOUT, start_new_session=True)
    worker = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
         "--webui-port", str(wui), "-c", "1", "-m", "1g", f"spark://127.0.0.1:{port}"],
        env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while b"Registering worker" not in (tmp_path / "master.log").read_bytes():
            assert time.monotonic() < deadline, (tmp_path / "master.log").read_text()[-2000:]
            assert master.poll() is None and worker.poll() is None
            time.sleep(0.5)
        printed = _submit(f"spark://127.0.0.1:{port}", data, out, timeout=280)
        assert printed["partitions"] == 5
        summary = json.loads((out / "summary.json").read_text())
        assert summary["imbalance"]["network_in"]["max"] == 26.0
        master_log = (tmp_path / "master.log").read_text(errors="replace")
        assert "Registering app kafka-ops-balance-analysis" in master_log, master_log[-3000:]
    finally:
        for proc in (worker, master):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for f in logs:
            f.close()
