"""The rebalancing view over a real execution's files: a plan predicted, executed by the real
Executor (in-process on the emulator core, manual clock) with its state in the store layout the
DAGs use, then read back through the view's HTTP API. Expected diff answers are computed
here, from the plan and the model, not through the view's index."""

from __future__ import annotations

import random
import re

import pytest
from fastapi.testclient import TestClient

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import Executor, StateStore
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.predict import predict
from kafka_ops.testing.inprocess import InProcessBackend
from kafka_ops_provider.ui.app import URL_PREFIX, create_app
from kafka_ops_provider.ui.files import write_run_files
from kafka_ops_provider.ui.operators import execution_options

MB = 1_000_000
DAG, KEY = "kafka_rebalance", "manual__2026-11-22T03_00_00"
PARAMS = {"throttle": 20 * MB, "concurrency": 2, "poll_interval": 2.0}


def model_and_plan(seed: int = 7) -> tuple[ClusterModel, ReassignmentPlan]:
    rng = random.Random(seed)
    cap = BrokerCapacity(10**13, 500 * MB, 500 * MB)
    brokers = [Broker(i, rack=f"r{i % 3}", capacity=cap) for i in range(1, 9)]
    parts, targets = [], {}
    for topic in ("orders", "payments", "audit-log", "Orders-DLQ"):
        for p in range(rng.randint(5, 12)):
            reps = tuple(rng.sample(range(1, 6), 2))
            parts.append(Partition(topic, p, reps, reps[0], reps, size_bytes=rng.randint(1, 90) * MB))
            if rng.random() < 0.6:
                new = rng.choice([b for b in range(6, 9) if b not in reps])
                targets[TP(topic, p)] = (reps[0], new) if rng.random() < 0.5 else (new, reps[0])
    return ClusterModel(brokers, parts), ReassignmentPlan.from_assignment(targets)


@pytest.fixture
def artifacts(tmp_path):
    model, plan = model_and_plan()
    pred = predict(model, plan, execution_options(PARAMS))
    planned = {"digest": {"content_hash": "sha256:abc123", "replica_moves": len(plan), "partitions": len(plan),
                          "bytes_to_move": sum(model.partitions[tp].size_bytes for tp in plan.replicas),
                          "throttle_bytes_per_sec": PARAMS["throttle"],
                          "goals": [{"name": "replica distribution", "status": "improved",
                                     "before": {"max/avg": 1.4}, "after": {"max/avg": 1.1}}],
                          "risks": ["leaders move off broker 1"]},
               "mode": "rebalance", "cluster": "emulated", "run_id": KEY}
    write_run_files(tmp_path / DAG / KEY, planned, model, plan, pred.to_dict())
    return tmp_path, model, plan, pred


def client(root) -> TestClient:
    from fastapi import FastAPI

    outer = FastAPI()
    outer.mount(URL_PREFIX, create_app(authenticate=False, artifacts=root))
    return TestClient(outer)


def run_execution(root, model, plan, until_polls: int | None = None):
    clock = ManualClock()
    backend = InProcessBackend.for_model(model, clock=clock)
    store = StateStore(root / "state" / DAG / KEY)
    options = execution_options(PARAMS)
    ex = Executor(backend, plan, options=options, store=store, clock=clock.now,
                  sleep=clock.advance)
    ex.start()
    polls = 0
    while not ex.step():
        polls += 1
        clock.advance(options.poll_interval)
        if until_polls is not None and polls >= until_polls:
            return None
    return ex.report()


