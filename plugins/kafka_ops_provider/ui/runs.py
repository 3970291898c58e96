"""What the rebalancing view reads: the runs' artifacts and execution states, nothing else.

Every gated run leaves, under ``<artifacts>/<dag_id>/<run key>/`` (see hooks/state.py):

- ``planned.json``: what the plan task pushed (the approval digest with its hash, mode, cluster,
  where the plan, rollback and chart files are), copied there by the ``predict`` task;
- ``diff.json``: one row per partition the plan touches ``[topic, partition, before, after,
  size_bytes, leader_before, leader_after]`` (the full diff, from the plan and the snapshot);
- ``prediction.json``: the predicted timeline (kafka_ops.predict.Prediction);
- ``brokers.json``: per broker, replicas, preferred leaders and disk bytes before and after;
- the execution state in the state store (``execution.json`` under ``<state>/<dag>/<run key>``),
  which the executor rewrites on every step: live progress comes from there.

The view never talks to the cluster: a page load cannot slow a reassignment or need cluster
credentials. Reading is cached by file modification time, so a 60,000-row diff is parsed once.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlparse

PLANNED = "planned.json"
DIFF = "diff.json"
PREDICTION = "prediction.json"
BROKERS = "brokers.json"
STATE = "execution.json"
SORT_KEYS = ("topic", "size", "moves")


def artifacts_root() -> Path:
    """The `kafka_ops_artifacts` Variable as the api-server sees it (env first: no DB call)."""
    value = os.environ.get("AIRFLOW_VAR_KAFKA_OPS_ARTIFACTS")
    if not value:
        try:
            from airflow.models.variable import Variable

            value = Variable.get("kafka_ops_artifacts", default_var=None)
        except Exception:  # no database here (a benchmark, a unit test): the default
            value = None
    return Path(value or os.path.join(os.environ.get("AIRFLOW_HOME", "."), "kafka-ops-artifacts"))


def state_root(artifacts: Path) -> Path:
    """The execution-state store's root when it is a local directory or file:// URL."""
    raw = os.environ.get("AIRFLOW_CONN_KAFKA_OPS_STATE")
    if raw:
        try:
            url = (json.loads(raw).get("extra") or {}).get("url")
        except (json.JSONDecodeError, AttributeError):
            url = None
        if isinstance(url, str) and url.startswith("file://"):
            return Path(urlparse(url).path)
    return artifacts / "state"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


class _Cache:
    """Parsed files keyed by path, reparsed when the file's mtime or size changes."""

    def __init__(self) -> None:
        self._items: dict[Path, tuple[tuple[float, int], Any]] = {}
        self._lock = threading.Lock()
        self._parsing: dict[Path, threading.Lock] = {}

    def get(self, path: Path, parse: Any) -> Any:
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = (st.st_mtime, st.st_size)
        with self._lock:
            path_lock = self._parsing.setdefault(path, threading.Lock())
        with path_lock:  # one parse per file version, however many requests ask at once
            hit = self._items.get(path)
            if hit is not None and hit[0] == stamp:
                return hit[1]
            value = parse(path)
            self._items[path] = (stamp, value)
        return value


_cache = _Cache()


class DiffRow(NamedTuple):
    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    size: int
    leader_before: int
    leader_after: int

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.after if b not in self.before)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.before if b not in self.after)

    def to_list(self) -> list[Any]:
        return [self.topic, self.partition, list(self.before), list(self.after), self.size,
                self.leader_before, self.leader_after]


