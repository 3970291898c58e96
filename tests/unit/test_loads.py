"""The load seam: load types, sources, laying loads over a model, and the planner reading them."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

from kafka_ops.errors import ValidationError
from kafka_ops.load_spec import load_source_from_spec
from kafka_ops.loads import (
    AnalysisOutputSource,
    BrokerLoad,
    Loads,
    LoadsFileSource,
    LoadSource,
    ModelFieldsSource,
    PartitionLoad,
    broker_loads,
    lay_loads,
    with_loads,
)
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.planner.state import WorkingState
from kafka_ops.testing.clusters import four_broker_cluster
from kafka_ops.testing.strategies import clusters

TP = TopicPartition


def test_partition_load_rejects_nonsense() -> None:
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValidationError, match="bytes_in_per_sec"):
            PartitionLoad(bytes_in_per_sec=bad)
    with pytest.raises(ValidationError, match="cpu"):
        PartitionLoad(cpu=-0.1)
    with pytest.raises(ValidationError, match="t-0 size_bytes must be a number"):
        PartitionLoad.from_dict({"size_bytes": "big"}, "t-0")


def test_lay_loads_replaces_loads_keeps_topology() -> None:
    model = four_broker_cluster()
    loads = Loads({TP("orders", 0): PartitionLoad(5, 10.0, 20.0),
                   TP("gone", 0): PartitionLoad(1, 1.0, 1.0)}, "test")
    out = lay_loads(model, loads)
    assert out is not model
    p = out.partition("orders", 0)
    assert (p.size_bytes, p.bytes_in_per_sec, p.bytes_out_per_sec) == (5, 10.0, 20.0)
    assert (p.replicas, p.leader, p.isr) == ((1, 2), 1, (1, 2))
    # Uncovered partitions keep the model's own fields by default...
    assert out.partition("orders", 1).size_bytes == 2000
    # ...are zeroed only when asked, and refuse when told to.
    assert lay_loads(model, loads, "zero").partition("orders", 1).size_bytes == 0
    with pytest.raises(ValidationError, match="miss 4 partition"):
        lay_loads(model, loads, "error")
    with pytest.raises(ValidationError, match="on_missing"):
        lay_loads(model, loads, "ignore")  # type: ignore[arg-type]
    # The original is untouched and the unknown partition is not invented.
    assert model.partition("orders", 0).size_bytes == 1000
    assert "gone" not in out.topics
    cov = loads.coverage(model)
    assert (cov.covered, len(cov.missing), cov.unknown) == (1, 4, (TP("gone", 0),))


def test_broker_loads_hand_computed() -> None:
    b = [Broker(1), Broker(2), Broker(3)]
    parts = [
        Partition("a", 0, (1, 2), leader=2, isr=(1, 2), size_bytes=100,
                  bytes_in_per_sec=10.0, bytes_out_per_sec=30.0),
        Partition("a", 1, (2, 3, 1), leader=2, isr=(2, 3, 1), size_bytes=7,
                  bytes_in_per_sec=1.0, bytes_out_per_sec=0.0),
    ]
    loads = Loads({TP("a", 0): PartitionLoad(cpu=0.25), TP("a", 1): PartitionLoad(cpu=0.5)}, "t")
    got = broker_loads(ClusterModel(b, parts), loads)
    # Broker 2 leads both: out = 30 + 10*1 + 0 + 1*2 = 42; leader bytes in 11.
    assert got[2] == BrokerLoad(2, 2, 107, 11.0, 42.0, 11.0, 0.75)
    assert got[1] == BrokerLoad(2, 0, 107, 11.0, 0.0, 0.0, None)
    assert got[3] == BrokerLoad(1, 0, 7, 1.0, 0.0, 0.0, None)
    pref = broker_loads(ClusterModel(b, parts), preferred=True)
    assert pref[1].leaders == 1 and pref[1].network_out_bytes_per_sec == 40.0


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_broker_loads_agree_with_the_planner(model: ClusterModel) -> None:
    """Second implementation: the planner's incremental WorkingState sums."""
    ws = WorkingState(model)
    got = broker_loads(model, preferred=True)
    for i, bid in enumerate(ws.broker_ids):
        g = got[bid]
        assert (g.replicas, g.leaders, g.disk_bytes) == (ws.count[i], ws.leaders[i], ws.disk[i])
        assert g.network_in_bytes_per_sec == pytest.approx(ws.net_in[i])
        assert g.network_out_bytes_per_sec == pytest.approx(ws.net_out[i])
        assert g.leader_bytes_in_per_sec == pytest.approx(ws.leader_in[i])


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_fields_source_round_trips(model: ClusterModel) -> None:
    loads = ModelFieldsSource().read(model)
    assert lay_loads(model, loads, "error").partitions == model.partitions
    again = Loads.from_dict(json.loads(json.dumps(loads.to_dict())))
    assert again == loads