def test_digest_figures_and_waiting_state_are_shown(artifacts):
    root, model, plan, pred = artifacts
    c = client(root)
    index = c.get(f"{URL_PREFIX}/")
    assert index.status_code == 200 and f"{DAG} / {KEY}" in index.text
    page = c.get(f"{URL_PREFIX}/runs/{DAG}/{KEY}")
    assert page.status_code == 200
    assert re.search(r"data-testid='digest-moves'>(\d+)<", page.text).group(1) == str(len(plan))
    assert "sha256:abc123" in page.text and "leaders move off broker 1" in page.text
    assert f"data-seconds='{pred.duration:.1f}'" in page.text
    assert c.get(f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/progress").json()["status"] == "planned"
    assert c.get(f"{URL_PREFIX}/runs/{DAG}/nope").status_code == 404
    assert c.get(f"{URL_PREFIX}/runs/{DAG}/..").status_code == 404


def test_diff_filters_and_sorts_server_side_like_an_independent_scan(artifacts):
    root, model, plan, _ = artifacts
    c = client(root)
    api = f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/diff"
    changed = {tp: t for tp, t in plan.replicas.items() if tuple(t) != model.partitions[tp].replicas}
    everything = c.get(api, params={"limit": 1000}).json()
    assert everything["total"] == len(changed)
    for broker in range(1, 9):
        want = {(tp.topic, tp.partition) for tp, t in changed.items()
                if broker in t or broker in model.partitions[tp].replicas}
        got = c.get(api, params={"broker": broker, "limit": 1000}).json()
        assert {(r["topic"], r["partition"]) for r in got["rows"]} == want
    got = c.get(api, params={"topic": "orders", "limit": 1000}).json()  # case-insensitive
    assert {r["topic"] for r in got["rows"]} == {"orders", "Orders-DLQ"} & {tp.topic for tp in changed}
    sizes = [r["size"] for r in c.get(api, params={"sort": "size", "desc": "1", "limit": 1000}
                                      ).json()["rows"]]
    assert sizes == sorted((model.partitions[tp].size_bytes for tp in changed), reverse=True)
    page2 = c.get(api, params={"offset": 5, "limit": 5}).json()["rows"]
    assert [(r["topic"], r["partition"]) for r in page2] == [
        (r["topic"], r["partition"]) for r in everything["rows"][5:10]]
    assert c.get(api, params={"broker": "x"}).status_code == 422
    assert c.get(api, params={"sort": "bogus"}).status_code == 422


def test_progress_mid_run_then_report_with_predicted_against_actual(artifacts):
    root, model, plan, pred = artifacts
    c = client(root)
    assert run_execution(root, model, plan, until_polls=3) is None
    mid = c.get(f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/progress").json()
    p = mid["progress"]
    assert mid["status"] == "running" and p["total"] == len(plan)
    assert p["completed"] + p["in_flight"] + p["pending"] == p["total"]
    assert p["in_flight"] > 0 and p["throttles"]["brokers"]  # throttles are set while moving
    report = run_execution(root, model, plan)  # resumes from the store, to the end
    assert report.status == "completed"
    done = c.get(f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/progress").json()
    assert done["status"] == "completed" and done["progress"]["completed"] == len(plan)
    assert done["progress"]["throttles"]["brokers"] == {}  # none left behind
    page = c.get(f"{URL_PREFIX}/runs/{DAG}/{KEY}/report").text
    assert re.search(r"data-testid='report-moved'>(\d+)<", page).group(1) == str(len(plan))
    m = re.search(r"data-testid='predicted-vs-actual'>Actual .* against predicted .*: ([-+\d.]+)%",
                  page)
    assert m is not None
    # The same executor on the same model: the prediction is exact up to the resumed run's
    # extra polls.
    assert abs(float(m.group(1))) < 25.0


def test_without_airflow_login_pages_redirect_and_api_refuses(artifacts):
    from fastapi import FastAPI

    root, *_ = artifacts
    outer = FastAPI()
    outer.mount(URL_PREFIX, create_app(authenticate=True, artifacts=root))
    c = TestClient(outer, follow_redirects=False)
    page = c.get(f"{URL_PREFIX}/runs/{DAG}/{KEY}")
    assert page.status_code == 302 and page.headers["location"].startswith("/auth/login/")
    assert c.get(f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/diff").status_code == 401


def test_before_after_per_broker_totals_match_an_independent_count(artifacts):
    root, model, plan, _ = artifacts
    page = client(root).get(f"{URL_PREFIX}/runs/{DAG}/{KEY}").text
    assert "data-testid='before-after-replicas'" in page and "data-testid='before-after-disk'" in page
    totals = {b["broker"]: b for b in
              __import__("json").loads((root / DAG / KEY / "brokers.json").read_text())}
    for broker in model.broker_ids:
        before = [p for p in model if broker in p.replicas]
        after = [p for p in model if broker in plan.replicas.get(p.tp, p.replicas)]
        assert totals[broker]["replicas"] == [len(before), len(after)]
        assert totals[broker]["disk"] == [sum(p.size_bytes for p in before),
                                          sum(p.size_bytes for p in after)]
    # Replicas are moved, not created or lost.
    assert sum(b["replicas"][0] for b in totals.values()) == sum(b["replicas"][1] for b in totals.values())


def analysis_output(directory, brokers: dict[int, list[float]]):
    """A balance-analysis output as spark_jobs/balance_analysis.py lays it out: summary.json,
    broker_timeseries/ (Parquet) and a PNG; network-in per broker per sample as given."""
    import datetime as dt
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    start = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    rows = {"time": [], "broker": [], "network_in": []}
    for b, values in brokers.items():
        for i, v in enumerate(values):
            rows["time"].append(start + dt.timedelta(minutes=5 * i))
            rows["broker"].append(b)
            rows["network_in"].append(v)
    (directory / "broker_timeseries").mkdir(parents=True)
    pq.write_table(pa.table(rows), directory / "broker_timeseries" / "part-0.parquet")
    (directory / "charts").mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
    (directory / "charts" / "imbalance.png").write_bytes(png)
    means = {b: sum(v) / len(v) for b, v in brokers.items()}
    mean = sum(means.values()) / len(means)
    summary = {
        "version": 1, "kind": "balance-analysis", "window_start": str(start),
        "window_end": str(rows["time"][-1]), "sample_times": len(set(rows["time"])),
        "partitions": 10, "estimator": "mean",
        "imbalance": {
            "network_in": {"max_over_mean": max(means.values()) / mean, "threshold": 1.1,
                           "balanced": False, "brokers_over": [max(means, key=means.get)]},
            "replicas": {"max_over_mean": 1.02, "threshold": 1.1, "balanced": True, "brokers_over": []},
        },
        "brokers": [{"broker": b, "network_in": m, "network_out": m / 2, "disk": 1000 * b}
                    for b, m in means.items()],
        "anomalies": {"dead_brokers": [], "under_replicated_partitions": 0,
                      "hot_partitions": ["orders-3"], "hot_partition_count": 1},
        "charts": ["/somewhere/on/the/spark/host/charts/imbalance.png"],
    }
    (directory / "summary.json").write_text(json.dumps(summary))
    return summary, png


def test_analysis_panel_draws_imbalance_broker_loads_and_the_window(artifacts):
    root, *_ = artifacts
    brokers = {1: [10.0, 30.0, 20.0], 2: [5.0, 5.0, 5.0], 3: [1.0, 2.0, 90.0]}
    summary, png = analysis_output(root / "kafka_rebalance" / "analysis-1", brokers)
    c = client(root)
    page = c.get(f"{URL_PREFIX}/").text
    ratio = re.search(r"data-resource='network_in' data-ratio='([\d.]+)'", page)
    assert ratio and float(ratio.group(1)) == pytest.approx(
        summary["imbalance"]["network_in"]["max_over_mean"], abs=1e-3)
    assert re.search(r"data-resource='network_in'[^>]*fill='#dc2626'", page)  # out of balance: red
    assert re.search(r"data-resource='replicas'[^>]*fill='#16a34a'", page)
    assert "data-testid='broker-load-chart'" in page and "data-testid='window-chart'" in page
    # The window chart: max over brokers per sample is 10/30/90, and broker 3 is the busiest.
    window = re.search(r"<svg data-testid='window-chart'.*?</svg>", page, re.S).group(0)
    assert "broker 3 (busiest)" in window and window.count("<polyline") == 4
    assert "orders-3" in page  # anomalies as figures, not a JSON dump
    served = c.get(f"{URL_PREFIX}/analysis/charts/imbalance.png")
    assert served.status_code == 200 and served.content == png
    assert c.get(f"{URL_PREFIX}/analysis/charts/summary.json").status_code == 404
    assert c.get(f"{URL_PREFIX}/analysis/charts/..%2Fsummary.json").status_code == 404


def test_an_execution_recorded_without_sizes_shows_the_snapshots_bytes(artifacts):
    import json

    root, model, plan, _ = artifacts
    assert run_execution(root, model, plan).status == "completed"
    path = root / "state" / DAG / KEY / "execution.json"
    state = json.loads(path.read_text())
    for task in state["tasks"]:  # what an execution through ZooKeeper alone records
        task["size_bytes"] = 0
    path.write_text(json.dumps(state))
    p = client(root).get(f"{URL_PREFIX}/api/runs/{DAG}/{KEY}/progress").json()["progress"]
    want = sum(model.partitions[tp].size_bytes * len(set(t) - set(model.partitions[tp].replicas))
               for tp, t in plan.replicas.items())
    assert want > 0 and p["bytes_total"] == p["bytes_done"] == want
