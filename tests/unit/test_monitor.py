"""Monitor pieces without servers: metric names, the traffic model, the emulator's counters,
sample tables (gaps, stale and nonsensical samples counted), appends, the Python estimator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kafka_ops.cli import main
from kafka_ops.emulator import metrics as em
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.monitor import names
from kafka_ops.monitor.estimate import SnapshotLoadSource
from kafka_ops.monitor.schema import read_table
from kafka_ops.monitor.snapshot import take_snapshot
from kafka_ops.monitor.sources import BackendSource, PrometheusConfig, _build_tables, sample_times
from kafka_ops.snapshot import save_snapshot

TP = TopicPartition


def cluster() -> ClusterModel:
    cap = BrokerCapacity(10**12, 1000.0, 1000.0)
    brokers = [Broker(i, "ab"[i % 2], capacity=cap) for i in (1, 2, 3)]
    return ClusterModel(brokers, [
        Partition("a", 0, (1, 2), 1, (1, 2), 100, 10.0, 20.0),
        Partition("a", 1, (2, 3), 2, (2,), 200, 6.0, 0.0),
        Partition("b", 0, (3, 1), 3, (3, 1), 50, 4.0, 8.0),
    ])


def test_metric_names_are_the_exporters_and_the_emulators() -> None:
    """The list the snapshot reads equals what the emulator serves (derived from the MBeans)."""
    assert set(names.NAMES) == set(em.COUNTERS) | set(em.GAUGES)
    assert em.jmx_name("server", "BrokerTopicMetrics", "BytesInPerSec", "Count") == (
        "kafka_server_brokertopicmetrics_bytesin_total")
    assert em.jmx_name("log", "Log", "Size", "Value") == "kafka_log_log_size"
    for m in names.METRICS:
        domain_type, _, rest = m.mbean.partition(",name=")
        domain = domain_type.split(":")[0].split(".")[1]
        mtype = domain_type.split("type=")[1]
        name, _, attr = rest.split(",")[0].partition(" ")
        attr = attr or rest.rsplit(" ", 1)[1]
        assert em.jmx_name(domain, mtype, name, attr) == m.name, m


def test_traffic_integral_is_exact_and_reproducible() -> None:
    a = em.Traffic(["x", "y"], origin=0.0, seed=5, step=60)
    b = em.Traffic(["x", "y"], origin=0.0, seed=5, step=60)
    assert (a.integral(86400 * 1.5) == b.integral(86400 * 1.5)).all()
    # Piecewise constant: inside one bucket the integral grows linearly.
    i0, i1, i2 = a.integral(120.0), a.integral(150.0), a.integral(180.0)
    assert i2 - i1 == pytest.approx(i1 - i0) and (i1 > i0).all()
    # Without bursts and noise a whole day averages 1 (the model's rate is the daily mean).
    flat = em.Traffic(["x"], origin=0.0, noise=0.0, burst_chance=0.0)
    assert flat.mean_multiplier(0, 86400)[0] == pytest.approx(1.0, rel=1e-9)
    assert flat.mean_multiplier(14.5 * 3600, 15.5 * 3600)[0] > 1.45  # the afternoon peak
    with pytest.raises(ValueError):
        flat.mean_multiplier(10, 10)


def test_counters_follow_leaders_and_count_copies() -> None:
    clock = ManualClock(1000.0)
    c = EmulatedCluster(cluster(), clock=clock)
    now = [10_000.0]
    m = em.BrokerMetrics(c, now=lambda: now[0], history=3600)
    m.update()
    first = m.bytes_in.copy()
    i1, ta = m.bindex[1], m.traffic.index["a"]
    assert first[i1, ta] == pytest.approx(10.0 * m.traffic.integral(now[0])[ta])
    now[0] += 600
    c.alter_reassignments({TP("b", 0): [3, 2]})  # broker 2 copies b-0 (50 bytes)
    clock.advance(100)
    c.tick()
    m.update()
    assert (m.bytes_in >= first).all()  # monotonic
    assert m.repl_in[m.bindex[2]] >= 50 and m.repl_out[m.bindex[3]] >= 50
    assert f'{em.LOG_SIZE}{{topic="b",partition="0"}}' in m.render(2)
    c.stop_broker(3)  # a-1 and b-0 (now [3, 2], led by 2) lose their follower 3
    now[0] += 60
    text = m.render(2)
    assert f"{em.UNDER_REPLICATED} 2.0" in text and f"{em.PARTITION_COUNT} 3.0" in text
    assert f"{em.LEADER_COUNT} 2.0" in text


def test_build_tables_counts_instead_of_zeroing() -> None:
    model, t = cluster(), 600
    issues: Counter = Counter()
    up = {(3, t): False}
    rates = {"bytes_in": {(1, "a"): {t: 10.0}, (2, "a"): {t: -1.0}},
             "bytes_out": {(1, "a"): {t: 1e9}}}
    sizes = {(1, "a", 0): {t: 100.0}}
    parts, bt, brokers = _build_tables(model, [t], up, rates, sizes, {}, issues)
    size = {(r["topic"], r["partition"]): r["size_bytes"] for r in parts.to_pylist()}
    assert size == {("a", 0): 100, ("a", 1): None, ("b", 0): None}
    rows = {(r["broker"], r["topic"]): r for r in bt.to_pylist()}
    assert rows[1, "a"]["bytes_in"] == 10.0 and rows[1, "a"]["bytes_out"] is None  # > 100x cap
    assert rows[2, "a"]["bytes_in"] is None  # negative
    assert issues == {"missing_size_samples": 1, "stale_samples": 4, "nonsensical_samples": 2,
                      "missing_rate_samples": 3, "broker_down_samples": 1}
    assert [r["up"] for r in brokers.to_pylist()] == [None, None, False]


def test_snapshot_appends_after_the_last_run(tmp_path: Path) -> None:
    model, ds = cluster(), tmp_path / "ds"
    first = take_snapshot(model, BackendSource(), ds, "c1", step=300, now=lambda: 3000.0)
    assert (first.samples, first.rows["partitions"], first.issues) == (
        1, 3, {"rates_unavailable": 1})
    again = take_snapshot(model, BackendSource(), ds, "c1", step=300, now=lambda: 3000.0)
    assert again.samples == 0 and again.rows == {}  # nothing new since the last run
    later = take_snapshot(model, BackendSource(), ds, "c1", step=300, now=lambda: 3600.0)
    assert later.samples == 1
    times = sorted({r["time"].timestamp() for r in read_table(ds, "partitions", "c1").to_pylist()})
    assert times == [3000, 3600]
    with pytest.raises(ValidationError, match="cluster name"):
        take_snapshot(model, BackendSource(), ds, "a/b")
    assert sample_times(299, 900, 300) == [300, 600, 900]


def test_python_estimator_from_snapshots(tmp_path: Path) -> None:
    """Cruise Control's split on real Parquet written by the snapshot code."""
    model, ds = cluster(), tmp_path / "ds"
    issues: Counter = Counter()
    rates = {"bytes_in": {(1, "a"): {600: 10.0}, (3, "b"): {600: 4.0}, (2, "a"): {600: 6.0}},
             "bytes_out": {(1, "a"): {600: 20.0}, (3, "b"): {600: 8.0}, (2, "a"): {600: 0.0}}}
    sizes = {(1, "a", 0): {600: 100.0}, (2, "a", 1): {600: 200.0}, (3, "b", 0): {600: 50.0}}
    tables = _build_tables(model, [600], {}, rates, sizes, {}, issues)
    from kafka_ops.monitor.schema import write_table

    for name, table in zip(("partitions", "broker_topics", "brokers"), tables, strict=True):
        write_table(ds, name, "c", table)
    source = SnapshotLoadSource.from_spec(f"{ds}@c@0..1000")
    loads = source.read(model)
    assert loads.partitions[TP("a", 0)].bytes_in_per_sec == 10.0
    assert loads.partitions[TP("a", 1)].size_bytes == 200
    assert loads.partitions[TP("b", 0)].bytes_out_per_sec == 8.0
    with pytest.raises(ValidationError, match="DIR@CLUSTER"):
        SnapshotLoadSource.from_spec(str(ds))


