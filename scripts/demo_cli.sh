#!/usr/bin/env bash
# The command-line walk-through on the embedded default (kafka-ops pools/plan/execute/verify).
# The main job, the same work as the scheduled rebalance DAG in a real Airflow, is scripts/demo.sh.
# On the embedded default: the bundled example cluster (9 brokers on 3 racks,
# 20 topics, kafka_ops/examples/) and its three resource pools. Sets up first (scripts/setup.sh
# core), then
#  1. offline, on the snapshot: validate the pools, show them, place a new topic inside its pool,
#     plan the migration of the payments topics into their pool, show the plan's diff;
#  2. live, on the embedded default cluster (the emulator on a private ZooKeeper, reached only
#     through Kafka's interfaces): plan a rebalance inside the pools from the live state with a
#     before/after chart, execute it throttled and pipelined with a progress bar, verify it.
# Plans, rollbacks, the chart and the execution state land in .artifacts/.
# Usage: scripts/demo_cli.sh [--no-setup]     (KAFKA_OPS_ARTIFACTS=DIR writes elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--no-setup" ] || bash scripts/setup.sh core

kafka_ops=.venv/bin/kafka-ops
cluster=kafka_ops/examples/cluster.json
pools=kafka_ops/examples/pools.yaml
out=${KAFKA_OPS_ARTIFACTS:-.artifacts}
mkdir -p "$out"

step() { printf '\n== %s\n$ kafka-ops %s\n' "$1" "${*:2}"; "$kafka_ops" "${@:2}"; }

step "Validate the pools file against the cluster" \
  pools validate --cluster "$cluster" --pools "$pools"
step "Pools, their brokers and topics; 'misplaced' partitions have replicas outside their pool" \
  pools show --cluster "$cluster" --pools "$pools"
step "A new topic is created inside its pool in one step (Kafka's algorithm over the pool's brokers)" \
  pools assign --cluster "$cluster" --pools "$pools" \
  --topic payments.chargebacks --partitions 6 --replication-factor 3 --start-index 0
step "Plan the migration of the payments topics into their pool (minimal, balanced, rack-aware)" \
  pools migrate --cluster "$cluster" --pools "$pools" --pool payments \
  --output "$out/payments-plan.json" --rollback-output "$out/payments-rollback.json"
step "What the plan changes, partition by partition and broker by broker" \
  plan diff "$out/payments-plan.json" --cluster "$cluster"
step "Check the plan: Kafka's rules, the cluster, and that every replica stays in its pool" \
  plan validate "$out/payments-plan.json" --cluster "$cluster" --pools "$pools"


# -- 2. Live ---------------------------------------------------------------------------------
# The emulator runs ZooKeeper-mode Kafka on a private ZooKeeper and also serves the Kafka
# protocol; --speed 600 makes ten minutes of replication take one second.
log="$out/emulator.log"
"$kafka_ops" emulator run --embedded-zookeeper --wire --snapshot "$cluster" --speed 600 >"$log" 2>&1 &
emulator=$!
trap 'kill -TERM $emulator 2>/dev/null; wait $emulator 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do   # up to 60 s
  grep -q '^emulator ready' "$log" && break
  kill -0 $emulator 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
grep -q '^emulator ready' "$log" || { echo "emulator did not start"; cat "$log"; exit 1; }
zookeeper=$(sed -n 's/^embedded ZooKeeper: //p' "$log")
bootstrap=$(sed -n 's/^bootstrap servers: //p' "$log")
printf '\n== The embedded default cluster is up\n%s\n' "$(cat "$log")"

step "Plan a rebalance inside the pools from the live cluster (Admin API: log sizes included)" \
  plan rebalance --bootstrap-server "$bootstrap" --pools "$pools" \
  --output "$out/rebalance.json" --chart "$out/broker-load.png" --throttle 50000000
step "Execute it: throttled, at most 2 moves in and out per broker, verified, leaders re-elected" \
  execute "$out/rebalance.json" --bootstrap-server "$bootstrap" --throttle 50000000 \
  --state-dir "$out/state" --poll-interval 0.2
step "Verify through ZooKeeper, as kafka-reassign-partitions --verify would" \
  verify "$out/rebalance.json" --zookeeper "$zookeeper"

printf '\nArtifacts in %s: plans and rollbacks (Kafka'"'"'s reassignment JSON, runnable with\n' "$out"
printf 'kafka-reassign-partitions --execute), broker-load.png (before/after), state/ (execution).\n'
