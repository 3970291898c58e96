#!/usr/bin/env bash
# Sets up everything and runs the whole test suite (the README's test command; CI runs it).
# Extra arguments go to pytest, e.g. scripts/test.sh -k assignment
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
# Architecture and lint before the tests; any violation fails the run (contracts, rules and
# the modules still exempted are in pyproject.toml).
echo "test: import contracts (lint-imports)"
.venv/bin/lint-imports --no-cache
echo "test: ruff"
.venv/bin/ruff check kafka_ops tests benchmarks dags plugins spark_jobs scripts
echo "test: mypy"
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
