"""Per-partition loads from metric snapshots, as Cruise Control estimates them, without Spark.

A broker reports bytes in/out per topic, not per partition. Cruise Control's estimate: the
broker's per-topic rate split evenly over the partitions of that topic it leads at that time;
followers replicate the leader's bytes-in. Over a window the planner takes the mean of the
estimates (gaps skipped and counted), and the latest log size. spark_jobs/balance_analysis.py
does the same at scale; this one serves small clusters and checks the Spark job in tests.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from kafka_ops.errors import ValidationError
from kafka_ops.loads import Loads, PartitionLoad
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.monitor.schema import read_table


def estimate_loads(partitions: pa.Table, broker_topics: pa.Table, source: str = "snapshots"
                   ) -> Loads:
    """Mean estimated rates and latest size per partition over all sample times given."""
    p = partitions.to_pydict()
    led: Counter = Counter()
    for t, leader, topic in zip(p["time"], p["leader"], p["topic"], strict=True):
        if leader >= 0:
            led[(t, leader, topic)] += 1
    bt = broker_topics.to_pydict()
    rates = {(t, b, topic): (bi, bo) for t, b, topic, bi, bo in zip(
        bt["time"], bt["broker"], bt["topic"], bt["bytes_in"], bt["bytes_out"], strict=True)}
    sums: dict[TopicPartition, list[float]] = defaultdict(lambda: [0.0, 0.0, 0, 0])
    latest: dict[TopicPartition, tuple] = {}
    issues: Counter = Counter()
    for t, topic, part, leader, size in zip(p["time"], p["topic"], p["partition"], p["leader"],
                                           p["size_bytes"], strict=True):
        tp = TopicPartition(topic, part)
        acc = sums[tp]
        if size is not None and (tp not in latest or t >= latest[tp][0]):
            latest[tp] = (t, size)
        if leader < 0:
            continue
        bi, bo = rates.get((t, leader, topic), (None, None))
        n = led[(t, leader, topic)]
        if bi is None:
            issues["missing_rate_samples"] += 1
        else:
            acc[0] += bi / n
            acc[2] += 1
        if bo is not None:
            acc[1] += bo / n
            acc[3] += 1
    loads = {}
    for tp, (bin_sum, bout_sum, n_in, n_out) in sums.items():
        if n_in == 0 and tp not in latest:
            issues["partitions_without_samples"] += 1
            continue
        loads[tp] = PartitionLoad(
            int(latest[tp][1]) if tp in latest else 0,
            bin_sum / n_in if n_in else 0.0,
            bout_sum / n_out if n_out else 0.0,
        )
        if n_in == 0:
            issues["partitions_without_rates"] += 1
    times = sorted(set(p["time"]))
    return Loads(loads, source, times[0].isoformat() if times else None,
                 times[-1].isoformat() if times else None, +issues)


@dataclass
class SnapshotLoadSource:
    """The load seam reading a snapshot dataset directly: ``snapshots:DIR@CLUSTER[@START..END]``."""

    root: str
    cluster: str
    start: float | None = None
    end: float | None = None

    @classmethod
    def from_spec(cls, spec: str) -> SnapshotLoadSource:
        root, _, rest = spec.partition("@")
        cluster, _, window = rest.partition("@")
        if not cluster:
            raise ValidationError(f"snapshots:{spec}: expected DIR@CLUSTER[@START..END]")
        start = end = None
        if window:
            a, sep, b = window.partition("..")
            try:
                start, end = (float(a) if a else None), (float(b) if b else None)
            except ValueError:
                raise ValidationError(f"snapshots:{spec}: window must be START..END epoch seconds"
                                      ) from None
        if not Path(root).is_dir():
            raise ValidationError(f"snapshots:{spec}: no dataset at {root}")
        return cls(root, cluster, start, end)

    def read(self, cluster: ClusterModel) -> Loads:
        parts = read_table(self.root, "partitions", self.cluster, self.start, self.end)
        bt = read_table(self.root, "broker_topics", self.cluster, self.start, self.end)
        if parts.num_rows == 0:
            raise ValidationError(f"no snapshot samples of {self.cluster!r} in {self.root}")
        return estimate_loads(parts, bt, self.describe())

    def describe(self) -> str:
        window = "" if self.start is None and self.end is None else (
            f"@{'' if self.start is None else self.start}..{'' if self.end is None else self.end}")
        return f"snapshots:{self.root}@{self.cluster}{window}"
