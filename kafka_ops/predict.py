"""The predicted timeline of a plan, before anyone approves it.

The project already has an exact model of replication under throttles (``EmulatedCluster``), and
the executor is a step function that runs on any clock. So a prediction is not a formula: it is
the real ``Executor`` (its ordering, per-broker limits, pipelining or batches, throttles set and
removed per move) run against the emulator's core seeded with the snapshot (broker capacities,
partition sizes, measured produce traffic) in-process, on a manual clock that jumps from poll to
poll. What comes out is what on-call wants to see at the approval step: the expected duration,
moves done / in flight / pending over time, and the peak replication traffic per broker.

It sits beside the library, not in it: it is the one module that joins the emulator and the
executor, so neither the library (which never imports the emulator) nor the emulator (which
uses only the model and Kafka's rules) depends on the other through it. The Airflow plugin and
the benchmarks call it. Run time: proportional to polls x moves in flight, not to
cluster size (each poll reads only the partitions in flight).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.errors import ValidationError
from kafka_ops.executor import ExecutionOptions, Executor
from kafka_ops.executor.verify import ExecutionProgress
from kafka_ops.model import ClusterModel
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
        )

    def fraction_done_at(self, t: float) -> float:
        """Share of the plan's bytes predicted done at ``t`` (for predicted-vs-actual charts)."""
        done = 0
        for s in self.samples:
            if s.t > t:
                break
            done = s.bytes_done
        return done / self.bytes_total if self.bytes_total else 1.0


def _steady(model: ClusterModel) -> ClusterModel:
    """Replicas the snapshot saw out of sync are taken as in sync: the prediction is about the
    plan, and the executor refuses to start on an under-replicated cluster anyway."""
    return ClusterModel(model.brokers.values(),
                        [replace(p, isr=p.replicas) if p.leader in p.replicas else p for p in model],
                        topic_configs=model.topic_configs)


def predict(model: ClusterModel, plan: ReassignmentPlan, options: ExecutionOptions, *,
            incremental: bool = True, horizon: float = DEFAULT_HORIZON) -> Prediction:
    """Simulate ``plan`` on ``model`` with the executor's own scheduling and ``options``.

    ``incremental``: the Admin API (a finished move frees its slot at once) or ZooKeeper mode
    (one batch at a time), as the execution will run. Leader elections are not simulated
    (instant on the timescale of copying data)."""
    plan.validate_against(model)
    started_wall = time.perf_counter()
    clock = ManualClock()
    cluster = EmulatedCluster(_steady(model), mode="kraft" if incremental else "zk", clock=clock,
                              record_events=False)
    backend = InProcessBackend(cluster, incremental=incremental)
    options = replace(options, elect_leaders=False)
    samples: list[Sample] = []
    peak_in: dict[int, float] = defaultdict(float)
    peak_out: dict[int, float] = defaultdict(float)

    def record(progress: ExecutionProgress) -> None:
        samples.append(Sample(clock.now(), progress.completed, progress.in_flight,
                              progress.pending, progress.weight_done))

    def sample_rates() -> None:
        """Rates in force from now until the next poll (they are piecewise constant)."""
        with cluster.lock:
            cluster.tick()  # settles the moves just submitted: their fetch rates
            received: dict[int, float] = defaultdict(float)
            sent: dict[int, float] = defaultdict(float)
            for (tp, dest), rate in cluster._rates.items():
                if math.isinf(rate):
                    continue
                received[dest] += rate
                sent[cluster.partitions[tp].leader] += rate
        for b, r in received.items():
            peak_in[b] = max(peak_in[b], r)
        for b, r in sent.items():
            peak_out[b] = max(peak_out[b], r)

    def sleep(seconds: float) -> None:
        sample_rates()
        if clock.now() + seconds > horizon:
            raise ValidationError(f"the plan would still be running after {horizon / 3600:.0f} h "
                                  "of emulated time: check the throttle and the limits")
        clock.advance(seconds)

    executor = Executor(backend, plan, options=options, clock=clock.now, sleep=sleep,
                        on_progress=record)
    report = executor.run()
    bytes_total = executor.progress().weight_total
    if report.status == "completed":
        samples.append(Sample(report.elapsed, len(report.completed), 0, 0, bytes_total))
    return Prediction(
        status=report.status, duration=report.elapsed, moves=len(plan), bytes_total=bytes_total,
        samples=_thin(samples), peak_in=dict(peak_in), peak_out=dict(peak_out),
        options={"throttle": options.throttle, "poll_interval": options.poll_interval,
                 "incoming_per_broker": options.limits.incoming_per_broker,
                 "outgoing_per_broker": options.limits.outgoing_per_broker,
                 "in_flight": options.limits.in_flight, "incremental": incremental},
        wall_seconds=time.perf_counter() - started_wall,
    )


def _thin(samples: list[Sample], keep: int = 400) -> list[Sample]:
    """At most ``keep`` samples, evenly spread, first and last kept (a chart, not a log)."""
    if len(samples) <= keep:
        return samples
    step = (len(samples) - 1) / (keep - 1)
    return [samples[round(i * step)] for i in range(keep)]
