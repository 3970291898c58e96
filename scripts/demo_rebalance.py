"""The main job on the embedded default: the scheduled rebalance DAG, end to end, in Airflow.

Starts the embedded default cluster (ZooKeeper, the emulator with the small unbalanced example,
per-broker /metrics, a real Prometheus with two hours of backfilled history) and a real Airflow
(api-server, scheduler, dag-processor, triggerer; SQLite) with the project's DAGs; points the
DAGs at the cluster through Airflow connections; unpauses `kafka_rebalance`, whose daily run the
scheduler starts at once (catchup off: the latest interval is due); when the
run waits at `approve`, prints what on-call sees in the UI and answers Approve through Airflow's
REST API (the same call the UI's button makes); waits for the run; prints the report, the
before/after balance and where the chart and the UI are.

Usage: python scripts/demo_rebalance.py [--keep-running] [--reject] [--artifacts DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kafka_ops.testing.airflow import TEST_TUNING, AirflowStack  # noqa: E402
from kafka_ops.testing.embedded import EmbeddedCluster, small_example  # noqa: E402

DAG = "kafka_rebalance"


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def balance(model) -> str:
    """Replicas per broker, max/mean: what 'balanced' means in this demo's one line."""
    counts = {b: 0 for b in model.brokers}
    for p in model.partitions.values():
        for b in p.replicas:
            counts[b] += 1
    mean = sum(counts.values()) / len(counts)
    return (f"replicas per broker {min(counts.values())}..{max(counts.values())} "
            f"(max/mean {max(counts.values()) / mean:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-running", action="store_true",
                        help="keep the stack up afterwards (Ctrl-C stops it)")
    parser.add_argument("--reject", action="store_true", help="answer Reject instead")
    parser.add_argument("--artifacts", default=str(REPO / ".artifacts"),
                        help="where plans, charts, snapshots and reports go")
    args = parser.parse_args()
    started = time.monotonic()
    artifacts = Path(args.artifacts).resolve()
    artifacts.mkdir(parents=True, exist_ok=True)

    say("Starting the embedded default: ZooKeeper, the emulated cluster, /metrics, Prometheus")
    # The example cluster cut down to 6 of its topics (37 partitions, sizes / 20): as
    # unbalanced, and its rebalance runs in a minute or two instead of many minutes.
    cluster = EmbeddedCluster(small_example())
    cluster.start()
    stack = None
    try:
        print(f"ZooKeeper {cluster.connect}; Prometheus {cluster.prometheus.url}")
        before = cluster.emulator.cluster.to_model()
        print(f"before: {balance(before)}")

        say("Starting Airflow (api-server, scheduler, dag-processor, triggerer; SQLite)")
        # A fresh Airflow and execution state each time: a database kept from an earlier demo
        # already holds today's scheduled run, so the scheduler would not start it again.
        home = artifacts / "airflow-home"
        for stale in (home, artifacts / "state"):
            shutil.rmtree(stale, ignore_errors=True)
        home.mkdir()
        stack = AirflowStack(home=home, env={
            # Quick turnaround: the DAG files do not change while the demo runs.
            **TEST_TUNING,
            "AIRFLOW_VAR_KAFKA_OPS_ARTIFACTS": str(artifacts),
            # The daily rebalance is due at once (its latest interval); the hourly snapshot
            # DAG stays off so that only the rebalance run writes the snapshot dataset.
            "AIRFLOW__KAFKA_OPS__SNAPSHOT_SCHEDULE": "none",
            # The scheduled run takes the defaults: 16 moves in and out per broker at a time
            # (the cluster is small; the product's default is 2), so the plan runs in one or
            # two ZooKeeper-mode batches.
            "AIRFLOW__KAFKA_OPS__CONCURRENCY": "16",
            # 200 MB/s per broker: 12.5 MB/s a move, far above any partition's ingest (below
            # it a move never catches up, as in Kafka: the approval digest warns of it).
            "AIRFLOW__KAFKA_OPS__THROTTLE": "200000000",
            "AIRFLOW_CONN_ZOOKEEPER_DEFAULT": json.dumps({
                "conn_type": "generic", "host": cluster.zookeeper_host,
                "port": cluster.zookeeper_port, "extra": {"chroot": cluster.chroot}}),
            "AIRFLOW_CONN_PROMETHEUS_DEFAULT": json.dumps({
                "conn_type": "http", "host": "127.0.0.1",
                "port": int(cluster.prometheus.url.rsplit(":", 1)[1]), "schema": "http"}),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
            "AIRFLOW_CONN_KAFKA_OPS_STATE": json.dumps({
                "conn_type": "generic", "extra": {"url": (artifacts / "state").as_uri()}}),
        })
        stack.start()
        stack.wait_dags([DAG])
        print(f"Airflow UI: {stack.url}  (user admin, password {stack.password})")

        say(f"Unpaused {DAG}: the scheduler starts its due daily run")
        run_id = scheduled_run(stack)
        print(f"run {run_id}: snapshot -> analyse (Spark) -> needs_rebalance -> plan -> approve")
        state = wait_for_gate(stack, run_id)
        if state != "awaiting_input":
            print(f"the run did not reach the approval ({state}): "
                  f"{stack.task_states(DAG, run_id)}")
            return finish(stack, cluster, run_id, before, started, args, artifacts)

        request = stack.hitl(DAG, run_id, "approve")
        say("What on-call sees (Airflow UI: Browse -> Required Actions, or the run's 'approve' task)")
        print(f"Subject: {request.get('subject')}\n")
        print(request.get("body"))
        print(f"\nOptions: {request.get('options')}; assigned to: "
              f"{request.get('assigned_users') or 'any user allowed to answer'}")
        choice = "Reject" if args.reject else "Approve"
        say(f"On-call clicks {choice}; from the command line that is:")
        print(f"curl -X PATCH -H 'Authorization: Bearer $TOKEN' -H 'Content-Type: application/json' "
              f"{stack.url}/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances/approve/-1/hitlDetails"
              f" -d '{{\"chosen_options\": [\"{choice}\"]}}'")
        stack.answer(DAG, run_id, "approve", choice)
        return finish(stack, cluster, run_id, before, started, args, artifacts)
    finally:
        if not args.keep_running:
            if stack is not None:
                stack.stop()
            cluster.stop()


