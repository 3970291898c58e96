"""The snapshot dataset: a versioned Parquet layout, partitioned by cluster and day.

Layout of a dataset root ``DIR`` (schema version 1)::

    DIR/_dataset.json                                   {"format": "kafka-ops-snapshots", "version": 1}
    DIR/partitions/cluster=C/date=YYYY-MM-DD/*.parquet   one row per partition per sample time
    DIR/broker_topics/cluster=C/date=.../*.parquet       one row per (broker, topic) per time
    DIR/brokers/cluster=C/date=.../*.parquet             one row per broker per time
    DIR/_runs/C.json                                    the windows written so far (appends)

Rates are per second, averaged over the ``rate_window`` seconds ending at ``time`` (PromQL
``rate()``); sizes are the log size at ``time``. A null is a sample that was missing, stale or
nonsensical (counted in the run's issues), never a zero.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_ops.errors import ValidationError

SCHEMA_VERSION = 1
FORMAT = "kafka-ops-snapshots"
TIME = pa.timestamp("s", tz="UTC")

TABLES: dict[str, pa.Schema] = {
    "partitions": pa.schema([
        ("time", TIME), ("topic", pa.string()), ("partition", pa.int32()),
        ("leader", pa.int32()), ("replicas", pa.list_(pa.int32())), ("isr_size", pa.int16()),
        ("size_bytes", pa.int64()),  # the leader's log size
    ]),
    "broker_topics": pa.schema([
        ("time", TIME), ("broker", pa.int32()), ("topic", pa.string()),
        ("bytes_in", pa.float64()), ("bytes_out", pa.float64()), ("messages_in", pa.float64()),
    ]),
    "brokers": pa.schema([
        ("time", TIME), ("broker", pa.int32()), ("rack", pa.string()), ("alive", pa.bool_()),
        ("up", pa.bool_()), ("under_replicated", pa.int32()), ("leader_count", pa.int32()),
        ("partition_count", pa.int32()), ("offline_partitions", pa.int32()),
        ("active_controller", pa.int8()), ("replication_bytes_in", pa.float64()),
        ("replication_bytes_out", pa.float64()), ("idle_ratio", pa.float64()),
        ("disk_capacity", pa.int64()), ("network_in_capacity", pa.float64()),
        ("network_out_capacity", pa.float64()),
    ]),
}
PARTITIONING = pa.schema([("cluster", pa.string()), ("date", pa.string())])


def _check_root(root: Path, create: bool) -> None:
    marker = root / "_dataset.json"
    if marker.exists():
        meta = json.loads(marker.read_text())
        if meta.get("format") != FORMAT:
            raise ValidationError(f"{root} is not a kafka-ops snapshot dataset")
        if meta.get("version") != SCHEMA_VERSION:
            raise ValidationError(f"{root}: snapshot schema version {meta.get('version')!r}, "
                                  f"this kafka-ops reads version {SCHEMA_VERSION}")
    elif create:
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"format": FORMAT, "version": SCHEMA_VERSION}))
    else:
        raise ValidationError(f"{root} is not a kafka-ops snapshot dataset (no _dataset.json)")


def write_table(root: str | Path, name: str, cluster: str, table: pa.Table) -> int:
    """Append rows to one table of the dataset (new files only; nothing rewritten)."""
    root = Path(root)
    _check_root(root, create=True)
    if table.num_rows == 0:
        return 0
    table = table.cast(TABLES[name])
    dates = pa.compute.strftime(table["time"], format="%Y-%m-%d")
    table = table.append_column("cluster", pa.array([cluster] * table.num_rows)).append_column(
        "date", dates)
    pq.write_to_dataset(
        table, root / name, partitioning=["cluster", "date"], partitioning_flavor="hive",
        basename_template=f"part-{uuid.uuid4().hex}-{{i}}.parquet",
    )
    return table.num_rows


def read_table(root: str | Path, name: str, cluster: str | None = None,
               start: float | None = None, end: float | None = None) -> pa.Table:
    """Rows of one table, optionally one cluster's within [start, end] (epoch seconds)."""
    import pyarrow.dataset as ds

    root = Path(root)
    _check_root(root, create=False)
    path = root / name
    schema = TABLES[name].append(pa.field("cluster", pa.string())).append(
        pa.field("date", pa.string()))
    if not path.exists():
        return schema.empty_table()
    dataset = ds.dataset(path, format="parquet", partitioning="hive", schema=schema)
    cond = None
    if cluster is not None:
        cond = ds.field("cluster") == cluster
    for bound, op in ((start, "ge"), (end, "le")):
        if bound is None:
            continue
        scalar = pa.scalar(int(bound), type=TIME)
        c = ds.field("time") >= scalar if op == "ge" else ds.field("time") <= scalar
        cond = c if cond is None else cond & c
    return dataset.to_table(filter=cond)


def runs_path(root: str | Path, cluster: str) -> Path:
    return Path(root) / "_runs" / f"{cluster}.json"


def read_runs(root: str | Path, cluster: str) -> dict[str, Any]:
    path = runs_path(root, cluster)
    if not path.exists():
        return {"version": SCHEMA_VERSION, "cluster": cluster, "last_end": None, "runs": []}
    return json.loads(path.read_text())


def record_run(root: str | Path, cluster: str, run: Mapping[str, Any]) -> None:
    """Remember a written window; a scheduled run starts where the latest one ended."""
    state = read_runs(root, cluster)
    state["runs"].append(dict(run))
    last = state.get("last_end")
    state["last_end"] = run["end"] if last is None else max(last, run["end"])
    path = runs_path(root, cluster)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(path)
