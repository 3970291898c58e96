"""One snapshot of the xl cluster pulled from a real Prometheus: time and rows.

The xl preset (200 brokers, ~130,000 partitions) runs in the emulator with every broker serving
/metrics; a loopback Prometheus (Debian's) scrapes all 200 every ``--scrape`` seconds. Once
every broker has two scrapes (so rate() answers), the benchmark takes snapshots through
kafka_ops.monitor (PrometheusSource -> Parquet): one sample time, then a window of several.
Prints numbers; asserts nothing. The 24-hour dataset's generation time and size are in
bench_spark_analysis.py (written directly, as a backfill would).

    .venv/bin/python benchmarks/bench_snapshot.py [--preset xl] [--scrape 30] [--window-samples 4]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_ops.emulator.cluster import EmulatedCluster  # noqa: E402
from kafka_ops.emulator.metrics import BrokerMetrics, MetricsFace  # noqa: E402
from kafka_ops.generator import generate_cluster  # noqa: E402
from kafka_ops.monitor.snapshot import take_snapshot  # noqa: E402
from kafka_ops.monitor.sources import PrometheusConfig, PrometheusSource  # noqa: E402
from kafka_ops.testing.prometheus import prometheus_for_emulator  # noqa: E402


def show(label: str, value: str) -> None:
    print(f"{label:<56} {value}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="xl")
    parser.add_argument("--scrape", type=int, default=30, help="scrape interval, seconds")
    parser.add_argument("--window-samples", type=int, default=4)
    args = parser.parse_args()
    began = time.perf_counter()
    model = generate_cluster(args.preset)
    cluster = EmulatedCluster(model, record_events=False)
    metrics = BrokerMetrics(cluster, history=3600)
    metrics.min_interval = 10.0  # one cluster read serves the scrapes of many brokers
    show(f"{args.preset}: brokers / partitions / replicas",
         f"{len(model.brokers)} / {len(model.partitions)} / {model.replica_count}")
    with MetricsFace(cluster, metrics=metrics) as face:
        show(f"emulator + {len(face.targets)} /metrics listeners up", f"{time.perf_counter() - began:.1f} s")
        sample = face.metrics.render(next(iter(face.targets)))
        show("one broker's /metrics", f"{len(sample.splitlines())} lines, {len(sample) / 1e6:.2f} MB")
        with prometheus_for_emulator(face, scrape_interval=f"{args.scrape}s") as prom:
            t = time.perf_counter()
            n = len(model.brokers)
            prom.wait_for('count(rate(kafka_server_brokertopicmetrics_bytesin_total{topic=""}[5m]))',
                          lambda r: bool(r) and float(r[0]["value"][1]) == n,
                          timeout=20 * args.scrape + 300)
            show("every broker scraped twice", f"{time.perf_counter() - t:.1f} s")
            show("Prometheus head series", str(prom.api("status/tsdb")["headStats"]["numSeries"]))
            source = PrometheusSource(PrometheusConfig(prom.url, job="kafka"),
                                      rate_window=4 * args.scrape)
            with tempfile.TemporaryDirectory() as tmp:
                live = cluster.to_model()
                # One sample time on the step grid, after the scrapes began: wait until it passes.
                step = args.scrape
                end = (time.time() // step + 1) * step
                while time.time() < end + 2:
                    time.sleep(0.5)
                t = time.perf_counter()
                one = take_snapshot(live, source, Path(tmp) / "ds", args.preset, step=step,
                                    start=end, end=end)
                show("snapshot, 1 sample time", f"{time.perf_counter() - t:.1f} s, rows "
                     f"{one.rows}, issues {one.issues or 'none'}")
                end = time.time() // 30 * 30
                t = time.perf_counter()
                window = take_snapshot(live, source, Path(tmp) / "ds2", args.preset, step=30,
                                       start=end - 30 * (args.window_samples - 1), end=end)
                show(f"snapshot, {window.samples} sample times (30 s apart)",
                     f"{time.perf_counter() - t:.1f} s, rows {window.rows}")
    show("peak RSS of this process (emulator + snapshot)",
         f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
