"""The order in which pending moves start (Cruise Control's replica movement strategies).

A strategy is a sort key over tasks; ``chain`` combines several, earlier ones deciding first,
and always ends with the base order (topic, partition) so the order is total and the same on
every run — a resumed execution picks moves in the order the first run would have. Keys
compare Python ints, so there is no ``(int) (a - b)`` overflow as in Cruise Control's Java.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kafka_ops.errors import ValidationError
from kafka_ops.executor.tasks import ExecutionTask

SortKey = Callable[[ExecutionTask], tuple]


def base_order(task: ExecutionTask) -> tuple:
    """Kafka's order: topic, then partition (the plan file's order)."""
    return (task.tp.topic, task.tp.partition)


def small_first(task: ExecutionTask) -> tuple:
    """Fewest bytes to copy first: many moves finish early, freeing slots and showing progress."""
    return (task.moved_bytes,)


def large_first(task: ExecutionTask) -> tuple:
    """Most bytes first: the long moves do not end up alone at the tail of the execution."""
    return (-task.moved_bytes,)


def under_replicated_first(task: ExecutionTask) -> tuple:
    """Under-replicated partitions first: they are the ones at risk of going offline."""
    return (0 if task.under_replicated else 1,)


STRATEGIES: dict[str, SortKey] = {
    "default": base_order,
    "small-first": small_first,
    "large-first": large_first,
    "under-replicated-first": under_replicated_first,
}


def chain(names: Sequence[str]) -> SortKey:
    """One sort key applying the named strategies in order, then the base order."""
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ValidationError(
            f"unknown ordering strategy {unknown[0]!r} (choose from {', '.join(STRATEGIES)})"
        )
    keys = [STRATEGIES[n] for n in names if n != "default"] + [base_order]

    def key(task: ExecutionTask) -> tuple:
        return tuple(part for k in keys for part in k(task))

    return key


def order_tasks(tasks: Iterable[ExecutionTask], names: Sequence[str] = ("default",)) -> list[ExecutionTask]:
    return sorted(tasks, key=chain(names))
