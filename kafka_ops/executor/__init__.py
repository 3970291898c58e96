"""Executes reassignment plans: batched, throttled, verified, cancellable and resumable.

The public surface: ``Executor`` + ``ExecutionOptions`` + ``ExecutionLimits`` to run a plan,
``StateStore`` for the persisted state, ``verify_plan`` for Kafka's verify.
"""

from kafka_ops.executor.executor import ExecutionOptions, ExecutionReport, Executor
from kafka_ops.executor.scheduler import ExecutionLimits
from kafka_ops.executor.state import ExecutionState, StateStore
from kafka_ops.executor.verify import ExecutionProgress, verify_plan

__all__ = [
    "ExecutionLimits",
    "ExecutionOptions",
    "ExecutionProgress",
    "ExecutionReport",
    "ExecutionState",
    "Executor",
    "StateStore",
    "verify_plan",
]
