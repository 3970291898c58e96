"""The run's report as people read it (task log, report.txt) and as programs do (XCom).

Presentation only: the outcome comes from ``kafka_ops.workflow.final_report`` and the execution
state; the balance figures from ``kafka_ops.charts.broker_loads`` of the cluster as planned
against and as it is now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def spread(values: list[float]) -> dict[str, float]:
    """max, mean and max/mean (1.0 = perfectly even) of per-broker values."""
    mean = sum(values) / len(values) if values else 0.0
    top = max(values) if values else 0.0
    return {"max": round(top, 2), "mean": round(mean, 2),
            "max_over_mean": round(top / mean, 3) if mean else 0.0}


def write_report(out: Path, planned: dict[str, Any], after: Any, store: Any,
                 states: dict[str, Any], resume_hint: str) -> dict[str, Any]:
    from kafka_ops import workflow
    from kafka_ops.charts import broker_loads, plot_broker_load
    from kafka_ops.errors import ValidationError
    from kafka_ops.snapshot import load_snapshot

    before = load_snapshot(out / "cluster-before.json")
    chart = plot_broker_load(before, after, out / "broker-load-before-after.png",
                             title="Broker load: before the plan and now")
    state = store.load()
    try:
        final: dict[str, Any] | None = workflow.final_report(store).report
    except ValidationError:
        final = None
    status = final["status"] if final else (state.status if state else "not started")
    loads_before, loads_after = broker_loads(before), broker_loads(after)
    balance = {kind: {"before": spread(loads_before[kind]), "after": spread(loads_after[kind])}
               for kind in loads_before}
    digest = planned["digest"]
    lines = [
        f"kafka-ops {planned['mode']} on {planned['cluster']}: {status}",
        f"plan: {digest['replica_moves']} replica moves in {digest['partitions']} partitions "
        f"(digest {digest['content_hash'][:12]}); {planned['plan_path']}",
    ]
    if final:
        lines.append(
            f"moves: {len(final['completed'])} completed, {len(final['reverted'])} reverted, "
            f"{len(final['failed'])} failed, {len(final['not_started'])} not started, "
            f"{len(final['skipped'])} skipped; {final['elapsed_seconds']:.0f} s")
        if final["message"]:
            lines.append(f"executor: {final['message']}")
    lines.append("balance (per broker max / mean; 1.00 = even):")
    for kind, figures in balance.items():
        # Rates come from the metrics analysis the plan used; the live cluster has none.
        now = ("n/a" if not figures["after"]["max"] and figures["before"]["max"]
               else f"{figures['after']['max_over_mean']:.2f}")
        lines.append(f"  {kind:16s} before {figures['before']['max_over_mean']:.2f}   now {now}")
    leaders = states.get("elect_leaders") or {}
    if leaders:
        lines.append(f"preferred leaders elected: {len(leaders.get('elected', []))}; "
                     f"misplaced: {len(leaders.get('misplaced', {}))}")
    safe = states.get("make_safe")
    resumed = bool(safe and status == "completed" and safe.get("execution") == "paused")
    if resumed:
        # make_safe ran on an earlier pass that paused (a broker died); it was skipped on the
        # pass that resumed and completed, so its XCom is that earlier pass's.
        lines.append(f"an earlier pass paused and was made safe ({safe}); resumed, it completed")
        safe = None
    cleared = (states.get("clear_throttles") or {}).get("throttles_cleared") or (
        safe or {}).get("throttles_cleared")
    left = sorted({b for r in (states.get("clear_throttles"), safe) if r
                   for b in r.get("throttles_left_on") or ()})
    if state is None:
        lines.append("throttles: none set (the execution never started)")
    elif left:
        lines.append(f"throttles: removed except on broker(s) {', '.join(map(str, left))}, "
                     "down while they were cleared (the Admin API reaches a broker's configs "
                     "through that broker only): once they are back, clear this run's "
                     "'clear_throttles' task (or run 'kafka-ops verify' with the plan)")
    else:
        lines.append(f"throttles: {'removed' if cleared else 'NOT confirmed removed: check'}")
    if safe:
        lines.append(f"a task failed after execution started; made safe: {safe}")
    if status in ("paused", "running", "failed") or safe:
        lines.append(resume_hint)
    lines += [f"rollback: {planned['rollback_path']} (kafka-reassign-partitions --execute)",
              f"chart: {chart}", f"plan chart: {planned['chart_path']}"]
    text = "\n".join(lines)
    (out / "report.txt").write_text(text + "\n")
    return {"status": status, "made_safe": bool(safe), "balance": balance, "final": final,
            "chart": str(chart),
            "report_path": str(out / "report.txt"), "text": text}
