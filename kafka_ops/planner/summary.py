"""What a plan does, for people (a table) and programs (JSON): goals before/after, cost, duration.

The duration estimate follows how Kafka throttles a reassignment: the throttle is a per-broker
rate, applied to the leader sending replica data and to the new replica fetching it, so the
plan takes as long as its busiest broker needs to send or receive its share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_ops.formatting import format_bytes, format_duration
from kafka_ops.model import NO_LEADER
from kafka_ops.plan import ReassignmentPlan

if TYPE_CHECKING:
    from kafka_ops.planner.state import WorkingState


@dataclass(frozen=True)
class GoalResult:
    name: str
    hard: bool
    before: dict[str, float]
    after: dict[str, float]
    worse: bool = False  # a goal's own optimisation left it worse: a planner bug, reported
    # Per measure, what "not worse" holds the plan to where the start is below what any plan
    # reaches (it breaks a hard goal: a pool migration's topics start outside their pools, at
    # 0 there): each topic held to its floor instead. Empty where the start is the bar.
    held_to: dict[str, float] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """satisfied, improved, unchanged or worse: "worse" whenever any measure grew (past
        held_to, where given).

        A goal that ends within its bounds is satisfied. Otherwise a goal can end worse than it
        started because an earlier goal outranked it (the plan trades it for a higher-priority
        one); the summary says so rather than "improved".
        """
        if self.worse:
            return "worse"
        bad = sum(v for k, v in self.after.items() if k == "violations" or k.endswith("out_of_bounds"))
        if not bad:
            return "satisfied"
        if any(v > max(self.before.get(k, v), self.held_to.get(k, -math.inf)) + 1e-9
               for k, v in self.after.items()):
            return "worse"
        return "improved" if self.after != self.before else "unchanged"

    def describe(self) -> str:
        """The measures as "name before -> after", with the bar where the start is below it."""
        return "; ".join(
            f"{k} {_num(self.before.get(k))} -> {_num(v)}"
            + (f" (start held to its floor: {_num(self.held_to[k])})" if k in self.held_to else "")
            for k, v in self.after.items())


@dataclass(frozen=True)
class PlanSummary:
    mode: str
    goals: list[GoalResult]
    partitions_changed: int
    replica_moves: int
    bytes_moved: int
    leader_changes: int
    capped: list[str] = field(default_factory=list)
    broker_bytes_in: dict[int, int] = field(default_factory=dict)  # replica bytes each broker fetches
    broker_bytes_out: dict[int, int] = field(default_factory=dict)  # ... each current leader sends
    warnings: list[str] = field(default_factory=list)  # what the plan could not do, and why
    goal_seconds: dict[str, float] = field(default_factory=dict, compare=False)  # time per goal

    def estimated_seconds(self, throttle_bytes_per_sec: float) -> float:
        busiest = max([*self.broker_bytes_in.values(), *self.broker_bytes_out.values(), 0])
        return busiest / throttle_bytes_per_sec

    def to_dict(self, throttle_bytes_per_sec: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "partitions_changed": self.partitions_changed,
            "replica_moves": self.replica_moves,
            "bytes_moved": self.bytes_moved,
            "leader_changes": self.leader_changes,
            "capped_by": self.capped,
            "warnings": self.warnings,
            "goals": [
                {"name": g.name, "hard": g.hard, "status": g.status, "before": g.before, "after": g.after,
                 **({"held_to": g.held_to} if g.held_to else {})}
                for g in self.goals
            ],
        }
        if throttle_bytes_per_sec:
            out["throttle_bytes_per_sec"] = throttle_bytes_per_sec
            out["estimated_seconds"] = round(self.estimated_seconds(throttle_bytes_per_sec), 1)
        return out

    def format_text(self, throttle_bytes_per_sec: float | None = None) -> str:
        lines = [
            f"mode: {self.mode}",
            f"partitions changed: {self.partitions_changed}   replica moves: {self.replica_moves}   "
            f"bytes moved: {format_bytes(self.bytes_moved)}   leader changes: {self.leader_changes}",
        ]
        if throttle_bytes_per_sec:
            secs = self.estimated_seconds(throttle_bytes_per_sec)
            lines.append(f"estimated duration at {format_bytes(throttle_bytes_per_sec)}/s: {format_duration(secs)}")
        if self.capped:
            lines.append(f"stopped early by: {', '.join(self.capped)}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        lines.append("")
        lines.append(f"{'goal':<28} {'kind':<5} {'status':<10} before -> after")
        for g in self.goals:
            lines.append(f"{g.name:<28} {'hard' if g.hard else 'soft':<5} {g.status:<10} {g.describe()}")
        return "\n".join(lines)


def summarize(mode: str, st: WorkingState, plan: ReassignmentPlan, goals: list[GoalResult],
              capped: list[str], warnings: list[str] | None = None) -> PlanSummary:
    ids = st.broker_ids
    moves = 0
    moved = 0
    leader_changes = 0
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    for p, original in enumerate(st.original):
        reps = st.replicas[p]
        if tuple(reps) == original:
            continue
        if reps[0] != original[0]:
            leader_changes += 1
        # New replicas fetch from the partition's leader at the time (the preferred leader
        # only takes over after the reassignment and election).
        leader = st.cluster.partitions[st.tps[p]].leader
        source = leader if leader != NO_LEADER else ids[reps[0]]
        for b in reps:
            if b not in original:
                moves += 1
                moved += st.size[p]
                bytes_in[ids[b]] = bytes_in.get(ids[b], 0) + st.size[p]
                bytes_out[source] = bytes_out.get(source, 0) + st.size[p]
    return PlanSummary(mode, goals, len(plan), moves, moved, leader_changes, list(capped),
                       bytes_in, bytes_out, list(warnings or ()))


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if isinstance(v, int) or v == int(v) else f"{v:.3f}"
