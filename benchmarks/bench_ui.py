"""Rebalancing view benchmark: page load and diff filtering on the xl cluster with a 60,000-move plan.

The xl preset (200 brokers, 130,000 partitions) and a plan moving one replica of 60,000 of its
partitions; the view's files are written as the ``predict`` task writes them (diff.json,
planned.json, brokers.json; the prediction with ``--predict``, which also times the simulation
itself: wall and CPU seconds, as the machine may be shared), and
the view is served by uvicorn on 127.0.0.1 and timed over HTTP (authentication off: Airflow's
token check is not what is measured). Cold = the first request after the files changed (the
diff is parsed and indexed); warm = the median of the next requests.

    PYTHONPATH=.:plugins .venv/bin/python benchmarks/bench_ui.py [--moves 60000] [--predict]

Timings on a shared, loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from kafka_ops.generator import generate_cluster  # noqa: E402
from kafka_ops.model import ClusterModel, TopicPartition  # noqa: E402
from kafka_ops.plan import ReassignmentPlan  # noqa: E402
from kafka_ops.testing.zookeeper import free_port  # noqa: E402

DAG, KEY = "kafka_rebalance", "scheduled__2026-11-22T03_00_00"


def build_plan(model: ClusterModel, moves: int, seed: int = 0) -> ReassignmentPlan:
    """One replica of ``moves`` random partitions to a random broker not holding it."""
    rng = random.Random(seed)
    ids = model.broker_ids
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    for p in rng.sample(list(model), moves):
        dest = rng.choice([b for b in rng.sample(ids, 8) if b not in p.replicas])
        victim = rng.randrange(len(p.replicas))
        targets[p.tp] = tuple(dest if i == victim else b for i, b in enumerate(p.replicas))
    return ReassignmentPlan.from_assignment(targets)


def write_analysis(directory: Path, model: ClusterModel, samples: int = 288) -> None:
    """A balance-analysis output for the index page's panel, laid out as the Spark job writes
    it: a day of 5-minute samples per broker (broker_timeseries/) and the summary."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(1)
    start = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
    base = {b: 1e6 * (1 + rng.random()) for b in model.broker_ids}
    rows: dict[str, list] = {"time": [], "broker": [], "network_in": []}
    for i in range(samples):
        t = start + dt.timedelta(minutes=5 * i)
        for b in model.broker_ids:
            rows["time"].append(t)
            rows["broker"].append(b)
            rows["network_in"].append(base[b] * (1 + 0.3 * rng.random()))
    (directory / "broker_timeseries").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows), directory / "broker_timeseries" / "part-0.parquet")
    mean = sum(base.values()) / len(base)
    summary = {"version": 1, "kind": "balance-analysis", "window_start": str(start),
               "window_end": str(start + dt.timedelta(days=1)), "sample_times": samples,
               "partitions": len(model.partitions), "estimator": "mean",
               "imbalance": {"network_in": {"max_over_mean": max(base.values()) / mean,
                                            "threshold": 1.1, "balanced": False,
                                            "brokers_over": [max(base, key=base.__getitem__)]}},
               "brokers": [{"broker": b, "network_in": v, "network_out": v, "disk": 1e12}
                           for b, v in base.items()],
               "anomalies": {"dead_brokers": [], "hot_partition_count": 0}}
    (directory / "summary.json").write_text(json.dumps(summary))


def timed_get(url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - start, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--predict", action="store_true",
                        help="also simulate the plan (the predict task's cost) and serve it")
    args = parser.parse_args()

    import uvicorn
    from fastapi import FastAPI

    from kafka_ops_provider.ui.app import URL_PREFIX, create_app
    from kafka_ops_provider.ui.files import write_run_files
    from kafka_ops_provider.ui.operators import execution_options

    t0 = time.perf_counter()
    model = generate_cluster("xl", seed=0)
    plan = build_plan(model, args.moves)
    print(f"xl preset: {model}; plan: {len(plan)} moves (built in {time.perf_counter() - t0:.1f} s)")
    prediction = None
    if args.predict:
        from kafka_ops.predict import predict

        params = {"throttle": 100_000_000, "concurrency": 4, "poll_interval": 10.0}
        cpu = time.process_time()
        p = predict(model, plan, execution_options(params))
        cpu = time.process_time() - cpu
        prediction = p.to_dict()
        print(f"prediction: {p.status}, {p.duration / 3600:.1f} h emulated "
              f"({p.duration / params['poll_interval']:.0f} polls of {params['poll_interval']:.0f} s; "
              f"{p.polls} simulated, the others had nothing to see), "
              f"simulated in {p.wall_seconds:.1f} s wall, {cpu:.1f} s CPU")
    root = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    moved = sum(model.partitions[tp].size_bytes for tp in plan.replicas)
    planned = {"digest": {"content_hash": "sha256:bench", "replica_moves": len(plan), "partitions": len(plan),
                          "bytes_to_move": moved, "throttle_bytes_per_sec": 100_000_000},
               "cluster": "xl", "mode": "rebalance"}
    t1 = time.perf_counter()
    out = write_run_files(root / DAG / KEY, planned, model, plan, prediction)
    print(f"view files written in {time.perf_counter() - t1:.1f} s "
          f"(diff.json {(out / 'diff.json').stat().st_size / 1e6:.1f} MB)")
    write_analysis(root / DAG / "analysis", model)

    outer = FastAPI()
    outer.mount(URL_PREFIX, create_app(authenticate=False, artifacts=root))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(outer, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("uvicorn did not start")
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}{URL_PREFIX}"
    api = f"{base}/api/runs/{DAG}/{KEY}/diff"
    busiest = max(model.broker_ids, key=lambda b: len(model.partitions_on(b)))
    topic = next(iter(plan.replicas)).topic
    page = f"{base}/runs/{DAG}/{KEY}"

    def open_run() -> float:
        """What a browser does to show the run: the page, then the diff table's first fetch."""
        return timed_get(page)[0] + timed_get(f"{api}?limit=100")[0]

    cold = open_run()
    warm = statistics.median(open_run() for _ in range(args.repeat))
    print(f"{'request':<32}{'cold ms':>10}{'warm ms':>10}{'rows':>8}")
    print(f"{'run page + first diff page':<32}{cold * 1000:>10.1f}{warm * 1000:>10.1f}{len(plan):>8}")
    cases = [
        ("run page (HTML)", page),
        ("diff, first page", f"{api}?limit=100"),
        ("diff, topic filter", f"{api}?topic={topic}&limit=100"),
        ("diff, topic substring", f"{api}?topic={topic[:3].upper()}&limit=100"),
        ("diff, broker filter", f"{api}?broker={busiest}&limit=100"),
        ("diff, sort by size desc", f"{api}?sort=size&desc=1&limit=100"),
        ("diff, broker + sort size", f"{api}?broker={busiest}&sort=size&desc=1&limit=100"),
        ("diff, last page", f"{api}?offset={len(plan) - 100}&limit=100"),
        ("index (HTML, analysis charts)", f"{base}/"),
    ]
    try:
        for name, url in cases:
            cold, body = timed_get(url)
            warm = statistics.median(timed_get(url)[0] for _ in range(args.repeat))
            rows = json.loads(body)["total"] if "/api/" in url else ""
            print(f"{name:<32}{cold * 1000:>10.1f}{warm * 1000:>10.1f}{rows!s:>8}")
    finally:
        server.should_exit = True
        thread.join(10)


if __name__ == "__main__":
    main()
