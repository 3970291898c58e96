"""Where snapshot samples come from, behind one interface: Prometheus, the backend alone, files.

Every source returns the same three tables (``schema.TABLES``) for a list of sample times plus
counts of what it could not trust. The cluster metadata (replicas, leaders, ISR) comes from the
backend at snapshot time and is taken to hold over the window: metrics carry no replica lists.
"""

from __future__ import annotations

import base64
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from kafka_ops.errors import BackendError, ValidationError
from kafka_ops.model import NO_LEADER, ClusterModel
from kafka_ops.monitor import names
from kafka_ops.monitor.schema import TABLES, read_table

# A rate this many times above the broker's network capacity is a broken counter, not traffic.
NONSENSE_FACTOR = 100.0


def sample_times(start: float, end: float, step: float) -> list[int]:
    """Times on the step grid (multiples of step since the epoch) within [start, end]."""
    if step <= 0:
        raise ValidationError(f"step must be positive, got {step}")
    if end < start:
        raise ValidationError(f"window end {end} is before its start {start}")
    first = math.ceil(start / step) * step
    return [int(t) for t in _frange(first, end, step)]


def _frange(first: float, end: float, step: float) -> Iterable[float]:
    t = first
    while t <= end:
        yield t
        t += step


@dataclass
class Samples:
    """The three snapshot tables for some sample times, and the issues met making them."""

    times: list[int]
    partitions: pa.Table
    broker_topics: pa.Table
    brokers: pa.Table
    issues: Counter = field(default_factory=Counter)

    def tables(self) -> dict[str, pa.Table]:
        return {"partitions": self.partitions, "broker_topics": self.broker_topics,
                "brokers": self.brokers}


class MetricsSource(Protocol):
    def samples(self, model: ClusterModel, start: float, end: float, step: float) -> Samples:
        """Samples at the step grid's times in [start, end] for the cluster's partitions."""
        ...


@dataclass(frozen=True)
class PrometheusConfig:
    """How to reach Prometheus. Credentials stay out of repr and every message."""

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    job: str | None = None  # restrict to one scrape job
    broker_label: str = "broker"  # the label naming the broker id (scrape config adds it)

    def headers(self) -> dict[str, str]:
        if self.bearer_token:
            return {"Authorization": f"Bearer {self.bearer_token}"}
        if self.username is not None:
            raw = f"{self.username}:{self.password or ''}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        return {}

    def __repr__(self) -> str:
        auth = "bearer" if self.bearer_token else ("basic" if self.username else "none")
        return f"PrometheusConfig(url={self.url!r}, auth={auth}, job={self.job!r})"


