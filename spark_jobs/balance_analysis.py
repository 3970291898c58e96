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


def estimate_partitions(parts: DataFrame, broker_topics: DataFrame,
                        partitions: int | None = None) -> DataFrame:
    """Per partition and time: CC's leader-based estimate of bytes in/out (null = a gap).

    The partition rows and the broker-topic rates are brought together in one shuffle: both are
    hash-partitioned by topic, then a window over (time, leader, topic) counts the partitions each
    broker leads of the topic and picks up its rates. Grouping by topic is what every later step
    needs too (per-partition statistics group by topic and partition), so no other step shuffles
    the partition rows again. (Two joins, as a first version did, shuffled them three times.)
    """
    rates = ("bytes_in", "bytes_out", "messages_in")
    p = parts.select("time", "topic", "partition", "leader", "replicas", "isr_size", "size_bytes",
                     *[F.lit(None).cast("double").alias(r) for r in rates])
    bt = broker_topics.select("time", "topic", F.lit(None).cast("int").alias("partition"),
                              F.col("broker").alias("leader"),
                              F.lit(None).cast(parts.schema["replicas"].dataType).alias("replicas"),
                              F.lit(None).cast("short").alias("isr_size"),
                              F.lit(None).cast("long").alias("size_bytes"), *rates)
    both = p.unionByName(bt)
    both = (both.repartition(partitions, "topic") if partitions else both.repartition("topic"))
    group = Window.partitionBy("time", "leader", "topic")
    led = F.count("partition").over(group)
    return (both.select("time", "topic", "partition", "leader", "replicas", "isr_size",
                        "size_bytes",
                        *[(F.max(r).over(group) / F.when(F.col("leader") >= 0, led)).alias(r)
                          for r in rates])
            .where(F.col("partition").isNotNull()))


def partition_loads(est: DataFrame, accuracy: int = 200) -> DataFrame:
    """Window statistics per partition; replicas and leader as at the window's last sample.

    One aggregation (no sort for "the last sample": max_by on time). The 95th percentile is
    approximate with 1/accuracy relative rank error: a few samples of a day's 288.
    """
    latest = F.max_by(F.struct("leader", "replicas", "isr_size"), "time")
    return (est.groupBy("topic", "partition").agg(
        F.max_by("size_bytes", F.when(F.col("size_bytes").isNotNull(), F.col("time")))
        .alias("size_bytes"),
        F.avg("bytes_in").alias("bytes_in_per_sec"),
        F.avg("bytes_out").alias("bytes_out_per_sec"),
        F.max("bytes_in").alias("bytes_in_max"),
        F.max("bytes_out").alias("bytes_out_max"),
        F.percentile_approx("bytes_in", 0.95, accuracy).alias("bytes_in_p95"),
        F.percentile_approx("bytes_out", 0.95, accuracy).alias("bytes_out_p95"),
        F.avg("messages_in").alias("messages_in_per_sec"),
        F.count("*").alias("samples"),
        F.count_if(F.col("bytes_in").isNull() & (F.col("leader") >= 0)).alias("rate_gaps"),
        F.count_if(F.col("size_bytes").isNull() & (F.col("leader") >= 0)).alias("size_gaps"),
        latest.alias("_latest"))
        .select("*", "_latest.*").drop("_latest")
        .withColumn("cpu", F.lit(None).cast("double")))


def broker_timeseries(est: DataFrame, brokers: DataFrame) -> DataFrame:
    """Per broker and time, the planner's load model over the estimates at that time, and the
    leader count the broker itself reported (its LeaderCount gauge; null when not scraped)."""
    rf = F.size("replicas")
    rep = est.select("time", "topic", "partition", "leader", "size_bytes", "bytes_in",
                     "bytes_out", rf.alias("rf"), F.posexplode("replicas").alias("pos", "broker"))
    is_leader = F.col("broker") == F.col("leader")
    return rep.groupBy("time", "broker").agg(
        F.count("*").alias("replicas"),
        F.count_if(is_leader).alias("leaders"),
        F.sum(F.coalesce("size_bytes", F.lit(0))).alias("disk"),
        F.sum(F.coalesce("bytes_in", F.lit(0.0))).alias("network_in"),
        F.sum(F.when(is_leader, F.coalesce("bytes_out", F.lit(0.0))
                     + F.coalesce("bytes_in", F.lit(0.0)) * (F.col("rf") - 1)).otherwise(0.0))
        .alias("network_out"),
        F.sum(F.when(is_leader, F.coalesce("bytes_in", F.lit(0.0))).otherwise(0.0))
        .alias("leader_bytes_in"),
        F.count_if(F.col("bytes_in").isNull() & is_leader).alias("rate_gaps"),
    ).join(brokers.select("time", "broker", "leader_count"), ["time", "broker"], "left")


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
            "examples": [r["topic"] for r in bad.orderBy(F.desc("max_on_broker")).limit(10).collect()]}


def analyze(spark: SparkSession, snapshots: str, cluster: str, start: int, end: int,
            output: str, pools: dict[int, str] | None = None,
            thresholds: dict[str, float] | None = None, charts: bool = True) -> dict[str, Any]:
    thresholds = {**THRESHOLDS, **(thresholds or {})}
    parts = read_window(spark, snapshots, "partitions", cluster, start, end)
    bt = read_window(spark, snapshots, "broker_topics", cluster, start, end)
    brokers = read_window(spark, snapshots, "brokers", cluster, start, end).persist()
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    est = estimate_partitions(parts, bt, shuffle).persist()
    times = est.select("time").distinct().count()
    if times == 0:
        raise SystemExit(f"error: no snapshot samples for cluster {cluster!r} in the window")
    out = Path(output)
    pl = partition_loads(est).persist()
    pl.write.mode("overwrite").parquet(str(out / "partition_loads"))
    series = broker_timeseries(est, brokers).persist()
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
    # One pass over the (cached) estimates instead of re-reading the snapshot files.
    online = F.col("leader") >= 0
    gaps, rate_gaps, latest_time = est.agg(
        F.count_if(F.col("size_bytes").isNull() & online),
        F.count_if(F.col("bytes_in").isNull() & online), F.max("time")).first()
    latest = est.where(F.col("time") == F.lit(latest_time))
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
    for df in (est, pl, series, bl, brokers):
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
