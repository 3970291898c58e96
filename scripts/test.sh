#!/usr/bin/env bash
# Sets up everything and runs the whole test suite (the README's test command; CI runs it).
# Extra arguments go to pytest, e.g. scripts/test.sh -k assignment
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
exec .venv/bin/python -m pytest "$@"
