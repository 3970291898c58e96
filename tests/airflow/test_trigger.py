"""The progress trigger's guard against Airflow's fast-wake-up race, without an Airflow.

It may fire only once the deferring task's process is gone (and reaped by its supervisor):
checked here against a real child process. Its kwargs survive Airflow's serialization (they
are stored in the database and rebuild the trigger on the triggerer).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))

from kafka_ops_provider.triggers.progress import (  # noqa: E402
    ExecutionProgressTrigger,
    process_gone,
)


def test_process_gone_once_the_deferring_process_is_reaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    here = socket.gethostname()
    try:
        assert process_gone(child.pid, here) is False
        assert process_gone(child.pid, "another-host") is None, "cannot be told from here"
        assert process_gone(None, here) is None
    finally:
        child.communicate(b"")  # ends and is reaped
    assert process_gone(child.pid, here) is True


def test_trigger_kwargs_round_trip() -> None:
    trigger = ExecutionProgressTrigger("kafka_default", "zk", "kafka_ops_state", "dag/run",
                                       poll_interval=1.0, max_wait=60.0, min_wait=5.0,
                                       task_pid=123, hostname="worker-1")
    path, kwargs = trigger.serialize()
    assert path == "kafka_ops_provider.triggers.progress.ExecutionProgressTrigger"
    assert ExecutionProgressTrigger(**kwargs).serialize() == (path, kwargs)
    assert not any("password" in str(v).lower() for v in kwargs.values())
