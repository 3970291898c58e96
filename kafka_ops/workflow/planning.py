"""Step 2 of the runbook: a plan by mode name, from a snapshot, with validated options.

``PlanRequest`` names a mode as the CLI does (``kafka-ops plan <mode>``) and carries its
options; it validates them when built, so a bad request fails before any planning or any
cluster access, with an error naming the option. ``plan_cluster`` runs the goal-based planner
(the CLI uses it); ``make_plan`` is the same as a workflow step returning a ``PlanProposal``
record: the plan in Kafka's JSON, its rollback, the planner's summary and the content hash the
approval and the execution re-check.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.load_spec import load_source_from_spec
from kafka_ops.loads import LoadSource, with_loads
from kafka_ops.model import ClusterModel
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner import (
    SOFT_GOALS,
    PlannerOptions,
    PlanResult,
    plan_add_brokers,
    plan_demote,
    plan_fix_offline,
    plan_migrate_pool,
    plan_rebalance,
    plan_remove_brokers,
    plan_replace_broker,
    plan_set_replication_factor,
)
from kafka_ops.planner.disks import (
    place_added_replicas,
    plan_fix_failed_dirs,
    plan_rebalance_disks,
    rollback_with_dirs,
)
from kafka_ops.planner.summary import GoalResult, PlanSummary
from kafka_ops.pools import PoolSet
from kafka_ops.workflow.digest import content_hash
from kafka_ops.workflow.records import OptionError, Record
from kafka_ops.workflow.snapshot import ClusterSnapshot

#: The planner's modes, as ``kafka-ops plan`` names them, and the options each requires.
MODES: dict[str, tuple[str, ...]] = {
    "rebalance": (),
    "add-brokers": ("brokers",),
    "remove-brokers": ("brokers",),
    "demote": ("brokers",),
    "fix-offline": (),
    "set-rf": ("topics", "replication_factor"),
    "migrate-pool": (),
    "replace-broker": ("from_broker", "to_broker"),
    "rebalance-disks": (),
}

#: Options that only some modes use (any mode takes goals, thresholds and caps).
_MODE_ONLY = {
    "brokers": ("add-brokers", "remove-brokers", "demote", "rebalance-disks"),
    "topics": ("rebalance", "set-rf", "migrate-pool"),
    "pool": ("rebalance",),
    "replication_factor": ("set-rf",),
    "from_broker": ("replace-broker",),
    "to_broker": ("replace-broker",),
    "disk_threshold": ("rebalance-disks",),
    "disk_band": ("rebalance-disks",),
}


@dataclass(frozen=True)
class PlanRequest(Record):
    """What to plan. Broker ids, topic names and caps as JSON values; validated on creation."""

    mode: str
    brokers: list[int] | None = None
    topics: list[str] | None = None
    pool: str | None = None
    replication_factor: int | None = None
    from_broker: int | None = None
    to_broker: int | None = None
    goals: list[str] | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    max_moves: int | None = None
    max_bytes: int | None = None
    max_leader_changes: int | None = None
    topic_swaps: bool = False
    disk_threshold: float | None = None  # rebalance-disks: no directory above this (default 0.8)
    disk_band: float | None = None  # rebalance-disks: directories within this of the mean (0.05)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValidationError(f"unknown plan mode {self.mode!r}; choose one of {', '.join(MODES)}")
        for name in MODES[self.mode]:
            if getattr(self, name) in (None, []):
                raise OptionError(name, f"is required by {self.mode}")
        for name, modes in _MODE_ONLY.items():
            if getattr(self, name) is not None and self.mode not in modes:
                raise OptionError(name, f"does not apply to {self.mode}")
        for name in ("brokers",):
            values = getattr(self, name)
            if values is not None and not all(_is_int(b) and b >= 0 for b in values):
                raise OptionError(name, "must be broker ids (non-negative integers)")
        for name in ("from_broker", "to_broker", "replication_factor"):
            value = getattr(self, name)
            if value is not None and not (_is_int(value) and value >= 0):
                raise OptionError(name, "must be a non-negative integer")
        if self.topics is not None and not all(isinstance(t, str) and t for t in self.topics):
            raise OptionError("topics", "must be topic names")
        if self.goals is not None and not all(isinstance(g, str) for g in self.goals):
            raise OptionError("goals", "must be goal names")
        for goal, value in self.thresholds.items():
            if goal not in SOFT_GOALS:
                raise OptionError("thresholds", f"name a soft goal, not {goal!r} ({', '.join(SOFT_GOALS)})")
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise OptionError("thresholds", f"of {goal} must be a number")
            if value < 0:
                raise OptionError("thresholds", f"of {goal} must not be negative")
        for name, low, high in (("disk_threshold", 0.0, 1.0), ("disk_band", 0.0, 1.0)):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise OptionError(name, "must be a number")
            if not (low < value <= high if name == "disk_threshold" else low <= value < high):
                raise OptionError(name, "must be in (0, 1]" if name == "disk_threshold" else "must be in [0, 1)")
        for name in ("max_moves", "max_bytes", "max_leader_changes"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise OptionError(name, "must be an integer")
            if value is not None and value < 0:
                raise OptionError(name, "must not be negative")

    def planner_options(self) -> PlannerOptions:
        return PlannerOptions(
            goals=tuple(self.goals) if self.goals else None,
            thresholds=dict(self.thresholds),
            max_moves=self.max_moves,
            max_bytes=self.max_bytes,
            max_leader_changes=self.max_leader_changes,
            topic_swaps=self.topic_swaps,
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_throttle(throttle: float | None, option: str = "throttle") -> None:
    """A replication throttle is a positive, finite number of bytes per second."""
    if throttle is None:
        return
    if isinstance(throttle, bool) or not isinstance(throttle, int | float) or not math.isfinite(throttle) \
            or throttle <= 0:
        raise OptionError(option, "must be a positive number of bytes per second")


def plan_cluster(cluster: ClusterModel, request: PlanRequest, pools: PoolSet | None = None) -> PlanResult:
    """Run the planner mode the request names. On a cluster with known log directories
    (JBOD), each replica the plan adds to a broker gets a directory (``log_dirs``), and
    fix-offline also moves the replicas of failed directories (KIP-112) to other brokers."""
    jbod = any(b.log_dirs for b in cluster.brokers.values())
    if request.mode == "rebalance-disks":
        if not jbod:
            raise ValidationError("rebalance-disks needs the brokers' log directories: read the cluster "
                                  "with them (a snapshot needs brokers' and partitions' 'log_dirs')")
        return _plan_disks(cluster, request)
    result = _plan_mode(cluster, request, pools)
    if not jbod:
        return result
    plan = result.plan
    if request.mode == "fix-offline":
        failed = plan_fix_failed_dirs(cluster.with_assignment(plan.replicas, move_leaders=False))
        extra = {tp: r for tp, r in failed.replicas.items() if tp not in plan.replicas}
        plan = ReassignmentPlan({**plan.replicas, **extra}, {
            **plan.log_dirs, **{tp: d for tp, d in failed.log_dirs.items() if tp in extra}})
    return dataclasses.replace(result, plan=place_added_replicas(cluster, plan))


def _plan_disks(cluster: ClusterModel, request: PlanRequest) -> PlanResult:
    """rebalance-disks as a PlanResult: replicas stay on their brokers, ``log_dirs`` move them;
    its two goals (Cruise Control's intra-broker ones) before and after."""
    threshold = 0.8 if request.disk_threshold is None else request.disk_threshold
    band = 0.05 if request.disk_band is None else request.disk_band
    disks = plan_rebalance_disks(cluster, threshold=threshold, band=band, brokers=request.brokers)
    before, after = disks.before, disks.after
    goals = [
        GoalResult("intra_broker_disk_capacity", True, {"violations": len(before.over_threshold)},
                   {"violations": len(after.over_threshold)}),
        GoalResult("intra_broker_disk_usage_distribution", False,
                   {"worst_spread": round(before.worst_spread, 4), "mean_spread": round(before.mean_spread, 4),
                    "brokers_out_of_bounds": sum(s > 2 * band for s in before.spread.values())},
                   {"worst_spread": round(after.worst_spread, 4), "mean_spread": round(after.mean_spread, 4),
                    "brokers_out_of_bounds": sum(s > 2 * band for s in after.spread.values())}),
    ]
    summary = PlanSummary(mode="rebalance-disks", goals=goals, partitions_changed=len(disks.plan),
                          replica_moves=0, bytes_moved=0, leader_changes=0,
                          warnings=[f"{disks.moves} replicas move between log directories of their broker "
                                    f"({disks.moved_bytes} bytes copied inside brokers)"])
    return PlanResult(disks.plan, summary)


def _plan_mode(cluster: ClusterModel, request: PlanRequest, pools: PoolSet | None) -> PlanResult:
    options = request.planner_options()
    mode = request.mode
    if mode == "rebalance":
        return plan_rebalance(cluster, pools, options, topics=request.topics or None, pool=request.pool)
    if mode == "add-brokers":
        return plan_add_brokers(cluster, request.brokers or [], pools, options)
    if mode == "remove-brokers":
        return plan_remove_brokers(cluster, request.brokers or [], pools, options)
    if mode == "demote":
        return plan_demote(cluster, request.brokers or [], pools, options)
    if mode == "fix-offline":
        return plan_fix_offline(cluster, pools, options)
    if mode == "set-rf":
        return plan_set_replication_factor(cluster, request.topics or [], request.replication_factor or 0,
                                           pools, options)
    if mode == "migrate-pool":
        if pools is None:
            raise ValidationError("migrate-pool needs a pools file (--pools)")
        return plan_migrate_pool(cluster, pools, request.topics or None, options)
    assert mode == "replace-broker"
    return plan_replace_broker(cluster, request.from_broker or 0, request.to_broker or 0, pools, options)


@dataclass(frozen=True)
class PlanProposal(Record):
    """A plan and what goes with it: rollback, the planner's summary, the content hash."""

    mode: str
    plan: dict[str, Any]  # Kafka's reassignment JSON
    rollback: dict[str, Any]  # the plan's partitions as they are in the snapshot
    summary: dict[str, Any]  # the planner's PlanSummary.to_dict(throttle)
    content_hash: str  # of plan + base replicas: approval and execution re-check it
    empty: bool = False
    loads: dict[str, Any] | None = None  # where the loads came from and how well they covered

    def reassignment(self) -> ReassignmentPlan:
        return ReassignmentPlan.from_dict(self.plan)

    def base(self) -> ReassignmentPlan:
        return ReassignmentPlan.from_dict(self.rollback)


def make_plan(
    snapshot: ClusterSnapshot | ClusterModel,
    request: PlanRequest | Mapping[str, Any],
    pools: PoolSet | None = None,
    throttle: float | None = None,
    loads: LoadSource | str | None = None,
) -> PlanProposal:
    """The workflow step: plan from a snapshot record (or a model) by a request record.

    ``loads``: where partition loads come from instead of the snapshot's own fields — a
    ``LoadSource`` or its spec (``file:PATH``, ``analysis:DIR``, ``snapshots:...``, see
    kafka_ops.loads). The topology (replicas, leaders) is always the snapshot's.
    """
    if not isinstance(request, PlanRequest):
        request = PlanRequest.from_dict(request)
    check_throttle(throttle)
    if isinstance(loads, str):
        loads = load_source_from_spec(loads)
    cluster = snapshot.model() if isinstance(snapshot, ClusterSnapshot) else snapshot
    cluster, laid = with_loads(cluster, loads)
    result = plan_cluster(cluster, request, pools)
    plan = result.plan
    return PlanProposal(
        mode=request.mode,
        plan=plan.to_dict(),
        rollback=rollback_with_dirs(plan, cluster).to_dict(),
        summary=result.summary.to_dict(throttle),
        content_hash=content_hash(plan, cluster),
        empty=not len(plan),
        loads=None if laid is None else {
            "source": laid.source, "window_start": laid.window_start, "window_end": laid.window_end,
            "issues": dict(laid.issues), "coverage": laid.coverage(cluster).to_dict(),
        },
    )
