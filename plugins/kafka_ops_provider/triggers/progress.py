"""Waiting for replication on the triggerer, not on a worker.

``ExecutionProgressTrigger`` asks the workflow API, every ``poll_interval`` seconds, whether the
execution recorded in the state store needs its next step (a move in flight finished or was
cancelled, a broker of the plan died, a cancel was requested) — a read of the partitions in
flight only, never the whole cluster — and fires then (never sooner than ``MIN_WAIT`` after
deferring), or after ``max_wait`` seconds so stall and grace-period checks still run. The
execute task resumes on a worker, takes that step
(starts the next moves, adjusts throttles) and defers again: a worker slot is taken for seconds
per step, never for the hours replication takes.

Its kwargs name connections and the store, never secrets: they are stored in Airflow's
database, and the hooks read the credentials on the triggerer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

#: Never wake the task sooner than this after it deferred. Waking it sooner races Airflow
#: itself: the scheduler must first process the executor's report that the deferring process
#: ended, or it fails the resumed try ("finished with state success, but the task instance's
#: state attribute is queued"; seen here under load with the LocalExecutor, ~5 s late).
MIN_WAIT = 15.0


class ExecutionProgressTrigger(BaseTrigger):
    def __init__(self, kafka_conn_id: str, zookeeper_conn_id: str | None, state_conn_id: str,
                 state_key: str, poll_interval: float = 5.0, max_wait: float = 60.0) -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self.zookeeper_conn_id = zookeeper_conn_id
        self.state_conn_id = state_conn_id
        self.state_key = state_key
        self.poll_interval = poll_interval
        self.max_wait = max_wait

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "kafka_conn_id": self.kafka_conn_id, "zookeeper_conn_id": self.zookeeper_conn_id,
            "state_conn_id": self.state_conn_id, "state_key": self.state_key,
            "poll_interval": self.poll_interval, "max_wait": self.max_wait,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        deadline = started + self.max_wait
        backend = None
        try:
            backend = await asyncio.to_thread(self._connect)
            while True:
                poll = await asyncio.to_thread(self._poll, backend)
                now = time.monotonic()
                if (poll["step_due"] and now - started >= MIN_WAIT) or now >= deadline:
                    yield TriggerEvent(poll)
                    return
                await asyncio.sleep(self.poll_interval)
        except Exception as e:  # the operator decides; the store still holds the state
            yield TriggerEvent({"step_due": True, "error": f"{type(e).__name__}: {e}"})
        finally:
            if backend is not None:
                await asyncio.to_thread(backend.close)

    def _connect(self) -> Any:
        from kafka_ops_provider.hooks.cluster import KafkaClusterHook

        return KafkaClusterHook(self.kafka_conn_id, self.zookeeper_conn_id).get_conn()

    def _poll(self, backend: Any) -> dict[str, Any]:
        """Step due when a move in flight is no longer reassigning in Kafka (it finished or was
        reverted), when nothing is in flight (the next moves can start), or on a cancel
        request. Reads the store and Kafka's list of ongoing reassignments only."""
        from kafka_ops import workflow
        from kafka_ops_provider.hooks.state import ExecutionStateHook

        store = ExecutionStateHook(self.state_conn_id).store(self.state_key)
        state = store.load()
        if state is None:
            return {"step_due": True, "reason": "no execution recorded"}
        in_flight = set(workflow.state_dict(state)["in_flight"])
        ongoing = {str(tp) for tp in backend.list_reassignments()}
        ended = sorted(in_flight - ongoing)
        status = workflow.execution_progress(store)
        p = status.progress
        reason = ("cancel requested" if store.cancel_requested()
                  else f"{len(ended)} moves ended (e.g. {ended[0]})" if ended
                  else "nothing in flight" if not in_flight else "")
        self.log.info("execution %s: %s, %s/%s done, %s in flight%s", self.state_key,
                      status.status, p.get("completed"), p.get("total"), len(in_flight),
                      f"; step due: {reason}" if reason else "")
        return {"step_due": bool(reason), "reason": reason, "status": status.status,
                "progress": p}
