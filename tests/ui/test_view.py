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
