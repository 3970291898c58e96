"""How an execution runs: throttle, limits, order, safety switches and timings.

Recorded in the execution state (``options_dict``) so that a later step, in another process,
runs with the same options (``options_from_dict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kafka_ops.errors import ValidationError
from kafka_ops.executor.scheduler import ExecutionLimits


@dataclass(frozen=True)
class ExecutionOptions:
    throttle: int | None = None  # bytes/s per broker, leader and follower; None = unthrottled
    limits: ExecutionLimits = field(default_factory=ExecutionLimits)
    strategy: tuple[str, ...] = ("default",)
    one_replica_at_a_time: bool = False
    on_drift: Literal["skip", "abort"] = "skip"
    allow_under_replicated: bool = False
    elect_leaders: bool = True
    poll_interval: float = 5.0
    stall_timeout: float = 1800.0  # no visible progress for this long: reported as stalled
    missing_grace: float = 30.0  # neither moving nor at its target for this long: failed
    drain_timeout: float = 1800.0  # after a broker died, moves still running are then cancelled
    log_dirs_throttle: int | None = None  # bytes/s per broker copying between its log dirs

    def __post_init__(self) -> None:
        if self.throttle is not None and self.throttle <= 0:
            raise ValidationError("throttle must be a positive number of bytes per second")
        if self.log_dirs_throttle is not None and self.log_dirs_throttle <= 0:
            raise ValidationError("log-dir throttle must be a positive number of bytes per second")
        if self.on_drift not in ("skip", "abort"):
            raise ValidationError(f"on-drift must be 'skip' or 'abort', not {self.on_drift!r}")
        if self.poll_interval <= 0:
            raise ValidationError("poll interval must be positive")


def options_from_dict(data: Mapping[str, Any]) -> ExecutionOptions:
    """The ExecutionOptions recorded in a state (``asdict`` form) back."""
    values = dict(data)
    values["limits"] = ExecutionLimits(**values["limits"])
    values["strategy"] = tuple(values["strategy"])
    return ExecutionOptions(**values)


def options_dict(options: ExecutionOptions) -> dict:
    data = asdict(options)
    data["strategy"] = list(options.strategy)
    return data
