"""Time sources for the emulator.

The emulated cluster never reads the wall clock itself: replication progress is a function of
``clock.now()``, so tests drive it with a ``ManualClock`` (time moves only when a test says so,
no sleeping) and demos or benchmarks with a ``ScaledClock`` (a 1-hour move in a few seconds).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since an arbitrary, fixed origin; never decreases."""
        ...


class ManualClock:
    """Time moves only when ``advance`` is called (tests)."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        with self._lock:
            self._now += seconds


class ScaledClock:
    """Real (monotonic) time multiplied by ``speed``: speed=3600 plays one hour per second."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self.speed = float(speed)
        self._origin = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._origin) * self.speed
