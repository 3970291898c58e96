"""What a reassignment plan does to a cluster: the diff, the rollback and a summary for humans.

Operators approve a plan by reading what moves where and how many bytes that costs, so the
diff is computed against the cluster state the plan was made for. "After" assumes what the
executor does at the end of a reassignment: a preferred leader election, so each planned
partition ends up led by its new replicas[0].
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_ops.formatting import format_bytes
from kafka_ops.model import NO_LEADER, ClusterModel, TopicPartition
from kafka_ops.plan import ReassignmentPlan


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """One planned partition whose replicas or (preferred) leader change."""

    tp: TopicPartition
    before: tuple[int, ...]
    after: tuple[int, ...]
    leader_before: int
    size_bytes: int

    @property
    def added(self) -> tuple[int, ...]:
        return tuple(b for b in self.after if b not in self.before)

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(b for b in self.before if b not in self.after)

    @property
    def leader_after(self) -> int:
        return self.after[0]

    @property
    def leader_changes(self) -> bool:
        return self.leader_before != self.leader_after

    @property
    def bytes_to_move(self) -> int:
        """Each new replica copies the whole log from the leader."""
        return self.size_bytes * len(self.added)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "before": list(self.before),
            "after": list(self.after),
            "added": list(self.added),
            "removed": list(self.removed),
            "leader_before": self.leader_before,
            "leader_after": self.leader_after,
            "bytes_to_move": self.bytes_to_move,
        }


@dataclass(slots=True)
class BrokerChange:
    """What one broker gains and loses. bytes_in is data it must fetch for new replicas;
    bytes_out is data its removed replicas held (disk it frees)."""

    broker: int
    replicas_in: int = 0
    replicas_out: int = 0
    leaders_gained: int = 0
    leaders_lost: int = 0
    bytes_in: int = 0
    bytes_out: int = 0


@dataclass(frozen=True)
class PlanDiff:
    """A plan against a cluster: per partition, per broker (id order) and totals."""

    partitions: list[PartitionChange]
    brokers: list[BrokerChange]
    unchanged: int = 0

    @property
    def replica_moves(self) -> int:
        return sum(len(c.added) for c in self.partitions)

    @property
    def leader_changes(self) -> int:
        return sum(c.leader_changes for c in self.partitions)

    @property
    def bytes_to_move(self) -> int:
        return sum(c.bytes_to_move for c in self.partitions)

    def totals(self) -> dict[str, int]:
        return {
            "partitions_changed": len(self.partitions),
            "partitions_unchanged": self.unchanged,
            "replica_moves": self.replica_moves,
            "leader_changes": self.leader_changes,
            "bytes_to_move": self.bytes_to_move,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals(),
            "brokers": [asdict(b) for b in self.brokers],
            "partitions": [c.to_dict() for c in self.partitions],
        }


def diff_plan(plan: ReassignmentPlan, cluster: ClusterModel) -> PlanDiff:
    """The plan's changes against ``cluster``; ValidationError first if it does not fit it."""
    plan.validate_against(cluster)
    changes: list[PartitionChange] = []
    brokers: dict[int, BrokerChange] = {}

    def broker(b: int) -> BrokerChange:
        return brokers.setdefault(b, BrokerChange(b))

    for tp, after in plan.replicas.items():
        p = cluster.partitions[tp]
        change = PartitionChange(tp, p.replicas, after, p.leader, p.size_bytes)
        if p.replicas == after and not change.leader_changes:
            continue
        changes.append(change)
        for b in change.added:
            broker(b).replicas_in += 1
            broker(b).bytes_in += p.size_bytes
        for b in change.removed:
            broker(b).replicas_out += 1
            broker(b).bytes_out += p.size_bytes
        if change.leader_changes:
            if p.leader != NO_LEADER:
                broker(p.leader).leaders_lost += 1
            broker(change.leader_after).leaders_gained += 1
    return PlanDiff(changes, [brokers[b] for b in sorted(brokers)], len(plan) - len(changes))