def _build_tables(model: ClusterModel, times: list[int], up: Mapping[tuple[int, int], bool],
                  rates: Mapping[str, Mapping[tuple[int, str], Mapping[int, float]]],
                  sizes: Mapping[tuple[int, str, int], Mapping[int, float]],
                  gauges: Mapping[str, Mapping[int, Mapping[int, float]]],
                  issues: Counter) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Rows from per-series samples; nulls (counted) where a sample is missing, stale or absurd."""

    def stale(broker: int, t: int) -> bool:
        return up.get((broker, t)) is False

    def sane(value: float | None, limit: float) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value) or value < 0 or (limit > 0 and value > limit):
            issues["nonsensical_samples"] += 1
            return None
        return value

    cap_in = {b.id: b.capacity.network_in_bytes_per_sec * NONSENSE_FACTOR
              for b in model.brokers.values()}
    cap_out = {b.id: b.capacity.network_out_bytes_per_sec * NONSENSE_FACTOR
               for b in model.brokers.values()}
    p_cols: dict[str, list[Any]] = {k: [] for k in TABLES["partitions"].names}
    for t in times:
        for p in model:
            size = None
            if p.leader == NO_LEADER:
                issues["offline_partition_samples"] += 1
            elif stale(p.leader, t):
                issues["stale_samples"] += 1
            else:
                size = sane(sizes.get((p.leader, p.topic, p.partition), {}).get(t), 0)
                if size is None:
                    issues["missing_size_samples"] += 1
            p_cols["time"].append(t)
            p_cols["topic"].append(p.topic)
            p_cols["partition"].append(p.partition)
            p_cols["leader"].append(p.leader)
            p_cols["replicas"].append(list(p.replicas))
            p_cols["isr_size"].append(len(p.isr))
            p_cols["size_bytes"].append(None if size is None else int(size))
    # (broker, topic) pairs that must have traffic metrics: the leaders of the topic's partitions.
    expected = {(p.leader, p.topic) for p in model if p.leader != NO_LEADER}
    pairs = sorted(expected | {k for series in rates.values() for k in series})
    bt_cols: dict[str, list[Any]] = {k: [] for k in TABLES["broker_topics"].names}
    for t in times:
        for broker, topic in pairs:
            row = {}
            for key in ("bytes_in", "bytes_out", "messages_in"):
                value = rates.get(key, {}).get((broker, topic), {}).get(t)
                if stale(broker, t):
                    value = None
                    issues["stale_samples"] += 1
                elif value is None:
                    if (broker, topic) in expected:
                        issues["missing_rate_samples"] += 1
                else:
                    limit = cap_out.get(broker, 0.0) if key == "bytes_out" else cap_in.get(broker, 0.0)
                    value = sane(value, 0.0 if key == "messages_in" else limit)
                row[key] = value
            if all(v is None for v in row.values()) and (broker, topic) not in expected:
                continue
            bt_cols["time"].append(t)
            bt_cols["broker"].append(broker)
            bt_cols["topic"].append(topic)
            for key, value in row.items():
                bt_cols[key].append(value)
    b_cols: dict[str, list[Any]] = {k: [] for k in TABLES["brokers"].names}
    int_gauges = ("under_replicated", "leader_count", "partition_count", "offline_partitions",
                  "active_controller")
    for t in times:
        for b in model.brokers.values():
            b_cols["time"].append(t)
            b_cols["broker"].append(b.id)
            b_cols["rack"].append(b.rack)
            b_cols["alive"].append(b.alive)
            b_cols["up"].append(up.get((b.id, t)))
            for key in (*int_gauges, "replication_bytes_in", "replication_bytes_out", "idle_ratio"):
                value = None if stale(b.id, t) else gauges.get(key, {}).get(b.id, {}).get(t)
                value = sane(value, 0.0)
                b_cols[key].append(None if value is None else
                                   (int(value) if key in int_gauges else value))
            b_cols["disk_capacity"].append(b.capacity.disk_bytes)
            b_cols["network_in_capacity"].append(b.capacity.network_in_bytes_per_sec)
            b_cols["network_out_capacity"].append(b.capacity.network_out_bytes_per_sec)
    return (pa.table(p_cols, schema=TABLES["partitions"]),
            pa.table(bt_cols, schema=TABLES["broker_topics"]),
            pa.table(b_cols, schema=TABLES["brokers"]))


class PrometheusSource:
    """Samples from Prometheus' HTTP API (range queries, chunked so no answer grows huge)."""

    def __init__(self, config: PrometheusConfig, rate_window: float | None = None,
                 steps_per_query: int = 120) -> None:
        self.config = config
        self.rate_window = rate_window
        self.steps_per_query = steps_per_query

    def _get(self, path: str, params: Mapping[str, Any]) -> Any:
        url = f"{self.config.url.rstrip('/')}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers=self.config.headers())
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            raise BackendError(f"Prometheus {path} answered HTTP {e.code} {e.reason}") from None
        except (OSError, ValueError) as e:
            raise BackendError(f"cannot query Prometheus at {self.config.url}: {e}") from None
        if body.get("status") != "success":
            raise BackendError(f"Prometheus {path}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def _selector(self, extra: str = "") -> str:
        parts = [f'job="{self.config.job}"'] if self.config.job else []
        if extra:
            parts.append(extra)
        return "{" + ",".join(parts) + "}"

    def _range(self, query: str, times: list[int], step: float) -> list[dict[str, Any]]:
        """One range query over the sample times, in chunks; series merged by label set."""
        merged: dict[tuple, dict[str, Any]] = {}
        for i in range(0, len(times), self.steps_per_query):
            chunk = times[i:i + self.steps_per_query]
            data = self._get("query_range", {"query": query, "start": chunk[0],
                                             "end": chunk[-1], "step": step})
            for series in data["result"]:
                key = tuple(sorted(series["metric"].items()))
                entry = merged.setdefault(key, {"metric": series["metric"], "values": []})
                entry["values"].extend(series["values"])
        return list(merged.values())

    def _broker(self, metric: Mapping[str, str], issues: Counter) -> int | None:
        value = metric.get(self.config.broker_label)
        try:
            return int(value) if value is not None else None
        except ValueError:
            issues["unlabelled_series"] += 1
            return None

    def samples(self, model: ClusterModel, start: float, end: float, step: float) -> Samples:
        times = sample_times(start, end, step)
        issues: Counter = Counter()
        if not times:
            return Samples(times, *_build_tables(model, times, {}, {}, {}, {}, issues), issues)
        window = int(self.rate_window or max(step, 120))
        grid = set(times)

        def points(series: Mapping[str, Any]) -> dict[int, float]:
            out = {}
            for ts, v in series["values"]:
                t = int(round(float(ts)))
                if t in grid:
                    out[t] = float(v)
            return out

        up: dict[tuple[int, int], bool] = {}
        for s in self._range(f"up{self._selector()}", times, step):
            b = self._broker(s["metric"], issues)
            if b is not None:
                for t, v in points(s).items():
                    up[(b, t)] = v >= 1
        rates: dict[str, dict[tuple[int, str], dict[int, float]]] = {}
        per_topic = self._selector('topic!=""')
        for key in ("bytes_in", "bytes_out", "messages_in"):
            q = f"rate({names.BY_KEY[key].name}{per_topic}[{window}s])"
            series_by: dict[tuple[int, str], dict[int, float]] = {}
            for s in self._range(q, times, step):
                b = self._broker(s["metric"], issues)
                if b is not None:
                    series_by[(b, s["metric"]["topic"])] = points(s)
            rates[key] = series_by
        sizes: dict[tuple[int, str, int], dict[int, float]] = {}
        for s in self._range(f"{names.BY_KEY['log_size'].name}{self._selector()}", times, step):
            b = self._broker(s["metric"], issues)
            m = s["metric"]
            if b is not None and "topic" in m and "partition" in m:
                sizes[(b, m["topic"], int(m["partition"]))] = points(s)
        gauges: dict[str, dict[int, dict[int, float]]] = {}
        queries = {k: f"{names.BY_KEY[k].name}{self._selector()}" for k in (
            "under_replicated", "leader_count", "partition_count", "offline_partitions",
            "active_controller")}
        for k in ("replication_bytes_in", "replication_bytes_out"):
            queries[k] = f"rate({names.BY_KEY[k].name}{self._selector()}[{window}s])"
        queries["idle_ratio"] = f"rate({names.BY_KEY['idle_ns'].name}{self._selector()}[{window}s]) / 1e9"
        for key, q in queries.items():
            per_broker: dict[int, dict[int, float]] = {}
            for s in self._range(q, times, step):
                b = self._broker(s["metric"], issues)
                if b is not None:
                    per_broker[b] = points(s)
            gauges[key] = per_broker
        tables = _build_tables(model, times, up, rates, sizes, gauges, issues)
        return Samples(times, *tables, issues)


class BackendSource:
    """The backend alone: log sizes read from the brokers' log dirs, no rates at all.

    One sample at the window's end. Rates are absent (null) and reported as such, so a plan
    made from it balances disk and counts, never a network it cannot see.
    """

    def samples(self, model: ClusterModel, start: float, end: float, step: float) -> Samples:
        times = [int(end)]
        issues: Counter = Counter({"rates_unavailable": 1})
        sizes = {(p.leader, p.topic, p.partition): {times[0]: float(p.size_bytes)}
                 for p in model if p.leader != NO_LEADER}
        tables = _build_tables(model, times, {}, {}, sizes, {}, issues)
        # No (broker, topic) rows without rates: they would all be missing.
        issues.pop("missing_rate_samples", None)
        return Samples(times, tables[0], tables[1].slice(0, 0), tables[2], issues)


class SnapshotFilesSource:
    """Samples read back from a snapshot dataset (re-analysis, or feeding another store)."""

    def __init__(self, root: str, cluster: str) -> None:
        self.root, self.cluster = root, cluster

    def samples(self, model: ClusterModel, start: float, end: float, step: float) -> Samples:
        tables = {name: read_table(self.root, name, self.cluster, start, end).drop_columns(
            ["cluster", "date"]) for name in TABLES}
        times = sorted({int(t.timestamp()) for t in tables["brokers"]["time"].to_pylist()})
        issues: Counter = Counter()
        issues["missing_size_samples"] = tables["partitions"]["size_bytes"].null_count
        issues["missing_rate_samples"] = tables["broker_topics"]["bytes_in"].null_count
        return Samples(times, tables["partitions"], tables["broker_topics"], tables["brokers"],
                       +issues)
