"""Byte sizes and durations for people: the one formatter of reports, digests and the UI.

Two styles, each kept where readers already know it: the CLI's reports and digests use binary
units and compact durations (``1.5 GiB``, ``1h02m03s``, as Kafka's tools print sizes); the
Airflow notifications and web view use decimal units and spelled-out durations (``1.5 GB``,
``1 h 02 min``, as dashboards and chat messages do).
"""

from __future__ import annotations

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")
_DECIMAL = ("B", "KB", "MB", "GB", "TB")


def format_bytes(n: float, *, decimal: bool = False) -> str:
    """``n`` bytes with one decimal in the largest unit below 1024 (binary) or 1000 (decimal)."""
    units, base = (_DECIMAL, 1000) if decimal else (_BINARY, 1024)
    for unit in units:
        if abs(n) < base or unit == units[-1]:
            break
        n /= base
    if unit == "B":
        return f"{int(n)} B" if decimal else f"{n:.0f} B"
    return f"{n:.1f} {unit}"


def format_duration(seconds: float | None, *, words: bool = False) -> str:
    """``1h02m03s`` / ``2m03s`` (compact), or ``1 h 02 min`` / ``2 min 03 s`` (words, seconds
    dropped past an hour); None (nothing to estimate from) reads ``unknown``."""
    if seconds is None:
        return "unknown"
    if words:
        minutes, s = divmod(int(round(seconds)), 60)
        hours, m = divmod(minutes, 60)
        return f"{hours} h {m:02d} min" if hours else f"{m} min {s:02d} s"
    h, rem = divmod(int(seconds + 0.5), 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"
