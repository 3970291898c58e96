"""The latest balance analysis as on-call wants to see it: charts first, figures second.

The Spark job (spark_jobs/balance_analysis.py) leaves ``summary.json`` (imbalance per resource
against its threshold, per-broker window loads, anomalies), ``broker_timeseries/`` (Parquet:
per broker and sample time, the planner's load model) and its own PNG charts. The panel shows
inline SVG drawn from those (imbalance per resource; per-broker load, the spread over the
window) and the job's PNGs; the figures stay below, shortened. Parsed once per file change.
"""

from __future__ import annotations

import json
import threading
from html import escape
from pathlib import Path
from typing import Any

from kafka_ops_provider.ui import render as r

KIND = "balance-analysis"
RESOURCES = ("network_in", "network_out", "disk", "replicas", "leaders", "leader_bytes_in")
UNITS = {"network_in": "B/s", "network_out": "B/s", "leader_bytes_in": "B/s", "disk": "B"}
_lock = threading.Lock()
_series_cache: dict[Path, tuple[float, dict[str, Any]]] = {}


def latest(artifacts: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest balance-analysis output directory under the artifacts and its summary."""
    best = None
    for path in [*artifacts.glob("*/summary.json"), *artifacts.glob("*/*/summary.json"),
                 *artifacts.glob("*/*/*/summary.json")]:
        try:
            summary = json.loads(path.read_text())
            mtime = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and summary.get("kind") == KIND:
            if best is None or mtime > best[0]:
                best = (mtime, path.parent, summary)
    return None if best is None else (best[1], best[2])


def chart_file(directory: Path, summary: dict[str, Any], name: str) -> Path | None:
    """One of the job's own PNGs, by file name (only those the summary lists)."""
    for listed in summary.get("charts") or []:
        path = Path(listed)
        if path.name == name and path.suffix == ".png":
            local = directory / "charts" / name  # the summary may carry the job host's path
            for candidate in (local, path):
                if candidate.is_file():
                    return candidate
    return None


def window_series(directory: Path, resource: str = "network_in") -> dict[str, Any] | None:
    """Per sample time over live brokers: min, mean, max of ``resource``, and the busiest
    broker's own line (highest mean over the window). None without the table or pyarrow."""
    table_dir = directory / "broker_timeseries"
    if not table_dir.is_dir():
        return None
    files = sorted(table_dir.rglob("*.parquet"))
    if not files:
        return None
    stamp = max(f.stat().st_mtime for f in files)
    key = table_dir / resource
    with _lock:
        cached = _series_cache.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    try:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(table_dir, columns=["time", "broker", resource])
        if table.num_rows == 0:
            return None
        table = table.set_column(2, resource, pc.fill_null(table[resource].cast("double"), 0.0))
        spread = table.group_by("time").aggregate(
            [(resource, "min"), (resource, "mean"), (resource, "max")]).sort_by("time")
        means = table.group_by("broker").aggregate([(resource, "mean")])
        busiest = means["broker"][pc.index(means[f"{resource}_mean"],
                                           pc.max(means[f"{resource}_mean"])).as_py()].as_py()
        own = table.filter(pc.equal(table["broker"], busiest)).sort_by("time")
    except Exception:  # no pyarrow, or a table without the column: the panel shows the rest
        return None
    times = spread["time"].to_pylist()
    origin = times[0]

    def x(t: Any) -> float:
        delta = t - origin
        return delta.total_seconds() if hasattr(delta, "total_seconds") else float(delta)

    xs = [x(t) for t in times]
    out = {
        "resource": resource, "start": str(origin), "brokers": means.num_rows,
        **{stat: list(zip(xs, spread[f"{resource}_{stat}"].to_pylist(), strict=True))
           for stat in ("min", "mean", "max")},
        "busiest": int(busiest),
        "busiest_line": [(x(t), v) for t, v in zip(own["time"].to_pylist(),
                                                   own[resource].to_pylist(), strict=True)],
    }
    with _lock:
        _series_cache[key] = (stamp, out)
    return out


def panel(artifacts: Path, chart_url: str) -> str:
    """The analysis panel of the index page."""
    found = latest(artifacts)
    if found is None:
        return "<p class='muted'>No balance analysis yet.</p>"
    directory, s = found
    imbalance = s.get("imbalance") or {}
    out = (f"<h3>Latest analysis</h3><p class='muted' data-testid='analysis'>Window "
           f"{escape(str(s.get('window_start')))} to {escape(str(s.get('window_end')))}, "
           f"{escape(str(s.get('sample_times', '?')))} samples, {escape(str(s.get('partitions', '?')))}"
           f" partitions; loads: {escape(str(s.get('estimator', '?')))} over the window.</p>")
    out += "<h4>Imbalance per resource</h4>" + r.imbalance_chart(imbalance, testid="imbalance-chart")
    series = window_series(directory)
    if series is not None:
        unit = UNITS.get(series["resource"], "")
        out += (f"<h4>Per-broker {series['resource'].replace('_', ' ')} over the window "
                f"({series['brokers']} brokers, from {escape(series['start'])})</h4>")
        out += r.line_chart([
            ("max over brokers", "#dc2626", series["max"]),
            ("mean", "#017cee", series["mean"]),
            ("min", "#16a34a", series["min"]),
            (f"broker {series['busiest']} (busiest)", "#f59e0b", series["busiest_line"]),
        ], x_label="seconds", testid="window-chart", width=900,
            y_label=f"max {r._value(max(v for _, v in series['max']), unit)}")
    brokers = [b for b in s.get("brokers") or [] if isinstance(b, dict) and "broker" in b]
    if brokers:
        brokers.sort(key=lambda b: int(b["broker"]))
        labels = [str(b["broker"]) for b in brokers]
        out += "<h4>Per-broker load, window mean (network in, network out)</h4>"
        out += r.grouped_bars(labels, [
            ("network in", "#017cee", [float(b.get("network_in") or 0) for b in brokers]),
            ("network out", "#f59e0b", [float(b.get("network_out") or 0) for b in brokers]),
        ], unit="B/s", testid="broker-load-chart")
        out += "<h4>Per-broker disk</h4>" + r.grouped_bars(
            labels, [("disk", "#6366f1", [float(b.get("disk") or 0) for b in brokers])],
            unit="B", testid="broker-disk-chart")
    pngs = [Path(p).name for p in s.get("charts") or []]
    for name in pngs:
        if chart_file(directory, s, name) is not None:
            out += (f"<h4>{escape(name)} (from the analysis job)</h4><img data-testid="
                    f"'analysis-png' src='{chart_url}/{escape(name)}' style='max-width:100%' "
                    f"alt='{escape(name)}'>")
    out += _anomalies(s.get("anomalies") or {})
    out += f"<p class='muted'>{escape(str(directory))}</p>"
    return out


def _anomalies(a: dict[str, Any]) -> str:
    rows = []
    for key, label in (("offline_partitions", "Offline partitions"),
                       ("under_replicated_partitions", "Under-replicated partitions"),
                       ("dead_brokers", "Dead brokers"), ("brokers_without_load", "Brokers without load"),
                       ("hot_partition_count", "Hot partitions")):
        if key in a:
            v = a[key]
            rows.append([label, escape(", ".join(map(str, v)) if isinstance(v, list) else str(v))
                         or "none"])
    over = a.get("over_capacity") or []
    if over:
        rows.append(["Over 80% of capacity", escape(", ".join(
            f"broker {o.get('broker')} {o.get('resource')} {100 * float(o.get('utilisation', 0)):.0f}%"
            for o in over[:20]))])
    hot = a.get("hot_partitions") or []
    if hot:
        rows.append(["Hottest partitions", escape(", ".join(map(str, hot[:10])))])
    return "<h4>Anomalies</h4>" + r.table(["", ""], rows, "class='figs' data-testid='anomalies'") \
        if rows else ""