def test_loads_file_source(tmp_path) -> None:
    model = four_broker_cluster()
    loads = Loads({TP("events", 1): PartitionLoad(9, 1.5, 2.5, cpu=0.1)}, "x",
                  "2026-11-22T00:00:00Z", "2026-11-22T01:00:00Z", {"stale": 2})
    path = tmp_path / "loads.json"
    path.write_text(json.dumps(loads.to_dict()))
    src = load_source_from_spec(f"file:{path}")
    assert isinstance(src, LoadSource) and src.describe() == f"file:{path}"
    assert src.read(model) == loads
    path.write_text("{")
    with pytest.raises(ValidationError, match="not valid JSON"):
        src.read(model)
    path.write_text(json.dumps({"topics": {"t": {"zero": {}}}}))
    with pytest.raises(ValidationError, match="bad partition 'zero'"):
        src.read(model)
    with pytest.raises(ValidationError, match="cannot read loads file"):
        LoadsFileSource(tmp_path / "nope.json").read(model)


def _write_analysis(directory, rows: dict, summary: dict | None = None) -> None:
    directory.mkdir()
    (directory / "summary.json").write_text(json.dumps(summary or {
        "version": 1, "kind": "balance-analysis", "window_start": "a", "window_end": "b",
        "estimator": "mean", "issues": {"missing_samples": 3}}))
    (directory / "partition_loads").mkdir()
    pq.write_table(pa.table(rows), directory / "partition_loads" / "part-0.parquet")
    (directory / "partition_loads" / "_SUCCESS").write_text("")


def test_analysis_output_source(tmp_path) -> None:
    model = four_broker_cluster()
    out = tmp_path / "analysis"
    _write_analysis(out, {
        "topic": ["orders", "orders"], "partition": [0, 2], "size_bytes": [11, 33],
        "bytes_in_per_sec": [1.0, 3.0], "bytes_out_per_sec": [2.0, 6.0], "cpu": [None, 0.2]})
    src = load_source_from_spec(str(out))  # a bare directory, as `plan --loads DIR` passes
    assert isinstance(src, AnalysisOutputSource) and src.describe() == f"analysis:{out}"
    loads = src.read(model)
    assert loads.partitions == {TP("orders", 0): PartitionLoad(11, 1.0, 2.0),
                                TP("orders", 2): PartitionLoad(33, 3.0, 6.0, 0.2)}
    assert (loads.window_start, loads.window_end, dict(loads.issues)) == (
        "a", "b", {"missing_samples": 3})
    laid, got = with_loads(model, src)
    assert got == loads and laid.partition("orders", 2).bytes_out_per_sec == 6.0
    assert with_loads(model, None) == (model, None)


def test_analysis_output_source_rejects_bad_output(tmp_path) -> None:
    model = four_broker_cluster()
    with pytest.raises(ValidationError, match="not a balance-analysis output"):
        AnalysisOutputSource(tmp_path).read(model)
    bad = tmp_path / "bad"
    _write_analysis(bad, {"topic": ["orders"], "partition": [0], "size_bytes": [1]})
    with pytest.raises(ValidationError, match="lacks columns"):
        AnalysisOutputSource(bad).read(model)
    neg = tmp_path / "neg"
    _write_analysis(neg, {"topic": ["orders"], "partition": [0], "size_bytes": [1],
                          "bytes_in_per_sec": [-5.0], "bytes_out_per_sec": [0.0]})
    with pytest.raises(ValidationError, match="orders-0 bytes_in must be finite"):
        AnalysisOutputSource(neg).read(model)
    wrong = tmp_path / "wrong"
    _write_analysis(wrong, {"topic": ["orders"]}, {"version": 9, "kind": "balance-analysis"})
    with pytest.raises(ValidationError, match="unsupported analysis version 9"):
        AnalysisOutputSource(wrong).read(model)


def test_unknown_spec_is_a_clear_error(tmp_path) -> None:
    assert isinstance(load_source_from_spec("fields"), ModelFieldsSource)
    with pytest.raises(ValidationError, match="unknown load source 'prom'"):
        load_source_from_spec("prom")
    with pytest.raises(ValidationError, match="unknown load source"):
        load_source_from_spec(str(tmp_path))  # a directory without summary.json
