#!/usr/bin/env bash
# The main job on the embedded default: the bundled example cluster (9 brokers on 3 racks,
# 20 topics, kafka_ops/examples/) and its three resource pools. Sets up first (scripts/setup.sh
# core), then: validate the pools, show them, place a new topic inside its pool, plan the
# migration of the payments topics into their pool, show the plan's diff and summary, and write
# the plan and its rollback (Kafka's reassignment JSON) to .artifacts/.
# Usage: scripts/demo.sh [--no-setup]     (KAFKA_OPS_ARTIFACTS=DIR writes elsewhere)
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

printf '\nPlan: %s  Rollback: %s\n' "$out/payments-plan.json" "$out/payments-rollback.json"
printf 'Run it with Kafka'"'"'s own tool: kafka-reassign-partitions --execute --reassignment-json-file %s\n' \
  "$out/payments-plan.json"