def rollback_plan(plan: ReassignmentPlan, cluster: ClusterModel) -> ReassignmentPlan:
    """The current replica lists of the plan's partitions: run it to undo the plan."""
    plan.validate_against(cluster)
    return plan.rollback(cluster)


@dataclass(frozen=True, slots=True)
class BrokerSummary:
    broker: int
    rack: str | None
    replicas_before: int
    replicas_after: int
    leaders_before: int
    leaders_after: int


@dataclass(frozen=True)
class BrokerCounts:
    """Per-broker replica and leader counts before and after a plan (plus the diff totals).

    Computed from any plan file and a cluster (``kafka-ops pools``, ``plan-report``); not to be
    confused with the planner's ``PlanSummary`` (goals before/after, cost, duration), which
    exists only for plans the planner made. Named for what it holds so there is one PlanSummary.
    """

    brokers: list[BrokerSummary]
    totals: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"totals": self.totals, "brokers": [asdict(b) for b in self.brokers]}


def summarize_plan(plan: ReassignmentPlan, cluster: ClusterModel) -> BrokerCounts:
    """Before/after counts for every broker that is registered or holds a replica."""
    diff = diff_plan(plan, cluster)
    after = cluster.with_assignment(plan.replicas, move_leaders=True)
    ids = sorted(set(cluster.brokers) | {b for p in cluster for b in p.replicas})
    rows = [
        BrokerSummary(
            broker=b,
            rack=cluster.rack_of(b),
            replicas_before=len(cluster.partitions_on(b)),
            replicas_after=len(after.partitions_on(b)),
            leaders_before=len(cluster.leaders_on(b)),
            leaders_after=len(after.leaders_on(b)),
        )
        for b in ids
    ]
    return BrokerCounts(rows, diff.totals())


# -- text for humans ---------------------------------------------------------------------
_NUMBER = re.compile(r"-?\d+(\.\d+)?( [KMGT]?i?B)?")


def format_table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """Columns of numbers (and byte sizes) right-aligned, the rest left; no trailing spaces."""
    table = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    numeric = [
        len(table) > 1 and all(_NUMBER.fullmatch(r[i]) for r in table[1:])
        for i in range(len(widths))
    ]
    lines = []
    for row in table:
        cells = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(row, widths, numeric, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _ids(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def format_totals(totals: dict[str, int]) -> str:
    return (
        f"{totals['partitions_changed']} partitions change "
        f"({totals['partitions_unchanged']} unchanged), "
        f"{totals['replica_moves']} replica moves, {totals['leader_changes']} leader changes, "
        f"{format_bytes(totals['bytes_to_move'])} to move"
    )


def format_diff(diff: PlanDiff) -> str:
    if not diff.partitions:
        return format_totals(diff.totals())
    parts = format_table(
        ("partition", "before", "after", "added", "removed", "leader", "bytes to move"),
        (
            (
                str(c.tp),
                _ids(c.before),
                _ids(c.after),
                _ids(c.added) or "-",
                _ids(c.removed) or "-",
                f"{c.leader_before}->{c.leader_after}" if c.leader_changes else str(c.leader_after),
                format_bytes(c.bytes_to_move),
            )
            for c in diff.partitions
        ),
    )
    brokers = format_table(
        (
            "broker",
            "replicas in",
            "replicas out",
            "leaders +",
            "leaders -",
            "bytes in",
            "bytes out",
        ),
        (
            (
                b.broker,
                b.replicas_in,
                b.replicas_out,
                b.leaders_gained,
                b.leaders_lost,
                format_bytes(b.bytes_in),
                format_bytes(b.bytes_out),
            )
            for b in diff.brokers
        ),
    )
    return f"{parts}\n\n{brokers}\n\n{format_totals(diff.totals())}"


def format_summary(summary: BrokerCounts) -> str:
    table = format_table(
        ("broker", "rack", "replicas before", "after", "leaders before", "after"),
        (
            (
                b.broker,
                b.rack or "-",
                b.replicas_before,
                b.replicas_after,
                b.leaders_before,
                b.leaders_after,
            )
            for b in summary.brokers
        ),
    )
    return f"{table}\n\n{format_totals(summary.totals)}"
