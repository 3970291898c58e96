"""The load seam: where the planner's per-partition loads come from, kept apart from the topology.

A plan is only as good as the loads it balances. Until now loads were whatever fields a snapshot
carried (the backends can read log sizes but no rates, so live plans saw zero network load). Here
loads are their own values, supplied by a ``LoadSource`` (a snapshot's own fields, a Spark
balance-analysis output directory, or metric snapshots read directly) and laid over a
``ClusterModel`` with ``lay_loads``, which returns a new model. The planner keeps reading
``Partition.size_bytes`` / ``bytes_in_per_sec`` / ``bytes_out_per_sec``, so nothing downstream
changes; what changes is who filled them in, and that it is reported when a source could not.

Load model (Cruise Control's, the one the planner's WorkingState uses): a partition's bytes-in
arrives at the leader from producers and at every follower through replication; bytes-out is what
consumers fetch from the leader; the leader also serves bytes-in x (RF - 1) to its followers;
disk is the log size on every replica; CPU, when measured, is charged to the leader.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel, Partition, TopicPartition

LOADS_VERSION = 1
ANALYSIS_SUMMARY = "summary.json"
ANALYSIS_PARTITION_LOADS = "partition_loads"  # Parquet dataset (a directory Spark writes)


def _rate(value: Any, what: str) -> float:
    """A finite, non-negative number: a NaN or negative load would silently skew every goal."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ValidationError(f"{what} must be finite and >= 0, got {value!r}")
    return v


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    """One partition's load, as measured on its leader.

    cpu is the fraction of one broker's CPU the partition costs its leader (Cruise Control's
    unit); None means not measured, which is different from idle.
    """

    size_bytes: int = 0
    bytes_in_per_sec: float = 0.0
    bytes_out_per_sec: float = 0.0
    cpu: float | None = None

    def __post_init__(self) -> None:
        _rate(self.size_bytes, "size_bytes")
        _rate(self.bytes_in_per_sec, "bytes_in_per_sec")
        _rate(self.bytes_out_per_sec, "bytes_out_per_sec")
        if self.cpu is not None:
            _rate(self.cpu, "cpu")

    @property
    def leader_bytes_in_per_sec(self) -> float:
        """Producer traffic, which lands on whichever broker leads the partition."""
        return self.bytes_in_per_sec

    @classmethod
    def of(cls, p: Partition) -> PartitionLoad:
        return cls(p.size_bytes, p.bytes_in_per_sec, p.bytes_out_per_sec)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "size_bytes": self.size_bytes,
            "bytes_in_per_sec": self.bytes_in_per_sec,
            "bytes_out_per_sec": self.bytes_out_per_sec,
        }
        if self.cpu is not None:
            d["cpu"] = self.cpu
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "partition load") -> PartitionLoad:
        cpu = d.get("cpu")
        return cls(
            size_bytes=int(_rate(d.get("size_bytes", 0), f"{where} size_bytes")),
            bytes_in_per_sec=_rate(d.get("bytes_in_per_sec", 0.0), f"{where} bytes_in_per_sec"),
            bytes_out_per_sec=_rate(d.get("bytes_out_per_sec", 0.0), f"{where} bytes_out_per_sec"),
            cpu=None if cpu is None else _rate(cpu, f"{where} cpu"),
        )


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """What one broker carries under the load model above (sums over its replicas)."""

    replicas: int = 0
    leaders: int = 0
    disk_bytes: int = 0
    network_in_bytes_per_sec: float = 0.0
    network_out_bytes_per_sec: float = 0.0
    leader_bytes_in_per_sec: float = 0.0
    cpu: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas,
            "leaders": self.leaders,
            "disk_bytes": self.disk_bytes,
            "network_in_bytes_per_sec": self.network_in_bytes_per_sec,
            "network_out_bytes_per_sec": self.network_out_bytes_per_sec,
            "leader_bytes_in_per_sec": self.leader_bytes_in_per_sec,
            "cpu": self.cpu,
        }


def broker_loads(
    model: ClusterModel, loads: Loads | None = None, preferred: bool = False
) -> dict[int, BrokerLoad]:
    """Per-broker loads of a model (every broker listed, plus unregistered replica holders).

    The same sums the planner's WorkingState keeps, so a before/after comparison made here
    agrees with its goals. CPU is summed on leaders when ``loads`` carry it (the model has no
    CPU field); a broker's cpu stays None when no partition it leads was measured.
    ``preferred`` charges leadership to the preferred leader (replicas[0]), as the planner does
    (it assumes a preferred-leader election after the plan), instead of the current leader.
    """
    acc: dict[int, list[float]] = {b: [0, 0, 0, 0.0, 0.0, 0.0] for b in model.brokers}
    cpu: dict[int, float] = {}
    for p in model:
        leader = p.preferred_leader if preferred else p.leader
        if loads is not None and leader in p.replicas:
            measured = loads.partitions.get(p.tp)
            if measured is not None and measured.cpu is not None:
                cpu[leader] = cpu.get(leader, 0.0) + measured.cpu
        rf = len(p.replicas)
        for r in p.replicas:
            a = acc.setdefault(r, [0, 0, 0, 0.0, 0.0, 0.0])
            a[0] += 1
            a[2] += p.size_bytes
            a[3] += p.bytes_in_per_sec
        if leader in p.replicas:
            a = acc[leader]
            a[1] += 1
            a[4] += p.bytes_out_per_sec + p.bytes_in_per_sec * (rf - 1)
            a[5] += p.bytes_in_per_sec
    return {
        b: BrokerLoad(int(a[0]), int(a[1]), int(a[2]), a[3], a[4], a[5], cpu.get(b))
        for b, a in sorted(acc.items())
    }


