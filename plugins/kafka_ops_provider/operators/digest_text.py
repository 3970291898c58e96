"""The approval digest as the approver reads it in the Airflow UI (Markdown).

Presentation only: the figures come from ``kafka_ops.workflow``'s digest as the plan task pushed
it. What Approve means is stated in the words on-call uses: how much moves, for how long at
which throttle, what gets better, what is risky, and where the full plan and chart are.
"""

from __future__ import annotations

from typing import Any


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.1f} TB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, s = divmod(int(round(seconds)), 60)
    hours, m = divmod(minutes, 60)
    return f"{hours} h {m:02d} min" if hours else f"{m} min {s:02d} s"


def digest_subject(planned: dict[str, Any], dag_id: str) -> str:
    d = planned["digest"]
    return (f"Approve {d['moves']} replica moves ({_bytes(d['bytes'])}) on "
            f"{planned.get('cluster', 'the cluster')} [{dag_id}]")


def digest_markdown(planned: dict[str, Any]) -> str:
    d = planned["digest"]
    lines = [
        f"**Mode:** {planned.get('mode', '?')}  ",
        f"**Moves:** {d['moves']} replica moves in {d.get('partitions', '?')} partitions, "
        f"{_bytes(d['bytes'])} to copy  ",
        f"**Estimated duration:** {_duration(d.get('estimated_seconds'))} at a throttle of "
        f"{_bytes(d.get('throttle') or 0)}/s per broker  ",
        f"**Leadership changes:** {d.get('leader_changes', 0)}",
        "",
        "| goal | before | after |",
        "|---|---|---|",
    ]
    for goal in d.get("goals", []):
        lines.append(f"| {goal['name']} | {goal['before']} | {goal['after']} |")
    risks = d.get("risks") or []
    lines += ["", "**Risks:**" if risks else "**Risks:** none found"]
    lines += [f"- {r}" for r in risks]
    lines += [
        "",
        f"**Plan:** `{planned.get('plan_path')}` (Kafka's reassignment JSON)  ",
        f"**Rollback:** `{planned.get('rollback_path')}`  ",
        f"**Before/after chart:** `{planned.get('chart_path')}`  ",
        f"**Digest:** `{d['hash']}` — Approve binds to this exact plan and cluster state; "
        "if either changes before execution starts, execution refuses.",
        "",
        "*Reject* (or no answer in time) ends the run with nothing changed.",
    ]
    return "\n".join(lines)
