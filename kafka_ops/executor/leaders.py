"""Preferred leader election after the moves, in batches, and the check that it worked.

A reassignment only moves leadership when the old leader leaves the replica set; a plan that
reorders replicas or moves the preferred leader needs an election to put leaders where the plan
wants them. Elections are sent in batches of at most ``batch_size`` partitions so that a large
plan does not move thousands of leaders (and their clients) at once.

The check after the elections waits (bounded) for the leaders to show: an election is acknowledged
before every reader sees it (Kafka's brokers learn leaders from the controller asynchronously; a
ZooKeeper-mode controller writes the state znodes one by one). Reading once reported "927 not led
by their preferred replica" for partitions whose state showed 0 seconds later.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.model import ClusterModel, TopicPartition


@dataclass(frozen=True)
class LeaderReport:
    elected: list[TopicPartition]  # elections sent
    errors: dict[TopicPartition, str]  # Kafka's error per partition that could not be elected
    misplaced: dict[TopicPartition, tuple[int, int]]  # leader not where the plan wants: (want, is)

    @property
    def ok(self) -> bool:
        return not self.misplaced


def calculate_leader_elections(
    cluster: ClusterModel, targets: Mapping[TopicPartition, tuple[int, ...]]
) -> list[TopicPartition]:
    """Partitions whose leader is not their target's first replica (the preferred leader)."""
    return [
        tp for tp, target in targets.items()
        if tp in cluster.partitions and cluster.partitions[tp].leader != target[0]
    ]


def calculate_misplaced_leaders(
    cluster: ClusterModel, targets: Mapping[TopicPartition, tuple[int, ...]]
) -> dict[TopicPartition, tuple[int, int]]:
    return {
        tp: (target[0], cluster.partitions[tp].leader)
        for tp, target in targets.items()
        if tp in cluster.partitions and cluster.partitions[tp].leader != target[0]
    }


def batches(items: list[TopicPartition], size: int) -> Iterable[list[TopicPartition]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def elect_preferred_leaders(
    backend: ClusterBackend,
    targets: Mapping[TopicPartition, tuple[int, ...]],
    batch_size: int,
    settle_timeout: float = 30.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> LeaderReport:
    """Elect the preferred leader of every partition not led by it, batch by batch, then check,
    waiting up to ``settle_timeout`` seconds for elections that succeeded to show."""
    to_elect = calculate_leader_elections(backend.describe_cluster(), targets)
    errors: dict[TopicPartition, str] = {}
    for batch in batches(to_elect, batch_size):
        for tp, error in backend.elect_preferred_leaders(batch).items():
            if error is not None and error != "ELECTION_NOT_NEEDED":
                errors[tp] = error
    misplaced = wait_for_leaders(backend, targets, set(errors), settle_timeout, clock, sleep)
    return LeaderReport(to_elect, errors, misplaced)


def wait_for_leaders(
    backend: ClusterBackend,
    targets: Mapping[TopicPartition, tuple[int, ...]],
    failed: set[TopicPartition],
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[TopicPartition, tuple[int, int]]:
    """Misplaced leaders once every partition not in ``failed`` is led by its preferred
    replica, or when ``timeout`` seconds have passed (then whatever is still misplaced)."""
    deadline = clock() + timeout
    while True:
        misplaced = calculate_misplaced_leaders(backend.describe_cluster(), targets)
        if set(misplaced) <= failed or clock() >= deadline:
            return misplaced
        sleep(min(0.5, max(0.0, deadline - clock())))
