"""The DAG files import cleanly, cheaply and describe the runbook.

Parsed in a fresh interpreter the way Airflow's dag-processor does (DagBag over dags/ with the
plugins folder importable): no import errors; no heavy import at parse time (kafka_ops'
backends, planner and executor, confluent-kafka, kazoo, pyspark stay unloaded: operators import
them in ``execute``); parse time measured and printed; the task graph is the runbook's.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("confluent_kafka", "kazoo", "pyspark", "kafka_ops.backends", "kafka_ops.planner",
         "kafka_ops.executor", "kafka_ops.workflow", "matplotlib")

PARSE = r"""
import json, sys, time
t0 = time.perf_counter()
from airflow.dag_processing.dagbag import DagBag
t1 = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({
    "airflow_import_s": t1 - t0, "parse_s": t2 - t1,
    "errors": {k: str(v) for k, v in bag.import_errors.items()},
    "dags": {d.dag_id: {"tasks": {t.task_id: sorted(t.downstream_task_ids) for t in d.tasks},
                        "params": sorted(d.params.keys()),
                        "schedule": str(getattr(d.timetable, "description", ""))}
             for d in bag.dags.values()},
    "heavy": sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in HEAVY)),
}))
"""


def _parse(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins")]),
    })
    heavy = f"HEAVY = {HEAVY!r}\n"
    out = subprocess.run([sys.executable, "-c", heavy + PARSE, str(REPO / "dags")], env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dags_import_without_errors_or_heavy_work(tmp_path: Path) -> None:
    result = _parse(tmp_path)
    print(f"\nDAG parse: {result['parse_s']:.2f} s for {len(result['dags'])} DAGs "
          f"(Airflow import {result['airflow_import_s']:.2f} s; loaded machine)")
    assert result["errors"] == {}
    assert set(result["dags"]) == {"kafka_rebalance", "kafka_metrics_snapshot",
                                   "kafka_pool_migration", "kafka_broker_operation"}
    assert result["heavy"] == [], "parse time must not import these"

    rebalance = result["dags"]["kafka_rebalance"]["tasks"]
    runbook = ["snapshot", "analyse", "needs_rebalance", "plan", "predict", "approve", "execute", "verify",
               "elect_leaders", "clear_throttles", "report"]
    for upstream, downstream in itertools.pairwise(runbook):
        assert downstream in rebalance[upstream], f"{upstream} -> {downstream} missing"
    for step in ("execute", "verify", "elect_leaders", "clear_throttles"):
        assert "make_safe" in rebalance[step]
    assert "report" in rebalance["make_safe"]

    for dag_id in ("kafka_pool_migration", "kafka_broker_operation"):
        tasks = result["dags"][dag_id]["tasks"]
        assert "plan" in tasks["validate"] and "predict" in tasks["plan"]
        assert "approve" in tasks["predict"]
        assert "execute" in tasks["approve"]
    migration = result["dags"]["kafka_pool_migration"]["params"]
    assert {"pool", "topics", "topic_pattern", "throttle", "concurrency",
            "one_replica_at_a_time", "dry_run"} <= set(migration)
    assert "mode" in result["dags"]["kafka_broker_operation"]["params"]
