"""The approval digest as the approver reads it in the Airflow UI (Markdown).

Presentation only: the figures come from ``kafka_ops.workflow``'s digest as the plan task pushed
it. What Approve means is stated in the words on-call uses: how much moves, for how long at
which throttle, what gets better, what is risky, and where the full plan and chart are.
"""

from __future__ import annotations

from typing import Any

from kafka_ops.formatting import format_bytes, format_duration


def _bytes(n: float) -> str:
    return format_bytes(n, decimal=True)


def _duration(seconds: float | None) -> str:
    return format_duration(seconds, words=True)


def digest_subject(planned: dict[str, Any], dag_id: str) -> str:
    d = planned["digest"]
    return (f"Approve {d['replica_moves']} replica moves ({_bytes(d['bytes_to_move'])}) on "
            f"{planned.get('cluster', 'the cluster')} [{dag_id}, {planned.get('mode')}]")


def _figures(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in values.items()) or "-"


def digest_markdown(planned: dict[str, Any]) -> str:
    d = planned["digest"]
    throttle = d.get("throttle_bytes_per_sec") or 0
    lines = [
        f"**Mode:** {planned.get('mode', '?')} on {planned.get('cluster', '?')}  ",
        f"**Moves:** {d['replica_moves']} replica moves in {d['partitions']} partitions, "
        f"{_bytes(d['bytes_to_move'])} to copy  ",
        f"**Estimated duration:** {_duration(d.get('estimated_seconds'))} at a throttle of "
        f"{_bytes(throttle)}/s per broker  ",
        f"**Leadership changes:** {d['leader_changes']}  ",
        f"**Loads:** {planned.get('loads') or 'from the cluster (sizes; no measured rates)'}",
        "",
        "| goal | status | before | after |",
        "|---|---|---|---|",
    ]
    for goal in d.get("goals", []):
        kind = " (hard)" if goal.get("hard") else ""
        lines.append(f"| {goal['name']}{kind} | {goal.get('status', '')} | "
                     f"{_figures(goal['before'])} | {_figures(goal['after'])} |")
    risks = d.get("risks") or []
    lines += ["", "**Risks:**" if risks else "**Risks:** none found"]
    lines += [f"- {r}" for r in risks]
    busiest = sorted(d.get("brokers", []), key=lambda b: -(b["bytes_in"] + b["bytes_out"]))[:5]
    if busiest:
        lines += ["", "| broker | replicas in / out | leaders +/- | bytes in / out |",
                  "|---|---|---|---|"]
        lines += [f"| {b['broker']} | {b['replicas_in']} / {b['replicas_out']} | "
                  f"+{b['leaders_gained']} / -{b['leaders_lost']} | "
                  f"{_bytes(b['bytes_in'])} / {_bytes(b['bytes_out'])} |" for b in busiest]
    lines += [
        "",
        f"**Plan:** `{planned.get('plan_path')}` (Kafka's reassignment JSON)  ",
        f"**Rollback:** `{planned.get('rollback_path')}`  ",
        f"**Before/after chart:** `{planned.get('chart_path')}`  ",
        f"**Digest:** `{d['content_hash']}` — Approve binds to this exact plan and cluster "
        "state; if either changes before execution starts, execution refuses.",
        "",
        "*Reject* (or no answer in time) ends the run with nothing changed.",
    ]
    return "\n".join(lines)