@dataclass(frozen=True)
class Coverage:
    """How well a set of loads matches a cluster: nothing a source lacks is silently zero."""

    covered: int
    missing: tuple[TopicPartition, ...]  # in the cluster, no load supplied
    unknown: tuple[TopicPartition, ...]  # load supplied for a partition the cluster lacks

    def to_dict(self) -> dict[str, Any]:
        return {
            "covered": self.covered,
            "missing": len(self.missing),
            "unknown": len(self.unknown),
            "missing_examples": [str(tp) for tp in self.missing[:10]],
            "unknown_examples": [str(tp) for tp in self.unknown[:10]],
        }


@dataclass(frozen=True)
class Loads:
    """Per-partition loads from one source, with where they came from and what was doubtful.

    ``issues`` counts what the source found wrong (missing, stale or nonsensical samples...), by
    kind, so a report can say how far to trust a plan made from these loads.
    """

    partitions: Mapping[TopicPartition, PartitionLoad]
    source: str
    window_start: str | None = None  # ISO-8601 UTC
    window_end: str | None = None
    issues: Mapping[str, int] = field(default_factory=dict)

    def coverage(self, model: ClusterModel) -> Coverage:
        missing = tuple(tp for tp in model.partitions if tp not in self.partitions)
        unknown = tuple(sorted(tp for tp in self.partitions if tp not in model.partitions))
        return Coverage(len(model.partitions) - len(missing), missing, unknown)

    def to_dict(self) -> dict[str, Any]:
        topics: dict[str, dict[str, Any]] = {}
        for tp, load in sorted(self.partitions.items()):
            topics.setdefault(tp.topic, {})[str(tp.partition)] = load.to_dict()
        return {
            "version": LOADS_VERSION,
            "source": self.source,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "issues": dict(self.issues),
            "topics": topics,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Loads:
        if not isinstance(d, Mapping):
            raise ValidationError("loads must be a JSON object")
        if d.get("version", LOADS_VERSION) != LOADS_VERSION:
            raise ValidationError(f"unsupported loads version {d.get('version')!r}")
        parts: dict[TopicPartition, PartitionLoad] = {}
        topics = d.get("topics", {})
        if not isinstance(topics, Mapping):
            raise ValidationError("loads 'topics' must map topic -> partition -> load")
        for topic, by_partition in topics.items():
            for key, load in by_partition.items():
                try:
                    pid = int(key)
                except ValueError:
                    raise ValidationError(f"loads of topic {topic!r}: bad partition {key!r}") from None
                parts[TopicPartition(topic, pid)] = PartitionLoad.from_dict(load, f"{topic}-{pid}")
        return cls(
            parts,
            str(d.get("source", "unknown")),
            d.get("window_start"),
            d.get("window_end"),
            {str(k): int(v) for k, v in (d.get("issues") or {}).items()},
        )


MissingPolicy = Literal["keep", "zero", "error"]


def lay_loads(model: ClusterModel, loads: Loads, on_missing: MissingPolicy = "keep") -> ClusterModel:
    """The model with every partition's load replaced by the source's; topology untouched.

    A partition the loads do not cover keeps the model's own fields ("keep": e.g. sizes a backend
    read from log dirs), is zeroed on purpose ("zero"), or refuses the whole call ("error").
    Loads for partitions the cluster no longer has are ignored (``loads.coverage`` counts them).
    """
    if on_missing not in ("keep", "zero", "error"):
        raise ValidationError(f"on_missing must be keep, zero or error, not {on_missing!r}")
    if on_missing == "error":
        cov = loads.coverage(model)
        if cov.missing:
            shown = ", ".join(str(tp) for tp in cov.missing[:5])
            raise ValidationError(
                f"loads from {loads.source} miss {len(cov.missing)} partition(s): {shown}"
            )
    zero = PartitionLoad()
    parts = []
    for tp, p in model.partitions.items():
        load = loads.partitions.get(tp)
        if load is None:
            if on_missing == "keep":
                parts.append(p)
                continue
            load = zero
        parts.append(replace(p, size_bytes=load.size_bytes, bytes_in_per_sec=load.bytes_in_per_sec,
                             bytes_out_per_sec=load.bytes_out_per_sec))
    return ClusterModel(model.brokers.values(), parts, model.topic_configs)


@runtime_checkable
class LoadSource(Protocol):
    """Anything that can say what each partition of a cluster weighs."""

    def read(self, cluster: ClusterModel) -> Loads:
        """Loads for (at least some of) the cluster's partitions; never invents a zero."""
        ...

    def describe(self) -> str:
        """A spec string ``load_source_from_spec`` turns back into this source (for XCom/CLI)."""
        ...


class ModelFieldsSource:
    """Today's behaviour: the loads the cluster snapshot carries in its own fields."""

    def read(self, cluster: ClusterModel) -> Loads:
        return Loads({tp: PartitionLoad.of(p) for tp, p in cluster.partitions.items()}, "fields")

    def describe(self) -> str:
        return "fields"


class LoadsFileSource:
    """A JSON file in ``Loads.to_dict`` form (what a workflow step or a test hands over)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self, cluster: ClusterModel) -> Loads:
        try:
            data = json.loads(self.path.read_text())
        except OSError as e:
            raise ValidationError(f"cannot read loads file {self.path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ValidationError(f"loads file {self.path} is not valid JSON: {e}") from None
        return Loads.from_dict(data)

    def describe(self) -> str:
        return f"file:{self.path}"


class AnalysisOutputSource:
    """The output directory of spark_jobs/balance_analysis.py.

    Layout (version 1): ``summary.json`` (``{"version": 1, "kind": "balance-analysis",
    "window_start", "window_end", "estimator", "issues": {kind: count}, ...}``) and
    ``partition_loads/`` (Parquet: topic, partition, size_bytes, bytes_in_per_sec,
    bytes_out_per_sec, cpu [nullable]). Which statistic of the window the loads are (mean,
    max, a percentile) is the analysis' choice, named in ``estimator``.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def summary(self) -> dict[str, Any]:
        path = self.directory / ANALYSIS_SUMMARY
        try:
            data = json.loads(path.read_text())
        except OSError as e:
            raise ValidationError(f"{self.directory} is not a balance-analysis output "
                                  f"({ANALYSIS_SUMMARY}: {e.strerror})") from None
        except json.JSONDecodeError as e:
            raise ValidationError(f"{path} is not valid JSON: {e}") from None
        if not isinstance(data, dict) or data.get("kind") != "balance-analysis":
            raise ValidationError(f"{path} is not a balance-analysis summary")
        if data.get("version") != LOADS_VERSION:
            raise ValidationError(f"{path}: unsupported analysis version {data.get('version')!r}")
        return data

    def read(self, cluster: ClusterModel) -> Loads:
        summary = self.summary()
        table_dir = self.directory / ANALYSIS_PARTITION_LOADS
        if not table_dir.exists():
            raise ValidationError(f"{self.directory} has no {ANALYSIS_PARTITION_LOADS}/ table")
        import pyarrow.parquet as pq  # only this source needs pyarrow

        table = pq.read_table(table_dir)
        cols = set(table.column_names)
        need = {"topic", "partition", "size_bytes", "bytes_in_per_sec", "bytes_out_per_sec"}
        if not need <= cols:
            raise ValidationError(f"{table_dir} lacks columns {sorted(need - cols)}")
        rows = table.to_pydict()
        cpu = rows.get("cpu") or [None] * table.num_rows
        parts: dict[TopicPartition, PartitionLoad] = {}
        issues = {str(k): int(v) for k, v in (summary.get("issues") or {}).items()}
        for topic, pid, size, bin_, bout, c in zip(
            rows["topic"], rows["partition"], rows["size_bytes"], rows["bytes_in_per_sec"],
            rows["bytes_out_per_sec"], cpu, strict=True,
        ):
            tp = TopicPartition(topic, int(pid))
            if size is None or bin_ is None or bout is None:
                # No estimate (offline all window, or every sample a gap): not a zero load.
                issues["partitions_without_estimate"] = issues.get("partitions_without_estimate", 0) + 1
                continue
            parts[tp] = PartitionLoad(
                int(_rate(size, f"{tp} size_bytes")), _rate(bin_, f"{tp} bytes_in"),
                _rate(bout, f"{tp} bytes_out"), None if c is None else _rate(c, f"{tp} cpu"),
            )
        return Loads(parts, f"analysis:{self.directory}", summary.get("window_start"),
                     summary.get("window_end"), issues)

    def describe(self) -> str:
        return f"analysis:{self.directory}"


def with_loads(model: ClusterModel, source: LoadSource | None,
               on_missing: MissingPolicy = "keep") -> tuple[ClusterModel, Loads | None]:
    """Convenience for a plan step: the model with the source's loads (or as is, without one)."""
    if source is None:
        return model, None
    loads = source.read(model)
    return lay_loads(model, loads, on_missing), loads

