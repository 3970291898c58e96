"""Step 3 of the runbook: what an on-call approver reads before a plan runs, and its hash.

The digest says what the plan costs (moves, bytes, an estimated duration at the throttle), what
it achieves (each goal before and after, when the planner made it), what could go wrong
(``risks``), and how to undo it (the rollback). ``content_hash`` covers the plan and the
replicas its partitions had when it was made: the execution step recomputes it from the live
cluster and refuses to start when either changed, so what runs is what was approved.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.formatting import format_bytes, format_duration
from kafka_ops.model import NO_LEADER, ClusterModel
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.plan_report import diff_plan
from kafka_ops.planner.disks import log_dir_changes, rollback_with_dirs
from kafka_ops.workflow.records import Record

#: A broker whose disk would be fuller than this after the plan is named as a risk.
NEAR_CAPACITY = 0.85


class PlanChangedError(ValidationError):
    """The plan, or the replicas it was computed against, changed since it was approved."""


def content_hash(plan: ReassignmentPlan, cluster: ClusterModel) -> str:
    """sha256 over the plan's Kafka JSON and the current replicas of its partitions."""
    base = [
        [tp.topic, tp.partition, list(cluster.partitions[tp].replicas) if tp in cluster.partitions else None]
        for tp in sorted(plan.replicas)
    ]
    payload = json.dumps({"plan": plan.to_dict(), "base": base}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def check_unchanged(expected_hash: str, plan: ReassignmentPlan, cluster: ClusterModel) -> None:
    """Refuse (PlanChangedError) when plan + base no longer hash to the approved value."""
    actual = content_hash(plan, cluster)
    if actual != expected_hash:
        drifted = [str(tp) for tp in sorted(plan.replicas)
                   if tp not in cluster.partitions][:3]
        raise PlanChangedError(
            f"the plan or the replicas it was computed against changed since approval "
            f"(hash {actual[:12]} != approved {expected_hash[:12]}"
            + (f"; missing partitions {', '.join(drifted)}" if drifted else "")
            + "): plan again and have it approved"
        )


@dataclass(frozen=True)
class ApprovalDigest(Record):
    content_hash: str
    partitions: int
    replica_moves: int
    bytes_to_move: int
    leader_changes: int
    throttle_bytes_per_sec: float | None
    estimated_seconds: float | None
    goals: list[dict[str, Any]]
    risks: list[str]
    brokers: list[dict[str, Any]]  # per broker: replicas/leaders/bytes in and out
    rollback: dict[str, Any]  # Kafka JSON that puts every planned partition back
    mode: str = ""
    log_dir_moves: int = 0  # replicas moved between log directories of their broker
    log_dir_bytes: int = 0  # bytes those moves copy inside brokers

    def text(self) -> str:
        """The digest for a person: a few lines, then goals and risks."""
        lines = [
            f"plan {self.content_hash[:12]}" + (f" ({self.mode})" if self.mode else ""),
            f"partitions: {self.partitions}   replica moves: {self.replica_moves}   "
            f"bytes: {format_bytes(self.bytes_to_move)}   leader changes: {self.leader_changes}",
        ]
        if self.log_dir_moves:
            lines.append(f"log-dir moves (inside brokers, after the reassignment): {self.log_dir_moves}   "
                         f"bytes: {format_bytes(self.log_dir_bytes)}")
        if self.estimated_seconds is not None and self.throttle_bytes_per_sec:
            lines.append(f"estimated duration at {format_bytes(self.throttle_bytes_per_sec)}/s: "
                         f"{format_duration(self.estimated_seconds)}")
        for g in self.goals:
            held = g.get("held_to", {})
            change = "; ".join(f"{k} {g['before'].get(k)} -> {v}"
                               + (f" (start held to its floor: {held[k]})" if k in held else "")
                               for k, v in g["after"].items())
            lines.append(f"goal {g['name']} ({g['status']}): {change}")
        lines.extend(f"RISK: {r}" for r in self.risks)
        if not self.risks:
            lines.append("risks: none found")
        lines.append(f"rollback: {len(self.rollback.get('partitions', []))} partitions back to their "
                     f"current replicas")
        return "\n".join(lines)


def approval_digest(
    plan: ReassignmentPlan,
    cluster: ClusterModel,
    *,
    throttle: float | None = None,
    summary: Mapping[str, Any] | None = None,
    near_capacity: float = NEAR_CAPACITY,
    concurrency: int | None = None,
) -> ApprovalDigest:
    """The digest of ``plan`` against the cluster it was made for. ``summary`` is the planner's
    summary dict (``PlanProposal.summary``) when the plan came from the planner: its goals
    before/after go into the digest. ``concurrency``: moves in and out per broker at a time,
    which share a broker's throttle (the catch-up risk)."""
    diff = diff_plan(plan, cluster)
    dir_moves, dir_bytes = log_dir_changes(plan, cluster)
    bytes_in: dict[int, int] = {}
    bytes_out: dict[int, int] = {}
    for change in diff.partitions:
        p = cluster.partitions[change.tp]
        source = p.leader if p.leader != NO_LEADER else change.before[0]
        for b in change.added:
            bytes_in[b] = bytes_in.get(b, 0) + p.size_bytes
            bytes_out[source] = bytes_out.get(source, 0) + p.size_bytes
    busiest = max([*bytes_in.values(), *bytes_out.values(), 0])
    estimated = busiest / throttle if throttle else None
    goals = [
        {"name": g["name"], "hard": g["hard"], "status": g["status"], "before": g["before"], "after": g["after"],
         **({"held_to": g["held_to"]} if g.get("held_to") else {})}
        for g in (summary or {}).get("goals", [])
    ]
    return ApprovalDigest(
        content_hash=content_hash(plan, cluster),
        partitions=len(diff.partitions),
        replica_moves=diff.replica_moves,
        bytes_to_move=diff.bytes_to_move,
        leader_changes=diff.leader_changes,
        throttle_bytes_per_sec=throttle,
        estimated_seconds=round(estimated, 1) if estimated is not None else None,
        goals=goals,
        risks=_risks(plan, cluster, diff, near_capacity)
        + _catch_up_risks(cluster, diff, throttle, concurrency),
        brokers=[
            {"broker": b.broker, "replicas_in": b.replicas_in, "replicas_out": b.replicas_out,
             "leaders_gained": b.leaders_gained, "leaders_lost": b.leaders_lost,
             "bytes_in": b.bytes_in, "bytes_out": b.bytes_out}
            for b in diff.brokers
        ],
        rollback=rollback_with_dirs(plan, cluster).to_dict(),
        mode=str((summary or {}).get("mode", "")),
        log_dir_moves=dir_moves,
        log_dir_bytes=dir_bytes,
    )


def _risks(plan: ReassignmentPlan, cluster: ClusterModel, diff: Any, near_capacity: float) -> list[str]:
    risks = []
    offline = sorted({b for reps in plan.replicas.values() for b in reps
                      if b not in cluster.brokers or not cluster.brokers[b].alive})
    if offline:
        risks.append(f"the plan puts replicas on offline broker(s) {_ids(offline)}: those moves cannot finish")
    urp = [p.tp for p in cluster if p.is_under_replicated]
    if urp:
        risks.append(f"{len(urp)} partitions are under-replicated now (e.g. {urp[0]}): the executor "
                     f"refuses to start unless allowed")
    moving = [tp for tp in plan.replicas if cluster.partitions[tp].reassignment_in_progress]
    if moving:
        risks.append(f"{len(moving)} planned partitions have a reassignment in flight (e.g. {moving[0]})")
    rf = [tp for tp, reps in plan.replicas.items() if len(reps) != len(cluster.partitions[tp].replicas)]
    if rf:
        risks.append(f"{len(rf)} partitions change replication factor (e.g. {rf[0]}: "
                     f"{len(cluster.partitions[rf[0]].replicas)} -> {len(plan.replicas[rf[0]])})")
    for b in diff.brokers:
        if b.leaders_lost > b.leaders_gained:
            risks.append(f"broker {b.broker} loses {b.leaders_lost - b.leaders_gained} leaders "
                         f"(their clients move to other brokers)")
    after = cluster.with_assignment(plan.replicas)
    for broker in after.brokers.values():
        capacity = broker.capacity.disk_bytes
        if not capacity:
            continue
        used = sum(p.size_bytes for p in after.partitions_on(broker.id))
        before = sum(p.size_bytes for p in cluster.partitions_on(broker.id))
        if used / capacity > near_capacity and used > before:
            risks.append(f"broker {broker.id} would be {used / capacity:.0%} full "
                         f"(more than {near_capacity:.0%})")
    return risks


def _catch_up_risks(cluster: ClusterModel, diff: Any, throttle: float | None,
                    concurrency: int | None) -> list[str]:
    """Moves whose partition takes in data faster than its new replica may copy: a follower
    fetching at most ``throttle`` bytes/s (shared by the moves on a broker) never catches up
    with a leader growing faster, so the move never finishes (as in Kafka)."""
    if not throttle:
        return []
    moving = [cluster.partitions[c.tp] for c in diff.partitions if c.added]
    hot = sorted((p for p in moving if p.bytes_in_per_sec >= throttle),
                 key=lambda p: -p.bytes_in_per_sec)
    if hot:
        return [f"{len(hot)} moved partitions take in data at least as fast as the throttle "
                f"({format_bytes(throttle)}/s), e.g. {hot[0].tp} at "
                f"{format_bytes(hot[0].bytes_in_per_sec)}/s: their new replicas can never catch "
                "up and those moves never finish; raise the throttle"]
    if concurrency and concurrency > 1:
        share = throttle / concurrency
        slow = sorted((p for p in moving if p.bytes_in_per_sec >= share),
                      key=lambda p: -p.bytes_in_per_sec)
        if slow:
            return [f"{len(slow)} moved partitions take in data faster than a move's share of "
                    f"the throttle ({format_bytes(throttle)}/s over {concurrency} moves per "
                    f"broker = {format_bytes(share)}/s), e.g. {slow[0].tp} at "
                    f"{format_bytes(slow[0].bytes_in_per_sec)}/s: while that many moves share a "
                    "broker they cannot catch up; raise the throttle or lower the concurrency"]
    return []


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))
