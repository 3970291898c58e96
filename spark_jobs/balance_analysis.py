"""Balance analysis of a window of metric snapshots, in PySpark (any --master; local[*] default).

    spark-submit spark_jobs/balance_analysis.py --snapshots DIR --cluster NAME \
        --start 2026-11-21T00:00:00Z --end 2026-11-22T00:00:00Z --output OUT [--pools FILE]

Per-partition load is estimated as Cruise Control does: a broker's per-topic bytes-in (and
bytes-out) rate is split evenly over the partitions of that topic it leads at that time; the
followers replicate the leader's bytes-in; disk is the leader's log size. Over the window each
partition gets CC-style statistics (mean, max, 95th percentile); the planner takes the mean.
Per-broker loads follow the planner's model (kafka_ops.loads): network in = bytes-in on every
replica, network out = bytes-out + bytes-in x (RF - 1) on the leader, disk = size on every replica.

Output (OUT, version 1): partition_loads/ (what kafka_ops.loads.AnalysisOutputSource reads),
broker_loads/, broker_timeseries/, topic_loads/, rack_loads/, pool_loads/ (Parquet),
summary.json (window, issues, imbalance per resource vs thresholds, anomalies) and charts/*.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

VERSION = 1
# Cruise Control's default balance thresholds: a broker is out of balance above mean x this.
THRESHOLDS = {"replicas": 1.10, "leaders": 1.10, "disk": 1.10, "network_in": 1.10,
              "network_out": 1.10, "leader_bytes_in": 1.10}
CAPACITY_THRESHOLD = 0.8  # CC's capacity thresholds: utilisation above this is an anomaly
HOT_PARTITION_FACTOR = 10.0  # a partition carrying 10x the mean partition bytes-in is hot


def session(master: str | None = None, app: str = "kafka-ops-balance-analysis") -> SparkSession:
    # The pass runs numpy/pyarrow in Python workers: by default the driver's own interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # run with python, not spark-submit
        builder = builder.master("local[*]")
    spark = (builder.config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


def parse_time(text: str) -> int:
    """Epoch seconds or ISO-8601 (Z or offset) -> epoch seconds."""
    try:
        return int(float(text))
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SystemExit(f"error: bad time {text!r}: give epoch seconds or ISO-8601") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return int(t.timestamp())


def read_window(spark: SparkSession, root: str, name: str, cluster: str, start: int,
                end: int) -> DataFrame:
    path = Path(root) / name
    if not (Path(root) / "_dataset.json").exists():
        raise SystemExit(f"error: {root} is not a kafka-ops snapshot dataset")
    df = spark.read.option("basePath", str(path)).parquet(str(path / f"cluster={cluster}"))
    return df.where((F.col("time") >= F.timestamp_seconds(F.lit(start)))
                    & (F.col("time") <= F.timestamp_seconds(F.lit(end)))).drop("date")


# The per-partition estimate, its window statistics and the per-broker partial sums are computed
# in one vectorised pass (numpy over Arrow batches, mapInArrow) over the rows of each shuffle
# partition: Spark brings a topic's partition rows and its broker-topic rates together (one
# shuffle), each task sees whole topics. Row kinds in the pass' output:
PARTITION_ROW, SERIES_ROW, TIME_ROW = 0, 1, 2
RATES = ("bytes_in", "bytes_out", "messages_in")
PASS_SCHEMA = (
    "kind byte, time timestamp, topic string, partition int, size_bytes long, "
    "bytes_in_per_sec double, bytes_out_per_sec double, bytes_in_max double, "
    "bytes_out_max double, bytes_in_p95 double, bytes_out_p95 double, "
    "messages_in_per_sec double, samples long, rate_gaps long, size_gaps long, leader int, "
    "replicas array<int>, isr_size short, last_time timestamp, broker int, replica_count long, "
    "leaders long, disk long, network_in double, network_out double, leader_bytes_in double")
PARTITION_COLUMNS = ("topic", "partition", "size_bytes", "bytes_in_per_sec", "bytes_out_per_sec",
                     "bytes_in_max", "bytes_out_max", "bytes_in_p95", "bytes_out_p95",
                     "messages_in_per_sec", "samples", "rate_gaps", "size_gaps", "leader",
                     "replicas", "isr_size")
P95 = 95  # percent


def shuffle_by_topic(parts: DataFrame, broker_topics: DataFrame,
                     partitions: int | None = None) -> DataFrame:
    """The partition rows and the broker-topic rates (a null `partition` marks a rate row; its
    broker is in `leader`), hash-partitioned by topic: the only shuffle of the partition rows."""
    p = parts.select("time", "topic", "partition", "leader", "replicas", "isr_size", "size_bytes",
                     *[F.lit(None).cast("double").alias(r) for r in RATES])
    bt = broker_topics.select("time", "topic", F.lit(None).cast("int").alias("partition"),
                              F.col("broker").alias("leader"),
                              F.lit(None).cast(parts.schema["replicas"].dataType).alias("replicas"),
                              F.lit(None).cast("short").alias("isr_size"),
                              F.lit(None).cast("long").alias("size_bytes"), *RATES)
    both = p.unionByName(bt)
    return both.repartition(partitions, "topic") if partitions else both.repartition("topic")


def _codes(values: Any, sort: bool = False) -> tuple[Any, int]:
    """Dense integer codes of values (hash-based; in the values' order if sort) and how many."""
    import pandas as pd

    codes, uniques = pd.factorize(values, sort=sort)
    return codes.astype("int64"), len(uniques)


def _group(*keys: Any) -> tuple[int, Any]:
    """Rows grouped by several integer keys: (number of groups, dense group id of each row)."""
    import numpy as np

    packed = np.zeros(len(keys[0]), dtype=np.int64)
    for k in keys:
        codes, n = _codes(k)
        packed = packed * n + codes
    codes, n = _codes(packed)
    return n, codes


def _estimate_arrow(batches: Any) -> Any:
    """One task's rows (whole topics) -> per-partition statistics, per (time, broker) partial sums
    of the planner's load model, and the sample times seen. Cruise Control's estimate: a
    broker's per-topic rate split evenly over the partitions of the topic it leads at that time
    (max of duplicate rate rows; null when the rate is missing or the partition has no leader)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    batches = list(batches)
    if not batches or not sum(b.num_rows for b in batches):
        return
    t = pa.concat_batches(batches)
    is_p = t["partition"].is_valid().to_numpy(zero_copy_only=False)
    times = pc.cast(t["time"], pa.int64()).to_numpy(zero_copy_only=False)
    topic = t["topic"].dictionary_encode()
    topics = topic.indices.to_numpy(zero_copy_only=False)
    leader_null = t["leader"].is_null().to_numpy(zero_copy_only=False)
    leader = t["leader"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    online = (leader >= 0) & ~leader_null

    def floats(name: str, rows: Any) -> Any:
        return t[name].take(pa.array(rows)).to_numpy(zero_copy_only=False).astype(float)

    prow, brow = np.flatnonzero(is_p), np.flatnonzero(~is_p)
    if not len(prow):
        return
    # Partitions each broker leads of a topic at a time, and that broker's rates for the topic.
    ngroups, ginv = _group(np.concatenate([times[prow], times[brow]]),
                           np.concatenate([leader[prow], leader[brow]]),
                           np.concatenate([topics[prow], topics[brow]]))
    np_ = len(prow)
    led = np.bincount(ginv[:np_], minlength=ngroups).astype(float)
    est = {}
    for r in RATES:
        top = np.full(ngroups, np.nan)
        np.fmax.at(top, ginv[np_:], floats(r, brow))
        value = top[ginv[:np_]] / led[ginv[:np_]]
        value[~online[prow]] = np.nan
        est[r] = value
    ptimes, pon = times[prow], online[prow]
    size_null = t["size_bytes"].take(pa.array(prow)).is_null().to_numpy(zero_copy_only=False)
    size = t["size_bytes"].take(pa.array(prow)).fill_null(0).to_numpy(
        zero_copy_only=False).astype(np.int64)

    # Per partition (topic, partition): window statistics.
    pid = t["partition"].take(pa.array(prow)).to_numpy(zero_copy_only=False).astype(np.int64)
    n, pinv = _group(topics[prow], pid)
    tcode, ntimes = _codes(ptimes, sort=True)
    order = np.argsort(pinv * ntimes + tcode, kind="stable")  # by partition, then time
    counts = np.bincount(pinv, minlength=n)
    same = counts.min() == counts.max()  # every partition has as many samples (the usual case)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    last = order[starts + counts - 1]  # each partition's latest sample
    sized = order[~size_null[order]]
    sized_last = np.full(n, -1)
    sized_last[pinv[sized]] = sized  # ascending time within a partition: the last one stays
    stats = {}
    for r in RATES:
        v = est[r]
        ok = ~np.isnan(v)
        k = np.bincount(pinv, weights=ok, minlength=n)
        total = np.bincount(pinv, weights=np.where(ok, v, 0.0), minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[f"{r}_per_sec"] = np.where(k > 0, total / np.maximum(k, 1), np.nan)
        if r == "messages_in":
            continue
        top = np.full(n, np.nan)
        np.fmax.at(top, pinv, v)
        stats[f"{r}_max"] = top
        # Exact 95th percentile of the samples present: the value of rank ceil(0.95 k).
        kk = k.astype(np.int64)
        rank = np.maximum((P95 * kk + 99) // 100, 1)
        if same:  # one row of samples per partition, sorted along the rows (NaN last)
            grid = np.sort(v[order].reshape(n, -1), axis=1)
            picked = grid[np.arange(n), np.minimum(rank, grid.shape[1]) - 1]
        else:
            by_value = np.lexsort((v, pinv))  # NaN last within a partition
            picked = v[by_value[np.minimum(starts + rank - 1, len(v) - 1)]]
        stats[f"{r}_p95"] = np.where(kk > 0, picked, np.nan)
    rate_gaps = np.bincount(pinv, weights=np.isnan(est["bytes_in"]) & pon, minlength=n)
    size_gaps = np.bincount(pinv, weights=size_null & pon, minlength=n)

    def col(values: Any, typ: Any, null: Any = None) -> Any:
        if pa.types.is_integer(typ) or pa.types.is_timestamp(typ):
            values = np.asarray(values).astype(np.int64)
        return pa.array(values, typ, mask=null)

    def nan_null(values: Any) -> Any:
        return pa.array(values, pa.float64(), mask=np.isnan(values))

    prow_last = pa.array(prow[last])
    size_rows = np.where(sized_last >= 0, sized_last, 0)
    stamp = pa.timestamp("us", tz="UTC")
    part = {
        "kind": pa.array(np.full(n, PARTITION_ROW, np.int8)),
        "topic": t["topic"].take(prow_last), "partition": col(pid[last], pa.int32()),
        "size_bytes": col(size[size_rows], pa.int64(), sized_last < 0),
        **{c: nan_null(stats[c]) for c in ("bytes_in_per_sec", "bytes_out_per_sec",
                                           "bytes_in_max", "bytes_out_max", "bytes_in_p95",
                                           "bytes_out_p95", "messages_in_per_sec")},
        "samples": col(counts, pa.int64()), "rate_gaps": col(rate_gaps, pa.int64()),
        "size_gaps": col(size_gaps, pa.int64()),
        "leader": t["leader"].take(prow_last), "replicas": t["replicas"].take(prow_last),
        "isr_size": t["isr_size"].take(prow_last),
        "last_time": col(ptimes[last], stamp),
    }

    # Per (time, broker): the planner's load model summed over this task's replicas.
    reps = t["replicas"].take(pa.array(prow))
    rf = pc.list_value_length(reps).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    row = np.repeat(np.arange(np_), rf)
    broker = pc.list_flatten(reps).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    is_leader = (broker == leader[prow][row]) & ~leader_null[prow][row]
    bin_ = np.nan_to_num(est["bytes_in"][row])
    bout = np.nan_to_num(est["bytes_out"][row])
    m, sinv = _group(tcode[row], broker)
    first = np.zeros(m, dtype=np.int64)
    first[sinv] = np.arange(len(sinv))  # a row of each (time, broker)
    disk = np.zeros(m, dtype=np.int64)
    np.add.at(disk, sinv, size[row])  # exact integer sums
    series = {
        "kind": pa.array(np.full(m, SERIES_ROW, np.int8)),
        "time": col(ptimes[row][first], stamp), "broker": col(broker[first], pa.int32()),
        "replica_count": col(np.bincount(sinv, minlength=m), pa.int64()),
        "leaders": col(np.bincount(sinv, weights=is_leader, minlength=m), pa.int64()),
        "disk": col(disk, pa.int64()),
        "network_in": col(np.bincount(sinv, weights=bin_, minlength=m), pa.float64()),
        "network_out": col(np.bincount(sinv, weights=np.where(
            is_leader, bout + bin_ * (rf[row] - 1), 0.0), minlength=m), pa.float64()),
        "leader_bytes_in": col(np.bincount(sinv, weights=np.where(is_leader, bin_, 0.0),
                                           minlength=m), pa.float64()),
        "rate_gaps": col(np.bincount(sinv, weights=np.isnan(est["bytes_in"][row]) & is_leader,
                                     minlength=m), pa.int64()),
    }
    seen = np.unique(ptimes)
    sample_times = {"kind": pa.array(np.full(len(seen), TIME_ROW, np.int8)),
                    "time": col(seen, stamp)}
    schema = _pass_schema()
    for cols, rows in ((part, n), (series, m), (sample_times, len(seen))):
        if rows:
            yield pa.RecordBatch.from_arrays(
                [cols[f.name].cast(f.type) if f.name in cols else pa.nulls(rows, f.type)
                 for f in schema], schema=schema)


def _pass_schema() -> Any:
    """PASS_SCHEMA as Arrow types (what Spark expects back from the pass)."""
    import pyarrow as pa

    types = {"byte": pa.int8(), "short": pa.int16(), "int": pa.int32(), "long": pa.int64(),
             "double": pa.float64(), "string": pa.string(),
             "timestamp": pa.timestamp("us", tz="UTC"),
             "array<int>": pa.list_(pa.field("element", pa.int32()))}
    fields = [f.strip().split(" ") for f in PASS_SCHEMA.split(",")]
    return pa.schema([pa.field(name, types[typ]) for name, typ in fields])


def estimate(both: DataFrame) -> DataFrame:
    """The vectorised pass over the topic-partitioned rows (see _estimate_arrow)."""
    if __name__ != "__main__":  # ship this module's code to the Python workers by value
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return both.mapInArrow(_estimate_arrow, PASS_SCHEMA)


def partition_loads(passed: DataFrame) -> DataFrame:
    """Window statistics per partition (mean, max, exact 95th percentile of the samples
    present); size is the latest known, leader/replicas/isr_size as at the partition's last
    sample; `last_time` is that sample's time (dropped from what is written)."""
    counts = ("samples", "rate_gaps", "size_gaps")  # never null (as counts are in Spark)
    return passed.where(F.col("kind") == PARTITION_ROW).select(
        *[F.coalesce(c, F.lit(0)).alias(c) if c in counts else c for c in PARTITION_COLUMNS],
        F.lit(None).cast("double").alias("cpu"), "last_time")


def broker_timeseries(passed: DataFrame, brokers: DataFrame) -> DataFrame:
    """Per broker and time, the planner's load model over the estimates at that time, and the
    leader count the broker itself reported (its LeaderCount gauge; null when not scraped)."""
    def count(c: str) -> Any:  # never null, as Spark's counts are
        return F.coalesce(F.sum(c), F.lit(0))

    return (passed.where(F.col("kind") == SERIES_ROW).groupBy("time", "broker").agg(
        count("replica_count").alias("replicas"), count("leaders").alias("leaders"),
        F.sum("disk").alias("disk"), F.sum("network_in").alias("network_in"),
        F.sum("network_out").alias("network_out"),
        F.sum("leader_bytes_in").alias("leader_bytes_in"), count("rate_gaps").alias("rate_gaps"))
        .join(brokers.select("time", "broker", "leader_count"), ["time", "broker"], "left"))


RESOURCES = ("replicas", "leaders", "disk", "network_in", "network_out", "leader_bytes_in")


def broker_loads(series: DataFrame, brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """Window means and maxima per broker, with rack, liveness and capacity at the last sample.

    Disk is the exception: the sum of the latest known sizes of the replicas the broker holds
    now (what a plan moves), not a mean over a window in which a size gap would read as zero.
    """
    aggs = []
    for r in RESOURCES:
        aggs += [F.avg(r).alias(r), F.max(r).alias(f"{r}_max")]
    loads = series.groupBy("broker").agg(*aggs, F.sum("rate_gaps").alias("rate_gaps"))
    disk = (partitions.select(F.explode("replicas").alias("broker"),
                              F.coalesce("size_bytes", F.lit(0)).alias("size"))
            .groupBy("broker").agg(F.sum("size").alias("disk")))
    loads = loads.drop("disk").join(disk, "broker", "left")
    last = Window.partitionBy("broker").orderBy(F.col("time").desc())
    info = (brokers.withColumn("_r", F.row_number().over(last)).where("_r = 1")
            .select("broker", "rack", "alive", "up", "disk_capacity", "network_in_capacity",
                    "network_out_capacity"))
    # Leadership over time as the brokers report it (LeaderCount), beside the metadata's view.
    previous = F.lag("leader_count").over(Window.partitionBy("broker").orderBy("time"))
    scrape = brokers.withColumn("_changed", F.col("leader_count") != previous).groupBy(
        "broker").agg(
        F.count_if(F.col("up") == F.lit(False)).alias("down_samples"),
        F.max("under_replicated").alias("under_replicated_max"),
        F.min("leader_count").alias("leader_count_min"),
        F.max("leader_count").alias("leader_count_max"),
        F.avg("leader_count").alias("leader_count_mean"),
        F.count_if(F.col("_changed")).alias("leader_count_changes"),
        F.count_if(F.col("leader_count").isNull()).alias("leader_count_gaps"))
    out = info.join(loads, "broker", "left").join(scrape, "broker", "left")
    return out.fillna(0, subset=[*RESOURCES, *[f"{r}_max" for r in RESOURCES], "rate_gaps"])


def imbalance(brokers: list[dict[str, Any]], thresholds: dict[str, float]) -> dict[str, Any]:
    """Per resource over live brokers: mean, max, max/mean, stddev/mean, brokers above threshold."""
    live = [b for b in brokers if b["alive"] and b["up"] is not False]
    out = {}
    for r in RESOURCES:
        values = [float(b[r] or 0) for b in live]
        mean = sum(values) / len(values) if values else 0.0
        var = sum((v - mean) ** 2 for v in values) / len(values) if values else 0.0
        limit = mean * thresholds[r]
        over = sorted(b["broker"] for b, v in zip(live, values, strict=True) if mean > 0 and v > limit)
        out[r] = {"mean": mean, "max": max(values, default=0.0), "min": min(values, default=0.0),
                  "max_over_mean": (max(values) / mean) if mean > 0 else None,
                  "cv": (var ** 0.5 / mean) if mean > 0 else None, "threshold": thresholds[r],
                  "brokers_over": over, "balanced": not over}
    return out


def leadership(broker_rows: list[dict[str, Any]], brokers: DataFrame,
               live: list[int]) -> dict[str, Any]:
    """Leadership over the window from the brokers' own LeaderCount gauges: per broker its
    range, mean and how often it changed; over time the worst spread across live brokers."""
    spread = (brokers.where(F.col("broker").isin(live) & F.col("leader_count").isNotNull())
              .groupBy("time").agg((F.max("leader_count") - F.min("leader_count")).alias("s"))
              .agg(F.max("s"), F.avg("s")).first()) if live else (None, None)
    return {
        "source": "kafka_server_replicamanager_leadercount",
        "max_minus_min_worst": spread[0], "max_minus_min_mean": spread[1],
        "missing_samples": sum(int(b["leader_count_gaps"] or 0) for b in broker_rows),
        "brokers": {str(b["broker"]): {"min": b["leader_count_min"], "max": b["leader_count_max"],
                                       "mean": b["leader_count_mean"],
                                       "changes": b["leader_count_changes"]}
                    for b in broker_rows},
    }


def topic_dispersion(latest: DataFrame, live: list[int]) -> dict[str, Any]:
    """Topics whose replicas pile up: some broker holds more than ceil(replicas / brokers) + 1."""
    n = max(len(live), 1)
    per = (latest.select("topic", F.explode("replicas").alias("broker"))
           .groupBy("topic", "broker").count()
           .groupBy("topic").agg(F.max("count").alias("max_on_broker"),
                                 F.sum("count").alias("replicas")))
    bad = per.where(F.col("max_on_broker") > F.ceil(F.col("replicas") / n) + 1)
    return {"topics": per.count(), "uneven_topics": bad.count(),
            "examples": [r["topic"] for r in bad.orderBy(F.desc("max_on_broker"), "topic")
                         .limit(10).collect()]}


def analyze(spark: SparkSession, snapshots: str, cluster: str, start: int, end: int,
            output: str, pools: dict[int, str] | None = None,
            thresholds: dict[str, float] | None = None, charts: bool = True) -> dict[str, Any]:
    saved = {k: spark.conf.get(k, None) for k in SQL_CONF}
    for k, v in SQL_CONF.items():
        spark.conf.set(k, v)
    try:
        return _analyze(spark, snapshots, cluster, start, end, output, pools,
                        {**THRESHOLDS, **(thresholds or {})}, charts)
    finally:
        for k, old in saved.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


# Set for the job's queries (restored after): Arrow batches of the pass, larger than the
# default 10,000 rows (fewer round trips to the Python workers), and no byte limit per batch:
# with one, Spark measures the batch after every row, which costs time linear in the batch's
# list values (the replica lists), quadratic over a batch (Int.MaxValue turns the check off).
SQL_CONF = {"spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
            "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1)}


def _analyze(spark: SparkSession, snapshots: str, cluster: str, start: int, end: int,
             output: str, pools: dict[int, str] | None, thresholds: dict[str, float],
             charts: bool) -> dict[str, Any]:
    parts = read_window(spark, snapshots, "partitions", cluster, start, end)
    bt = read_window(spark, snapshots, "broker_topics", cluster, start, end)
    brokers = read_window(spark, snapshots, "brokers", cluster, start, end).persist()
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    passed = estimate(shuffle_by_topic(parts, bt, shuffle)).persist()
    times, latest_time = passed.where(F.col("kind") == TIME_ROW).agg(
        F.countDistinct("time"), F.max("time")).first()
    if times == 0:
        raise SystemExit(f"error: no snapshot samples for cluster {cluster!r} in the window")
    out = Path(output)
    pl = partition_loads(passed).persist()
    pl.drop("last_time").write.mode("overwrite").parquet(str(out / "partition_loads"))
    series = broker_timeseries(passed, brokers).persist()
    series.write.mode("overwrite").parquet(str(out / "broker_timeseries"))
    bl = broker_loads(series, brokers, pl)
    if pools:
        mapping = spark.createDataFrame(sorted(pools.items()), "broker int, pool string")
        bl = bl.join(mapping, "broker", "left")
    else:
        bl = bl.withColumn("pool", F.lit(None).cast("string"))
    bl = bl.persist()
    bl.write.mode("overwrite").parquet(str(out / "broker_loads"))
    broker_rows = [r.asDict() for r in bl.orderBy("broker").collect()]

    sums = [F.sum(r).alias(r) for r in RESOURCES]
    for key, name in (("rack", "rack_loads"), ("pool", "pool_loads")):
        bl.where(F.col(key).isNotNull()).groupBy(key).agg(
            F.count("*").alias("brokers"), *sums).write.mode("overwrite").parquet(str(out / name))
    topics = pl.groupBy("topic").agg(
        F.count("*").alias("partitions"), F.sum("size_bytes").alias("size_bytes"),
        F.sum("bytes_in_per_sec").alias("bytes_in_per_sec"),
        F.sum("bytes_out_per_sec").alias("bytes_out_per_sec"),
        F.max("bytes_in_per_sec").alias("max_partition_bytes_in"))
    topics.write.mode("overwrite").parquet(str(out / "topic_loads"))

    live = [b["broker"] for b in broker_rows if b["alive"] and b["up"] is not False]
    mean_in = pl.agg(F.avg("bytes_in_per_sec")).first()[0] or 0.0
    hot = (pl.where(F.col("bytes_in_per_sec") > mean_in * HOT_PARTITION_FACTOR)
           .orderBy(F.desc("bytes_in_per_sec")))
    # Gaps per partition add up to the window's; the latest sample time's rows are the
    # partitions whose last sample is at that time.
    gaps, rate_gaps = (int(v or 0) for v in pl.agg(F.sum("size_gaps"), F.sum("rate_gaps")).first())
    latest = pl.where(F.col("last_time") == F.lit(latest_time))
    offline = latest.where(F.col("leader") < 0).count()
    urp = latest.where(F.col("isr_size") < F.size("replicas")).count()
    over_capacity = []
    for b in broker_rows:
        for r, cap in (("disk", "disk_capacity"), ("network_in", "network_in_capacity"),
                       ("network_out", "network_out_capacity")):
            if b[cap] and b[r] > CAPACITY_THRESHOLD * b[cap]:
                over_capacity.append({"broker": b["broker"], "resource": r,
                                      "utilisation": b[r] / b[cap]})
    summary = {
        "version": VERSION,
        "kind": "balance-analysis",
        "cluster": cluster,
        "window_start": dt.datetime.fromtimestamp(start, dt.UTC).isoformat(),
        "window_end": dt.datetime.fromtimestamp(end, dt.UTC).isoformat(),
        "sample_times": times,
        "estimator": "mean",
        "partitions": pl.count(),
        "issues": {k: int(v) for k, v in (("missing_size_samples", gaps),
                                          ("missing_rate_samples", rate_gaps)) if v},
        "thresholds": thresholds,
        "imbalance": imbalance(broker_rows, thresholds),
        "topic_dispersion": topic_dispersion(latest, live),
        "anomalies": {
            "offline_partitions": offline,
            "under_replicated_partitions": urp,
            "dead_brokers": sorted(b["broker"] for b in broker_rows
                                   if not b["alive"] or b["up"] is False),
            "brokers_without_load": sorted(b["broker"] for b in broker_rows
                                           if b["broker"] in live and not b["replicas"]),
            "over_capacity": over_capacity,
            "hot_partitions": [f"{r['topic']}-{r['partition']}" for r in hot.limit(20).collect()],
            "hot_partition_count": hot.count(),
            "metric_gaps": {"size": gaps, "rate": rate_gaps,
                            "brokers_down_samples": {b["broker"]: b["down_samples"]
                                                     for b in broker_rows if b["down_samples"]}},
        },
        "leadership": leadership(broker_rows, brokers, live),
        "brokers": [{k: b[k] for k in ("broker", "rack", "pool", "alive", *RESOURCES)}
                    for b in broker_rows],
    }
    if charts:
        summary["charts"] = draw_charts(series, summary, out / "charts")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    for df in (passed, pl, series, bl, brokers):
        df.unpersist()
    return summary


def draw_charts(series: DataFrame, summary: dict[str, Any], directory: Path) -> list[str]:
    """Per-broker network in over the window (a heat map) and imbalance per resource."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    rows = series.select("time", "broker", "network_in", "network_out").orderBy("time").collect()
    times = sorted({r["time"] for r in rows})
    brokers = sorted({r["broker"] for r in rows})
    ti = {t: i for i, t in enumerate(times)}
    bi = {b: i for i, b in enumerate(brokers)}
    paths = []
    fig, axes = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for ax, key in zip(axes, ("network_in", "network_out"), strict=True):
        grid = np.zeros((len(brokers), len(times)))
        for r in rows:
            grid[bi[r["broker"]], ti[r["time"]]] = r[key] / 1024**2
        im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis")
        ax.set_ylabel("broker (index)")
        ax.set_title(f"{key.replace('_', ' ')} per broker, MiB/s")
        fig.colorbar(im, ax=ax)
    step = max(1, len(times) // 8)
    axes[-1].set_xticks(range(0, len(times), step),
                        [times[i].strftime("%H:%M") for i in range(0, len(times), step)])
    axes[-1].set_xlabel("time (UTC)")
    fig.tight_layout()
    path = directory / "broker_load.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    paths.append(str(path))
    imb = summary["imbalance"]
    names = list(imb)
    values = [imb[n]["max_over_mean"] or 0 for n in names]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(names, values, color=["tab:red" if not imb[n]["balanced"] else "tab:green"
                                 for n in names])
    ax.plot([-0.5, len(names) - 0.5], [THRESHOLDS["disk"]] * 2, "k--", label="threshold")
    ax.set_ylabel("max / mean over live brokers")
    ax.set_title("imbalance per resource")
    ax.legend()
    fig.tight_layout()
    path = directory / "imbalance.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    paths.append(str(path))
    return paths


def read_pools(path: str) -> dict[int, str]:
    from kafka_ops.pools import load_pools

    return {b: name for name, pool in load_pools(path).pools.items() for b in pool.brokers}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", required=True, help="snapshot dataset root")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--start", required=True, help="epoch seconds or ISO-8601")
    parser.add_argument("--end", required=True, help="epoch seconds or ISO-8601")
    parser.add_argument("--output", required=True, help="output directory")
    parser.add_argument("--pools", help="pools YAML file (broker -> pool for per-pool loads)")
    parser.add_argument("--master", help="Spark master when run without spark-submit")
    parser.add_argument("--no-charts", action="store_true")
    args = parser.parse_args(argv)
    start, end = parse_time(args.start), parse_time(args.end)
    if end < start:
        raise SystemExit("error: --end is before --start")
    spark = session(args.master)
    try:
        summary = analyze(spark, args.snapshots, args.cluster, start, end, args.output,
                          read_pools(args.pools) if args.pools else None,
                          charts=not args.no_charts)
    finally:
        spark.stop()
    json.dump({k: summary[k] for k in ("cluster", "window_start", "window_end", "partitions",
                                       "issues")}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
