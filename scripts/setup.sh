#!/usr/bin/env bash
# Sets up what the project needs on a Debian machine, idempotently:
#   system packages: Java 17, ZooKeeper (Debian's package, used by the emulator and tests), kcat,
#   Prometheus, Chromium and its driver (the UI's browser test);
#   a virtualenv in .venv with kafka-ops installed editable.
# Usage: scripts/setup.sh [core|airflow|all]
#   core: the library and CLI (scripts/demo_cli.sh); airflow: + Airflow and Spark (scripts/demo.sh);
#   all: + the test tools (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-all}

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)  # metrics: Prometheus + promtool (backfill)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # ui: the browser test (Selenium, headless)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
case "$profile" in
  core) extras="" ;;
  airflow) extras="[airflow]" ;;
  all) extras="[airflow,test]" ;;
  *) echo "setup: unknown profile '$profile' (core|airflow|all)" >&2; exit 2 ;;
esac
echo "setup: installing kafka-ops${extras} into .venv"
.venv/bin/python -m pip install -q -e ".${extras}"
