"""Snapshot files: the cluster model as JSON, round trip and every malformed-input path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.snapshot import load_snapshot, model_from_dict, model_to_dict, save_snapshot

EXAMPLE = Path(__file__).resolve().parents[2] / "kafka_ops" / "examples" / "cluster.json"


def sample() -> ClusterModel:
    brokers = [
        Broker(2, "r2", "h2", 9093, alive=False, capacity=BrokerCapacity(10, 1.5, 2.5)),
        Broker(1, None, "h1"),
    ]
    parts = [
        Partition(
            "t",
            1,
            (2, 1),
            leader=1,
            isr=(1,),
            size_bytes=7,
            bytes_in_per_sec=0.5,
            bytes_out_per_sec=1.25,
        ),
        Partition("t", 0, (1, 2)),
        Partition("a", 0, (1,), leader=-1, isr=()),
    ]
    return ClusterModel(brokers, parts, {"t": {"retention.ms": "1000"}})


def same(a: ClusterModel, b: ClusterModel) -> bool:
    return (a.brokers, a.partitions, a.topic_configs) == (b.brokers, b.partitions, b.topic_configs)


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    model = sample()
    assert same(model_from_dict(model_to_dict(model)), model)
    path = tmp_path / "snap.json"
    save_snapshot(model, path)
    assert same(load_snapshot(path), model)
    data = json.loads(path.read_text())
    assert "rack" not in data["brokers"][0]  # broker 1 has none: omitted, not null
    assert [t["name"] for t in data["topics"]] == ["a", "t"]


def test_example_snapshot_round_trips(tmp_path: Path) -> None:
    model = load_snapshot(EXAMPLE)
    assert (len(model.brokers), len(model.topics)) == (9, 20)
    save_snapshot(model, tmp_path / "copy.json")
    assert same(load_snapshot(tmp_path / "copy.json"), model)


def test_defaults_leader_is_preferred_replica_and_isr_all_replicas() -> None:
    model = model_from_dict(
        {
            "brokers": [{"id": 3}],
            "topics": [{"name": "t", "partitions": [{"partition": 0, "replicas": [3]}]}],
        }
    )
    p = model.partition("t", 0)
    assert (p.leader, p.isr, p.size_bytes) == (3, (3,), 0)
    b = model.broker(3)
    assert (b.rack, b.host, b.port, b.alive) == (None, "localhost", 9092, True)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "cluster snapshot must be a JSON object"),
        ({"version": 2}, "unsupported cluster snapshot version 2"),
        ({"brokers": [{"rack": "r"}]}, "broker entry without 'id'"),
        ({"brokers": [{"id": "1"}]}, "broker id must be an integer, got '1'"),
        ({"brokers": [{"id": True}]}, "broker id must be an integer, got True"),
        ({"topics": [{"partitions": []}]}, "topic entry without a name"),
        (
            {"topics": [{"name": "t", "partitions": [{"partition": 0}]}]},
            "topic 't' partition 0: 'partition' and 'replicas' are required",
        ),
        (
            {"topics": [{"name": "t", "partitions": [{"partition": 0, "replicas": 1}]}]},
            "replicas must be a list of broker ids, got 1",
        ),
        (
            {"topics": [{"name": "t", "partitions": [{"partition": 0, "replicas": [1, "x"]}]}]},
            "replicas must be an integer, got 'x'",
        ),
        (
            {
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {"partition": 0, "replicas": [1]},
                            {"partition": 0, "replicas": [1]},
                        ],
                    }
                ]
            },
            "cluster state lists the same partition twice",
        ),
    ],
)
def test_malformed_snapshots(data: object, message: str) -> None:
    with pytest.raises(ValidationError) as e:
        model_from_dict(data)  # type: ignore[arg-type]
    assert message in str(e.value)


def test_unreadable_and_non_json_files(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read cluster snapshot"):
        load_snapshot(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"brokers": [')
    with pytest.raises(ValidationError, match="is not valid JSON"):
        load_snapshot(bad)