def test_cli_snapshot_and_secrets(tmp_path: Path, capsys, monkeypatch) -> None:
    save_snapshot(cluster(), tmp_path / "c.json")
    code = main(["snapshot", "--cluster", str(tmp_path / "c.json"), "--dataset",
                 str(tmp_path / "ds"), "--name", "c", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"]["partitions"] == 3 and out["issues"] == {"rates_unavailable": 1}
    assert main(["snapshot", "--cluster", str(tmp_path / "c.json"), "--dataset",
                 str(tmp_path / "ds"), "--name", "c", "--step", "0"]) == 2
    err = capsys.readouterr().err  # refused by the shared validation layer (kafka_ops.inputs)
    assert "--step" in err and "must be positive" in err
    # Credentials from the environment; an unreachable Prometheus errors without echoing them.
    monkeypatch.setenv("PROMETHEUS_PASSWORD", "hunter2-secret")
    monkeypatch.setenv("PROMETHEUS_USERNAME", "ops")
    code = main(["snapshot", "--cluster", str(tmp_path / "c.json"), "--dataset",
                 str(tmp_path / "ds2"), "--name", "c", "--prometheus", "http://127.0.0.1:9"])
    captured = capsys.readouterr()
    assert code == 2 and "cannot query Prometheus" in captured.err
    assert "hunter2" not in captured.err + captured.out
    assert "hunter2" not in repr(PrometheusConfig("u", "ops", "hunter2"))
