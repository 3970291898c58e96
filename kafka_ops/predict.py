"""The predicted timeline of a plan, before anyone approves it.

The project already has an exact model of replication under throttles (``EmulatedCluster``), and
the executor is a step function that runs on any clock. So a prediction is not a formula: it is
the real ``Executor`` (its ordering, per-broker limits, pipelining or batches, throttles set and
removed per move) run against the emulator's core seeded with the snapshot (broker capacities,
partition sizes, measured produce traffic) in-process, on a manual clock. What comes out is what
on-call wants to see at the approval step: the expected duration, moves done / in flight /
pending over time, and the peak replication traffic per broker.

Event-driven, so a 60,000-move plan predicts in seconds, not minutes:
- emulated time jumps from poll to the first poll at which something can have changed (a
  replica catching up); polls that would see nothing are skipped, not simulated (the executor
  does nothing at such a poll: no move finished, so no slot freed and no throttle to change);
- the replication model settles once per poll, not once per config change: the dozens of
  throttle changes of one poll happen at the same emulated instant, so rates are recomputed
  once, after all of them;
- only the plan's partitions are loaded (the others take no part in a reassignment: the model
  shares brokers' bandwidth among catching-up replicas only), and progress is counted from the
  moves in flight, never by walking the whole plan on every poll.

It sits beside the library, not in it: it is the one module that joins the emulator and the
executor, so neither the library (which never imports the emulator) nor the emulator (which
uses only the model and Kafka's rules) depends on the other through it. The Airflow plugin and
the benchmarks call it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import REDISTRIBUTE_INTERVAL, EmulatedCluster
from kafka_ops.errors import ValidationError
from kafka_ops.executor import ExecutionOptions, Executor
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend

DEFAULT_HORIZON = 30 * 24 * 3600.0  # a plan predicted to run longer than this is refused


@dataclass(frozen=True)
class Sample:
    """Where the execution stands at emulated time ``t`` (seconds since it started)."""

    t: float
    completed: int
    in_flight: int
    pending: int
    bytes_done: int


@dataclass
class Prediction:
    status: str  # the simulated execution's outcome: completed, paused, failed...
    duration: float  # emulated seconds from start to the end of the last move
    moves: int
    bytes_total: int
    samples: list[Sample]
    peak_in: dict[int, float]  # replication bytes/s received, per broker (its peak)
    peak_out: dict[int, float]  # replication bytes/s sent by leaders, per broker
    options: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0  # what the simulation cost
    polls: int = 0  # executor polls simulated (the others were skipped: nothing to see)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "duration": self.duration, "moves": self.moves,
            "bytes_total": self.bytes_total,
            "samples": [[s.t, s.completed, s.in_flight, s.pending, s.bytes_done]
                        for s in self.samples],
            "peak_in": {str(b): r for b, r in self.peak_in.items()},
            "peak_out": {str(b): r for b, r in self.peak_out.items()},
            "options": self.options,
            "wall_seconds": self.wall_seconds,
            "polls": self.polls,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Prediction:
        return cls(
            status=d["status"], duration=d["duration"], moves=d["moves"],
            bytes_total=d["bytes_total"], samples=[Sample(*s) for s in d["samples"]],
            peak_in={int(b): r for b, r in d["peak_in"].items()},
            peak_out={int(b): r for b, r in d["peak_out"].items()},
            options=d.get("options", {}),
            wall_seconds=d.get("wall_seconds", 0.0),
            polls=d.get("polls", 0),
        )

    def fraction_done_at(self, t: float) -> float:
        """Share of the plan's bytes predicted done at ``t`` (for predicted-vs-actual charts)."""
        done = 0
        for s in self.samples:
            if s.t > t:
                break
            done = s.bytes_done
        return done / self.bytes_total if self.bytes_total else 1.0


