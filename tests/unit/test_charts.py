"""The before/after broker load chart."""

from kafka_ops.charts import broker_loads, load_panels, plot_broker_load
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition


def _cluster() -> ClusterModel:
    brokers = [Broker(0), Broker(1), Broker(2)]
    parts = [
        Partition("t", 0, (0, 1), leader=0, size_bytes=2 * 1024**3, bytes_in_per_sec=1024**2),
        Partition("t", 1, (0, 1), leader=1, size_bytes=1024**3),
    ]
    return ClusterModel(brokers, parts)


def test_loads_count_replicas_leaders_disk_and_bytes_in_per_broker():
    loads = broker_loads(_cluster())
    assert loads["replicas"] == [2, 2, 0]
    assert loads["leaders"] == [1, 1, 0]
    assert loads["disk GiB"] == [3.0, 3.0, 0.0]
    assert loads["bytes in MiB/s"] == [1.0, 1.0, 0.0]


def test_chart_is_a_png_covering_every_broker(tmp_path):
    before = _cluster()
    after = before.with_assignment({TopicPartition("t", 1): (2, 1)})
    assert broker_loads(after)["replicas"] == [1, 2, 1]
    out = plot_broker_load(before, after, tmp_path / "load.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def test_kinds_without_data_are_left_out():
    """Read through ZooKeeper a cluster has no sizes or rates: no empty panels for them."""
    bare = ClusterModel([Broker(0), Broker(1)], [Partition("t", 0, (0,), leader=0)])
    assert list(load_panels(bare, bare)) == ["replicas", "leaders"]
    assert load_panels(bare, bare)["replicas"] == ([1, 0], [1, 0])
    assert list(load_panels(_cluster(), _cluster())) == [
        "replicas", "leaders", "disk GiB", "bytes in MiB/s"]
