"""Which pending moves may start now: a pure function of what is in flight and the limits.

The executor calls ``select_moves`` on every poll. With a backend that accepts reassignments
while others run (the Admin API), a finished move frees its slots at once and the next one
starts (pipelining: no waiting for the slowest move of a batch). In ZooKeeper mode it is
called only when nothing is in flight, which turns the same rule into batches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_ops.errors import ValidationError
from kafka_ops.executor.tasks import ExecutionTask
from kafka_ops.throttle import throttle_entry_fits


@dataclass(frozen=True)
class ExecutionLimits:
    """Concurrency limits (defaults follow Cruise Control's executor defaults, scaled down).

    incoming/outgoing count moves per broker that add a replica to it / remove one from it;
    in_flight caps moves cluster-wide; leader_changes caps one preferred-leader election batch.
    """

    incoming_per_broker: int = 2
    outgoing_per_broker: int = 2
    in_flight: int = 100
    leader_changes: int = 200

    def __post_init__(self) -> None:
        for name in ("incoming_per_broker", "outgoing_per_broker", "in_flight", "leader_changes"):
            if getattr(self, name) < 1:
                raise ValidationError(f"limit {name.replace('_', '-')} must be at least 1")


@dataclass
class _Load:
    incoming: Counter
    outgoing: Counter
    count: int
    leader_bytes: Counter  # topic -> length of its leader throttle value
    follower_bytes: Counter


def _entries(task: ExecutionTask, brokers: Iterable[int]) -> list[str]:
    return [f"{task.tp.partition}:{b}" for b in brokers]


def _load(in_flight: Iterable[ExecutionTask]) -> _Load:
    load = _Load(Counter(), Counter(), 0, Counter(), Counter())
    for task in in_flight:
        _add(load, task)
    return load


def _add(load: _Load, task: ExecutionTask) -> None:
    load.incoming.update(task.incoming)
    load.outgoing.update(task.outgoing)
    load.count += 1
    load.leader_bytes[task.tp.topic] += sum(len(e) + 1 for e in _entries(task, task.step_source))
    load.follower_bytes[task.tp.topic] += sum(len(e) + 1 for e in _entries(task, task.incoming))


def _fits(load: _Load, task: ExecutionTask, limits: ExecutionLimits, throttled: bool) -> bool:
    if any(load.incoming[b] >= limits.incoming_per_broker for b in task.incoming):
        return False
    if any(load.outgoing[b] >= limits.outgoing_per_broker for b in task.outgoing):
        return False
    if throttled:
        # KAFKA-17993: a topic's throttle lists must stay sendable config values. A lone move
        # always fits (no partition has thousands of replicas).
        topic = task.tp.topic
        for used, brokers in ((load.leader_bytes, task.step_source), (load.follower_bytes, task.incoming)):
            if used[topic] and not throttle_entry_fits(used[topic], _entries(task, brokers)):
                return False
    return True


def select_moves(
    pending: Iterable[ExecutionTask],
    in_flight: Iterable[ExecutionTask],
    limits: ExecutionLimits,
    throttled: bool = False,
) -> list[ExecutionTask]:
    """The pending tasks (in their given order) that can start beside ``in_flight``.

    A task that does not fit is passed over, not waited for, so one busy broker does not hold
    up moves between idle ones; order decides only among tasks competing for the same slots.
    """
    load = _load(in_flight)
    chosen: list[ExecutionTask] = []
    for task in pending:
        if load.count >= limits.in_flight:
            break
        if _fits(load, task, limits, throttled):
            _add(load, task)
            chosen.append(task)
    return chosen