class _SimulatedCluster(EmulatedCluster):
    """The emulator's cluster, settled by the predictor rather than by every call.

    The emulator settles replication on every operation (a real cluster's clock runs between
    two requests). In a prediction nothing happens between the calls of one poll, so a call at
    an unchanged emulated time settles nothing; ``settle`` does it once, after the poll."""

    def tick(self) -> None:
        if self.clock.now() > self._time:
            super().tick()

    def settle(self) -> None:
        super().tick()

    def next_change(self) -> tuple[float, bool]:
        """When replication next changes (settled now): (time, whether a replica catches up
        then; otherwise only fetch rates change, a redistribution of freed bandwidth)."""
        catch_up = self._next_catchup()
        redistribute = (self._allocated_at + REDISTRIBUTE_INTERVAL if self._redistribute
                        else math.inf)
        return (catch_up, True) if catch_up <= redistribute else (redistribute, False)


class _Tracker:
    """Moves started and finished, from what the executor sends and the cluster shows: the
    samples cost O(moves in flight) per poll, not O(plan)."""

    def __init__(self, cluster: _SimulatedCluster, plan: ReassignmentPlan,
                 model: ClusterModel) -> None:
        self.cluster = cluster
        self.targets = {tp: list(r) for tp, r in plan.replicas.items()}
        self.weight: dict[TopicPartition, int] = {}
        for tp, target in plan.replicas.items():
            p = model.partitions[tp]
            new = sum(1 for b in target if b not in p.replicas)
            self.weight[tp] = p.size_bytes * new if p.size_bytes else new
        done = [tp for tp, t in self.targets.items() if model.partitions[tp].replicas == tuple(t)]
        self.completed = len(done)
        self.bytes_done = sum(self.weight[tp] for tp in done)
        self.started: set[TopicPartition] = set(done)
        self.in_flight: set[TopicPartition] = set()

    def submitted(self, tps: list[TopicPartition]) -> None:
        new = [tp for tp in tps if tp not in self.started]
        self.started.update(new)
        self.in_flight.update(new)

    def update(self) -> None:
        """Moves in flight now at their final target with nothing left to copy are done."""
        partitions = self.cluster.partitions
        for tp in [tp for tp in self.in_flight
                   if partitions[tp].replicas == self.targets[tp]
                   and not (partitions[tp].adding or partitions[tp].removing)]:
            self.in_flight.discard(tp)
            self.completed += 1
            self.bytes_done += self.weight[tp]

    def sample(self, t: float) -> Sample:
        return Sample(t, self.completed, len(self.in_flight),
                      len(self.targets) - len(self.started), self.bytes_done)


class _Backend(InProcessBackend):
    """The in-process backend, telling the tracker which moves the executor starts."""

    def __init__(self, cluster: _SimulatedCluster, incremental: bool, tracker: _Tracker) -> None:
        super().__init__(cluster, incremental=incremental)
        self.tracker = tracker

    def alter_reassignments(self, targets: Any) -> None:
        super().alter_reassignments(targets)
        self.tracker.submitted([tp for tp, r in targets.items() if r is not None])