class DiffIndex:
    """The full diff of a plan, filterable by topic and broker and sortable, server-side.

    Built once per file version: rows sorted by (topic, partition), a lower-cased topic per
    row, and per broker the rows that touch it (before or after), so a broker filter costs the
    rows of that broker, not the plan."""

    def __init__(self, rows: list[DiffRow]) -> None:
        keys = [(r.topic, r.partition) for r in rows]
        in_order = all(a < b for a, b in zip(keys, keys[1:], strict=False))  # diff.json is written sorted
        self.rows = rows if in_order else sorted(rows, key=lambda r: (r.topic, r.partition))
        self.sizes = {(r.topic, r.partition): r.size for r in self.rows}  # from the snapshot
        lower: dict[str, str] = {}
        self._topics = [lower.setdefault(r.topic, r.topic.lower()) for r in self.rows]
        by_broker: dict[int, list[int]] = defaultdict(list)
        for i, r in enumerate(self.rows):
            for b in r.before:
                by_broker[b].append(i)
            for b in r.after:
                if b not in r.before:
                    by_broker[b].append(i)
        self._by_broker = dict(by_broker)
        # sort key -> (row order, each row's rank in it), computed on first use
        self._orders: dict[str, tuple[list[int], list[int]]] = {}

    def _order(self, sort: str) -> tuple[list[int], list[int]]:
        """The whole diff ordered by ``sort`` (ties by topic, partition), and each row's rank."""
        if sort not in self._orders:
            key = ((lambda i: self.rows[i].size) if sort == "size"
                   else (lambda i: len(self.rows[i].adding)))
            order = sorted(range(len(self.rows)), key=key)
            rank = [0] * len(order)
            for pos, i in enumerate(order):
                rank[i] = pos
            self._orders[sort] = (order, rank)
        return self._orders[sort]

    @classmethod
    def from_file(cls, path: Path) -> DiffIndex:
        data = json.loads(path.read_text())
        return cls([DiffRow(t, p, tuple(b), tuple(a), s, lb, la) for t, p, b, a, s, lb, la in data])

    def query(self, topic: str = "", broker: int | None = None, sort: str = "topic",
              descending: bool = False, offset: int = 0, limit: int = 100
              ) -> tuple[int, list[DiffRow]]:
        """(rows matching, one page of them): ``topic`` is a case-insensitive substring."""
        if sort not in SORT_KEYS:
            raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, not {sort!r}")
        needle = topic.strip().lower()
        if broker is not None:
            idx: list[int] = self._by_broker.get(broker, [])
            if needle:
                idx = [i for i in idx if needle in self._topics[i]]
        elif needle:
            idx = [i for i, t in enumerate(self._topics) if needle in t]
        else:
            idx = list(range(len(self.rows)))
        if sort != "topic":
            order, rank = self._order(sort)
            if len(idx) == len(self.rows):  # the whole diff: the precomputed order itself
                idx = order[::-1] if descending else order
            else:
                idx.sort(key=rank.__getitem__, reverse=descending)
        elif descending:
            idx.reverse()
        limit = max(1, min(limit, 1000))
        return len(idx), [self.rows[i] for i in idx[max(offset, 0):max(offset, 0) + limit]]


@dataclass
class Run:
    """One DAG run that planned a reassignment: its artifacts and its execution state."""

    dag_id: str
    key: str  # the run id as a path segment (hooks.state.run_key)
    directory: Path
    state_dir: Path

    @property
    def planned(self) -> dict[str, Any] | None:
        return _cache.get(self.directory / PLANNED, lambda p: json.loads(p.read_text()))

    @property
    def prediction(self) -> dict[str, Any] | None:
        return _cache.get(self.directory / PREDICTION, lambda p: json.loads(p.read_text()))

    @property
    def brokers(self) -> list[dict[str, Any]] | None:
        return _cache.get(self.directory / BROKERS, lambda p: json.loads(p.read_text()))

    def diff(self) -> DiffIndex | None:
        return _cache.get(self.directory / DIFF, DiffIndex.from_file)

    def progress(self, state: dict[str, Any]) -> dict[str, Any]:
        """``progress(state)`` with the snapshot's sizes for tasks recorded without one."""
        index = self.diff()
        return progress(state, index.sizes if index is not None else None)

    def state(self) -> dict[str, Any] | None:
        """The execution state as JSON (not cached: the executor rewrites it every step)."""
        return _read_json(self.state_dir / STATE)

    @property
    def cluster(self) -> str:
        planned = self.planned or {}
        return str(planned.get("cluster") or "cluster")

    def status(self) -> str:
        """planned (approval not answered or not asked yet), running, completed, paused,
        cancelled or failed: the execution's own status once it started."""
        state = self.state()
        if state is None:
            return "planned"
        return str(state.get("status") or "running")

    def chart(self) -> Path | None:
        path = (self.planned or {}).get("chart_path")
        return Path(path) if path and Path(path).is_file() else None


