"""The README's main-job command, end to end: `bash scripts/demo.sh --no-setup`.

It starts its own embedded default (ZooKeeper, the emulated unbalanced example, /metrics, a real
Prometheus) and its own real Airflow, lets the scheduler start `kafka_rebalance`, answers the
approval over the REST API and prints the report. The balance asserted is the one the script
reads from the emulator's own record, before and after.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
SPREAD = re.compile(r"^(before|after):\s+replicas per broker (\d+)\.\.(\d+) \(max/mean ([\d.]+)\)$",
                    re.MULTILINE)


def test_main_job_runs_the_scheduled_rebalance_to_the_end(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    proc = subprocess.Popen(["bash", "scripts/demo.sh", "--no-setup"], cwd=REPO,
                            env={**os.environ, "KAFKA_OPS_ARTIFACTS": str(artifacts)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=2200)
    finally:
        if proc.poll() is None:  # never leave the demo's Airflow or ZooKeeper behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-6000:]

    assert re.search(r"^run scheduled__\S+: success$", out, re.MULTILINE), out[-6000:]
    # On-call saw the approval before it was answered.
    assert "What on-call sees" in out and "Digest:" in out and "On-call clicks Approve" in out
    spreads = {m[1]: (int(m[2]), int(m[3]), float(m[4])) for m in SPREAD.finditer(out)}
    low, high, ratio = spreads["before"]
    assert high - low >= 10 and ratio > 1.5, spreads  # the example starts unbalanced
    low, high, ratio = spreads["after"]
    assert high - low <= 1 and ratio <= 1.10, spreads
    # The report printed, throttles gone, and the before/after chart where it says.
    assert "kafka-ops rebalance on zookeeper_default: completed" in out
    assert "throttles: removed" in out
    chart = re.search(r"^chart: (\S+\.png)$", out, re.MULTILINE)
    assert chart and Path(chart[1]).is_file() and Path(chart[1]).stat().st_size > 1000
