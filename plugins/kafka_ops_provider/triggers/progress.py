"""Waiting for replication on the triggerer, not on a worker.

``ExecutionProgressTrigger`` asks the workflow API (``step_due``), every ``poll_interval``
seconds, whether the execution recorded in the state store needs its next step (a move in
flight ended and the next can start, a broker of the run went offline, a cancel was requested)
— a read of the partitions in flight only, never the whole cluster — and fires then, or after
``max_wait`` seconds so stall and grace-period checks still run. The execute task resumes on a
worker, takes that step (starts the next moves, adjusts throttles) and defers again: a worker
slot is taken for seconds per step, never for the hours replication takes.

Firing too soon after the deferral races Airflow itself: the scheduler must process the
executor's report that the deferring process ended before the resumed try is queued, or it
fails that try ("finished with state success, but the task instance's state attribute is
queued"; seen here under load with the LocalExecutor). So the trigger fires no sooner than
``min_wait`` seconds after the deferring task's process is gone (its pid, when the triggerer
runs on the worker's host: the embedded default), or after ``REMOTE_MIN_WAIT`` seconds when
the worker is elsewhere and its process cannot be watched.

Its kwargs name connections and the store, never secrets: they are stored in Airflow's
database, and the hooks read the credentials on the triggerer.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

#: Seconds to wait after deferring when the deferring process runs on another host.
REMOTE_MIN_WAIT = 15.0


def process_gone(pid: int | None, hostname: str | None) -> bool | None:
    """Whether the deferring task's process has ended (and been reaped by its supervisor);
    None when it cannot be told from here (another host, or no pid recorded)."""
    if not pid or hostname != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    return False


class ExecutionProgressTrigger(BaseTrigger):
    def __init__(self, kafka_conn_id: str, zookeeper_conn_id: str | None, state_conn_id: str,
                 state_key: str, poll_interval: float = 5.0, max_wait: float = 60.0,
                 min_wait: float = 3.0, task_pid: int | None = None,
                 hostname: str | None = None) -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self.zookeeper_conn_id = zookeeper_conn_id
        self.state_conn_id = state_conn_id
        self.state_key = state_key
        self.poll_interval = poll_interval
        self.max_wait = max_wait
        self.min_wait = min_wait
        self.task_pid = task_pid
        self.hostname = hostname

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "kafka_conn_id": self.kafka_conn_id, "zookeeper_conn_id": self.zookeeper_conn_id,
            "state_conn_id": self.state_conn_id, "state_key": self.state_key,
            "poll_interval": self.poll_interval, "max_wait": self.max_wait,
            "min_wait": self.min_wait, "task_pid": self.task_pid, "hostname": self.hostname,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        deadline = started + self.max_wait
        settled_at: float | None = None  # when the trigger may fire
        backend = None
        last = None
        try:
            backend = await asyncio.to_thread(self._connect)
            while True:
                now = time.monotonic()
                if settled_at is None:
                    gone = process_gone(self.task_pid, self.hostname)
                    if gone is None:
                        settled_at = started + max(self.min_wait, REMOTE_MIN_WAIT)
                    elif gone:
                        settled_at = now + self.min_wait
                poll = await asyncio.to_thread(self._poll, backend)
                if (poll["reason"], poll["progress"].get("completed")) != last:
                    last = (poll["reason"], poll["progress"].get("completed"))
                    self.log.info("execution %s: %s, %s/%s done, %s in flight%s", self.state_key,
                                  poll["status"], poll["progress"].get("completed"),
                                  poll["progress"].get("total"), poll["in_flight"],
                                  f"; step due: {poll['reason']}" if poll["reason"] else "")
                now = time.monotonic()
                if (poll["step_due"] and settled_at is not None and now >= settled_at) \
                        or now >= deadline:
                    yield TriggerEvent(poll)
                    return
                await asyncio.sleep(self.poll_interval if not poll["step_due"]
                                    else min(self.poll_interval, 0.5))
        except Exception as e:  # the operator decides; the store still holds the state
            yield TriggerEvent({"step_due": True, "error": f"{type(e).__name__}: {e}"})
        finally:
            if backend is not None:
                await asyncio.to_thread(backend.close)

    def _connect(self) -> Any:
        from kafka_ops_provider.hooks.cluster import KafkaClusterHook

        return KafkaClusterHook(self.kafka_conn_id, self.zookeeper_conn_id).get_conn()

    def _poll(self, backend: Any) -> dict[str, Any]:
        """The workflow's ``step_due`` (the store and the moves in flight only) and the
        progress the store records."""
        from kafka_ops import workflow

        from kafka_ops_provider.hooks.state import ExecutionStateHook

        store = ExecutionStateHook(self.state_conn_id).store(self.state_key)
        if store.load() is None:
            return {"step_due": True, "reason": "no execution recorded", "status": "unknown",
                    "progress": {}, "in_flight": 0}
        check = workflow.step_due(backend, store)
        status = workflow.execution_progress(store)
        return {"step_due": check.step_due, "reason": check.reason, "status": status.status,
                "progress": status.progress, "in_flight": check.in_flight}