def list_runs(artifacts: Path | None = None) -> list[Run]:
    """Every run with a ``planned.json``, newest first."""
    root = artifacts or artifacts_root()
    states = state_root(root)
    runs = []
    for planned in root.glob(f"*/*/{PLANNED}"):
        d = planned.parent
        runs.append((planned.stat().st_mtime,
                     Run(d.parent.name, d.name, d, states / d.parent.name / d.name)))
    runs.sort(key=lambda x: x[0], reverse=True)
    return [r for _, r in runs]


def find_run(dag_id: str, key: str, artifacts: Path | None = None) -> Run | None:
    root = artifacts or artifacts_root()
    if not _safe(dag_id) or not _safe(key):
        return None
    d = root / dag_id / key
    if not (d / PLANNED).is_file():
        return None
    return Run(dag_id, key, d, state_root(root) / dag_id / key)


def _safe(segment: str) -> bool:
    return bool(segment) and segment not in (".", "..") and "/" not in segment and "\\" not in segment


def task_size(task: dict[str, Any], sizes: dict[tuple[str, int], int] | None) -> int:
    """The partition's size as the execution recorded it, else as the plan's snapshot had it
    (an execution through ZooKeeper alone records no sizes)."""
    return int(task.get("size_bytes") or 0) or int((sizes or {}).get((task["topic"], task["partition"]), 0))


def progress(state: dict[str, Any], sizes: dict[tuple[str, int], int] | None = None) -> dict[str, Any]:
    """Live progress from an execution state: moves done / in flight / pending, bytes, ETA,
    throttles set, and per broker the moves in flight and the replication rate received.
    ``sizes``: partition sizes from the plan's snapshot, for tasks recorded without one.

    The rate per broker is the bytes of moves into it that finished, over the time since the
    run started, plus nothing for moves still copying (their progress is not in the state):
    a floor, labelled as an average in the view."""
    tasks = state.get("tasks") or []
    counts: dict[str, int] = defaultdict(int)
    bytes_total = bytes_done = 0
    into: dict[int, int] = defaultdict(int)
    in_flight_into: dict[int, int] = defaultdict(int)
    for t in tasks:
        counts[t["state"]] += 1
        new = [b for b in t["target"] if b not in t["source"]]
        size = task_size(t, sizes)
        moved = size * len(new)
        bytes_total += moved
        if t["state"] == "completed":
            bytes_done += moved
            for b in new:
                into[b] += size
        elif t["state"] in ("in_progress", "aborting"):
            for b in new:
                in_flight_into[b] += 1
    runtime = state.get("runtime") or {}
    started = float(runtime.get("run_started") or state.get("started_at") or 0.0)
    updated = float(state.get("updated_at") or started)
    elapsed = max(updated - started, 0.0)
    rate = bytes_done / elapsed if elapsed > 0 else 0.0
    eta = (bytes_total - bytes_done) / rate if rate > 0 else None
    if state.get("status") == "completed":
        eta = 0.0
    applied = (runtime.get("applied") or state.get("throttles") or {})
    brokers = sorted(set(into) | set(in_flight_into))
    return {
        "status": state.get("status"),
        "message": state.get("message", ""),
        "total": len(tasks),
        "completed": counts["completed"],
        "in_flight": counts["in_progress"] + counts["aborting"],
        "pending": counts["pending"],
        "aborted": counts["aborted"],
        "dead": counts["dead"],
        "skipped": len(state.get("skipped") or []),
        "bytes_total": bytes_total,
        "bytes_done": bytes_done,
        "elapsed": elapsed,
        "eta_seconds": eta,
        "throttles": {"brokers": applied.get("brokers") or {}, "topics": applied.get("topics") or {}},
        "brokers": [{"broker": b, "in_flight": in_flight_into.get(b, 0),
                     "avg_rate": into.get(b, 0) / elapsed if elapsed > 0 else 0.0}
                    for b in brokers],
        "report": runtime.get("report"),
    }