class _QuietHere(logging.Filter):
    """The simulated executor's warnings (moves "stalled" across skipped polls, drift...) are
    not the real run's: dropped for this thread while it predicts; errors still pass."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread or record.levelno >= logging.ERROR


def _involved(model: ClusterModel, plan: ReassignmentPlan) -> ClusterModel:
    """Every broker, and only the plan's partitions, all replicas in sync: the others take no
    part in a reassignment, and replicas the snapshot saw out of sync are taken as in sync
    (the prediction is about the plan; the executor refuses to start on an under-replicated
    cluster anyway)."""
    parts = []
    for tp in plan.replicas:
        p = model.partitions[tp]
        parts.append(replace(p, isr=p.replicas) if p.leader in p.replicas else p)
    return ClusterModel(model.brokers.values(), parts, topic_configs=model.topic_configs)


def predict(model: ClusterModel, plan: ReassignmentPlan, options: ExecutionOptions, *,
            incremental: bool = True, horizon: float = DEFAULT_HORIZON) -> Prediction:
    """Simulate ``plan`` on ``model`` with the executor's own scheduling and ``options``.

    ``incremental``: the Admin API (a finished move frees its slot at once) or ZooKeeper mode
    (one batch at a time), as the execution will run. Leader elections are not simulated
    (instant on the timescale of copying data)."""
    plan.validate_against(model)
    started_wall = time.perf_counter()
    clock = ManualClock()
    cluster = _SimulatedCluster(_involved(model, plan), mode="kraft" if incremental else "zk",
                                clock=clock, record_events=False)
    tracker = _Tracker(cluster, plan, model)
    backend = _Backend(cluster, incremental, tracker)
    options = replace(options, elect_leaders=False)
    samples: list[Sample] = []
    peak_in: dict[int, float] = defaultdict(float)
    peak_out: dict[int, float] = defaultdict(float)
    polls = 0

    def settle() -> tuple[float, bool]:
        """Replication brought to now; the per-broker rates in force from now until the next
        change (they are piecewise constant) recorded; when that change comes."""
        with cluster.lock:
            cluster.settle()
            received: dict[int, float] = defaultdict(float)
            sent: dict[int, float] = defaultdict(float)
            for (tp, dest), rate in cluster._rates.items():
                if not math.isinf(rate):
                    received[dest] += rate
                    sent[cluster.partitions[tp].leader] += rate
            for b, r in received.items():
                peak_in[b] = max(peak_in[b], r)
            for b, r in sent.items():
                peak_out[b] = max(peak_out[b], r)
            return cluster.next_change()

    def sleep(seconds: float) -> None:
        """Until the executor's next poll, skipping the polls that would see nothing."""
        nonlocal polls
        polls += 1
        now = clock.now()
        tracker.update()
        samples.append(tracker.sample(now))
        target = now + seconds
        while True:
            due, catches_up = settle()
            if due <= target:
                break
            if not catches_up:  # only rates change then, after which a replica may catch
                _advance(clock, due, horizon)  # up sooner: look again from there
                continue
            if math.isinf(due) or seconds <= 0:  # nothing will ever change
                target = due
            else:  # the first poll at or after the catch-up; those before it would see nothing
                target = now + max(math.ceil((due - now) / seconds), 1) * seconds
            break
        _advance(clock, target, horizon)

    executor = Executor(backend, plan, options=options, clock=clock.now, sleep=sleep)
    quiet, executor_log = _QuietHere(), logging.getLogger(Executor.__module__)
    executor_log.addFilter(quiet)
    try:
        report = executor.run()
    finally:
        executor_log.removeFilter(quiet)
    bytes_total = sum(tracker.weight.values())
    tracker.update()
    samples.append(tracker.sample(report.elapsed))
    return Prediction(
        status=report.status, duration=report.elapsed, moves=len(plan), bytes_total=bytes_total,
        samples=_thin(samples), peak_in=dict(peak_in), peak_out=dict(peak_out),
        options={"throttle": options.throttle, "poll_interval": options.poll_interval,
                 "incoming_per_broker": options.limits.incoming_per_broker,
                 "outgoing_per_broker": options.limits.outgoing_per_broker,
                 "in_flight": options.limits.in_flight, "incremental": incremental},
        wall_seconds=time.perf_counter() - started_wall, polls=polls,
    )


def _advance(clock: ManualClock, to: float, horizon: float) -> None:
    if to > horizon:
        raise ValidationError(f"the plan would still be running after {horizon / 3600:.0f} h "
                              "of emulated time: check the throttle and the limits")
    clock.advance(max(to - clock.now(), 0.0))


def _thin(samples: list[Sample], keep: int = 400) -> list[Sample]:
    """At most ``keep`` samples, evenly spread, first and last kept (a chart, not a log)."""
    if len(samples) <= keep:
        return samples
    step = (len(samples) - 1) / (keep - 1)
    return [samples[round(i * step)] for i in range(keep)]
