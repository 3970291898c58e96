"""Executes reassignment plans: batched, throttled, verified, cancellable and resumable.

The public surface: ``Executor`` + ``ExecutionOptions`` + ``ExecutionLimits`` to run a plan
(``run()``, or ``start()`` and one ``step()`` per poll), ``StateStore`` for the persisted state
(a local directory or any fsspec URL), ``verify_plan`` for Kafka's verify.
"""

from kafka_ops.executor.executor import ExecutionOptions, ExecutionReport, Executor, options_from_dict
from kafka_ops.executor.scheduler import ExecutionLimits
from kafka_ops.executor.state import ExecutionState
from kafka_ops.executor.store import FsspecStateStore, LocalStateStore, StateStore
from kafka_ops.executor.verify import ExecutionProgress, verify_plan

__all__ = [
    "ExecutionLimits",
    "ExecutionOptions",
    "ExecutionProgress",
    "ExecutionReport",
    "ExecutionState",
    "Executor",
    "FsspecStateStore",
    "LocalStateStore",
    "StateStore",
    "options_from_dict",
    "verify_plan",
]
