"""The executor's leader report waits for elections to show (issue 17: "927 not led by their
preferred replica" while the state znodes showed 0 seconds later).

The backend here is a stand-in for the one thing no real component here reproduces on demand: a
reader that lags the controller (a broker's metadata cache; a state znode not yet written). It
answers elections like Kafka and serves the cluster as it was for its first ``lag`` reads.
Time is a fake clock, so the bounded wait is checked without waiting.
"""

from __future__ import annotations

from dataclasses import replace

from kafka_ops.executor.leaders import elect_preferred_leaders
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition


class LaggingBackend:
    def __init__(self, model: ClusterModel, lag: int, unavailable: set[int] = frozenset()):
        self.model, self.lag, self.unavailable = model, lag, unavailable
        self.reads = 0

    def describe_cluster(self) -> ClusterModel:
        self.reads += 1
        return self.model if self.reads <= self.lag or self.reads == 1 else self.elected

    def elect_preferred_leaders(self, partitions):
        results = {}
        for tp in partitions:
            preferred = self.model.partitions[tp].replicas[0]
            results[tp] = ("PREFERRED_LEADER_NOT_AVAILABLE" if preferred in self.unavailable
                           else None)
        return results

    @property
    def elected(self) -> ClusterModel:
        parts = [replace(p, leader=p.replicas[0]) if p.replicas[0] not in self.unavailable
                 else p for p in self.model.partitions.values()]
        return ClusterModel(self.model.brokers.values(), parts)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def model(partitions: int = 927) -> ClusterModel:
    parts = [Partition("t", n, (n % 3 + 1, (n + 1) % 3 + 1), leader=(n + 1) % 3 + 1,
                       isr=(n % 3 + 1, (n + 1) % 3 + 1)) for n in range(partitions)]
    return ClusterModel([Broker(i) for i in (1, 2, 3)], parts)


def targets(m: ClusterModel) -> dict[TopicPartition, tuple[int, ...]]:
    return {tp: p.replicas for tp, p in m.partitions.items()}


def test_report_waits_for_a_lagging_reader_instead_of_reporting_927_misplaced():
    m, time = model(), FakeTime()
    backend = LaggingBackend(m, lag=4)
    report = elect_preferred_leaders(backend, targets(m), 200, settle_timeout=30,
                                     clock=time.clock, sleep=time.sleep)
    assert len(report.elected) == 927 and report.errors == {}
    assert report.misplaced == {} and report.ok
    assert backend.reads == 5 and 0 < time.now < 30


def test_failed_elections_are_reported_without_waiting_for_them():
    m, time = model(), FakeTime()
    backend = LaggingBackend(m, lag=1, unavailable={3})
    report = elect_preferred_leaders(backend, targets(m), 200, settle_timeout=30,
                                     clock=time.clock, sleep=time.sleep)
    led_by_3 = {tp for tp, p in m.partitions.items() if p.replicas[0] == 3}
    assert set(report.errors) == led_by_3 and set(report.misplaced) == led_by_3
    assert time.slept == []


def test_wait_is_bounded_when_the_leaders_never_show():
    m, time = model(50), FakeTime()
    backend = LaggingBackend(m, lag=10**9)
    report = elect_preferred_leaders(backend, targets(m), 200, settle_timeout=5,
                                     clock=time.clock, sleep=time.sleep)
    assert len(report.misplaced) == 50 and not report.ok
    assert 5 <= time.now <= 5.5
