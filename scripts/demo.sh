#!/usr/bin/env bash
# The main job on the embedded default: the scheduled rebalance DAG, end to end, in a real Airflow.
# Sets up first (scripts/setup.sh airflow: Java, ZooKeeper, Prometheus, Airflow, Spark), then
# starts ZooKeeper + the emulator with the unbalanced example cluster + per-broker /metrics +
# Prometheus (two hours of backfilled history) + Airflow (api-server, scheduler, dag-processor,
# triggerer; SQLite), unpauses `kafka_rebalance` (its due daily run starts), prints what on-call
# sees at the approval and answers it through Airflow's REST API (what the UI's Approve button
# does), and prints the report, the before/after balance and where the chart and the UI are.
# Usage: scripts/demo.sh [--no-setup] [--keep-running] [--reject]
#   --keep-running  leave the stack up afterwards to open the UI (Ctrl-C stops it)
#   KAFKA_OPS_ARTIFACTS=DIR writes plans, charts, snapshots and reports there (default .artifacts)
# The command-line walk-through without Airflow is scripts/demo_cli.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
setup=1
for arg in "$@"; do
  case "$arg" in
    --no-setup) setup=0 ;;
    --keep-running|--reject) args+=("$arg") ;;
    *) echo "demo: unknown option $arg (--no-setup, --keep-running, --reject)" >&2; exit 2 ;;
  esac
done
[ "$setup" = 0 ] || bash scripts/setup.sh airflow
exec .venv/bin/python scripts/demo_rebalance.py --artifacts "${KAFKA_OPS_ARTIFACTS:-.artifacts}" "${args[@]}"
