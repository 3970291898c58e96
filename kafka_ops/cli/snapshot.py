"""``kafka-ops snapshot``: cluster metadata + a window of broker metrics into the Parquet dataset.

Without --start/--end a run appends the samples since the previous run (or the last hour on a
new dataset); with them it backfills that window. Metrics come from Prometheus (--prometheus
URL), or, without it, from the backend alone (log sizes, no rates). Prometheus credentials come
from --prometheus-config (a properties file: username, password or bearer_token) or the
environment (PROMETHEUS_USERNAME, PROMETHEUS_PASSWORD, PROMETHEUS_BEARER_TOKEN), never from the
command line, and never appear in output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os

from kafka_ops.cli.common import (
    add_cluster_args,
    add_json_flag,
    load_cluster,
    print_json,
    read_client_properties,
)
from kafka_ops.errors import ValidationError
from kafka_ops.monitor.snapshot import take_snapshot
from kafka_ops.monitor.sources import BackendSource, MetricsSource, PrometheusConfig, PrometheusSource


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("snapshot", help="sample broker metrics into a Parquet dataset",
                                   description=__doc__)
    add_cluster_args(parser)
    parser.add_argument("--dataset", required=True, metavar="DIR", help="snapshot dataset root")
    parser.add_argument("--name", required=True, metavar="CLUSTER",
                        help="cluster name (the dataset's partition key)")
    parser.add_argument("--prometheus", metavar="URL", help="Prometheus base URL")
    parser.add_argument("--prometheus-config", metavar="FILE",
                        help="properties: username=, password= or bearer_token=")
    parser.add_argument("--job", help="only this Prometheus scrape job")
    parser.add_argument("--step", type=float, default=300.0, help="seconds between samples")
    parser.add_argument("--start", help="backfill from (epoch seconds or ISO-8601)")
    parser.add_argument("--end", help="backfill up to (default: now)")
    add_json_flag(parser)
    parser.set_defaults(func=_run)


def parse_time(text: str | None, what: str) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"--{what} {text!r}: give epoch seconds or ISO-8601") from None
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


def prometheus_config(args: argparse.Namespace) -> PrometheusConfig:
    props = read_client_properties(args.prometheus_config) if args.prometheus_config else {}
    env = os.environ

    def pick(key: str) -> str | None:
        return props.get(key) or env.get(f"PROMETHEUS_{key.upper()}") or None

    return PrometheusConfig(args.prometheus, username=pick("username"), password=pick("password"),
                            bearer_token=pick("bearer_token"), job=args.job)


def _run(args: argparse.Namespace) -> int:
    if args.step <= 0:
        raise ValidationError("--step must be a positive number of seconds")
    start, end = parse_time(args.start, "start"), parse_time(args.end, "end")
    if start is not None and end is not None and end < start:
        raise ValidationError("--end is before --start")
    source: MetricsSource = (PrometheusSource(prometheus_config(args)) if args.prometheus
                             else BackendSource())
    model = load_cluster(args)
    result = take_snapshot(model, source, args.dataset, args.name, step=args.step, start=start,
                           end=end)
    if args.json:
        print_json(result.to_dict())
        return 0
    window = " .. ".join(dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
                         for t in (result.start, result.end))
    print(f"snapshot of {result.cluster}: {result.samples} sample time(s) in {window} UTC")
    for table, rows in result.rows.items():
        print(f"  {table}: {rows} rows")
    if result.issues:
        print("issues (samples left null, not zero):")
        for kind, count in result.issues.items():
            print(f"  {kind}: {count}")
    return 0