def scheduled_run(stack: AirflowStack) -> str:
    """The run the scheduler created for the latest interval (triggered by hand if none)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        runs = stack.api("GET", f"/dags/{DAG}/dagRuns?limit=5")["dag_runs"]
        if runs:
            return runs[0]["dag_run_id"]
        time.sleep(2)
    print("no scheduled run appeared within 90 s: triggering one")
    return stack.trigger(DAG)


def wait_for_gate(stack: AirflowStack, run_id: str) -> str:
    last = None
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        states = stack.task_states(DAG, run_id)
        shown = {k: v for k, v in states.items() if v}
        if shown != last:
            print("  " + ", ".join(f"{k}={v}" for k, v in shown.items()), flush=True)
            last = shown
        if states.get("approve") == "awaiting_input":
            return "awaiting_input"
        if stack.run_state(DAG, run_id) in ("success", "failed"):
            return stack.run_state(DAG, run_id)
        time.sleep(2)
    return "timeout"


def finish(stack: AirflowStack, cluster: EmbeddedCluster, run_id: str, before, started: float,
           args: argparse.Namespace, artifacts: Path) -> int:
    say("Waiting for the run: execute (deferred to the triggerer) -> verify -> elect_leaders -> "
        "clear_throttles -> report")
    last = None
    deadline = time.monotonic() + 1800  # the small example's rebalance takes a minute or two
    while (state := stack.run_state(DAG, run_id)) not in ("success", "failed"):
        if time.monotonic() > deadline:
            state = "timed out (30 min)"
            break
        states = {k: v for k, v in stack.task_states(DAG, run_id).items() if v}
        if states != last:
            print("  " + ", ".join(f"{k}={v}" for k, v in states.items()), flush=True)
            last = states
        time.sleep(2)
    print(f"run {run_id}: {state}")
    after = cluster.emulator.cluster.to_model()
    say("Balance")
    print(f"before: {balance(before)}\nafter:  {balance(after)}")
    report = next(artifacts.glob(f"{DAG}/*/report.txt"), None)
    if report is not None:
        say(f"Report ({report})")
        print(report.read_text())
    charts = sorted(str(p) for p in artifacts.glob(f"{DAG}/**/*.png"))
    say("Where things are")
    print(f"charts: {', '.join(charts) or 'none'}\nartifacts: {artifacts}\n"
          f"Airflow UI: {stack.url}/dags/{DAG}  (admin / {stack.password})\n"
          f"wall time: {time.monotonic() - started:.0f} s")
    if args.keep_running:
        print("\nThe stack keeps running; Ctrl-C stops it.", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
        stack.stop()
        cluster.stop()
    return 0 if state == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
