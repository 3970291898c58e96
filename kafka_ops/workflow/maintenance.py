"""Steps 8-9 of the runbook: verify (and clear throttles), elect preferred leaders.

Both work on a plan alone, like Kafka's ``--verify`` and ``kafka-leader-election``, so they
also finish the job after an execution whose process is gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.errors import BrokerNotAvailableError
from kafka_ops.executor import verify_plan
from kafka_ops.executor.leaders import elect_preferred_leaders
from kafka_ops.executor.verify import VerifyStatus
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.throttle import clear_throttles
from kafka_ops.workflow.records import OptionError, Record


@dataclass(frozen=True)
class VerifyResult(Record):
    partitions: dict[str, str]  # "topic-partition" -> completed / in_progress / failed
    messages: list[str]  # Kafka's verify lines
    throttles_cleared: bool
    complete: bool
    #: Brokers of the plan that are down and whose throttle configs could not be deleted
    #: (the Admin API changes a broker's configs through that broker only): run this again
    #: once they are back. Empty when every throttle is gone (ZooKeeper mode clears a down
    #: broker's configs in ZooKeeper, which it reads when it starts).
    throttles_left_on: list[int] = field(default_factory=list)


def verify_and_clear_throttles(
    backend: ClusterBackend, plan: ReassignmentPlan | Mapping[str, Any], *,
    preserve_throttles: bool = False, base: ReassignmentPlan | Mapping[str, Any] | None = None,
) -> VerifyResult:
    """Kafka's verify of every partition of ``plan``; like Kafka, throttles are removed only
    once nothing moves anywhere in the cluster: from the plan's topics, every live broker, and
    the brokers of the plan (and of ``base``, its rollback: the replicas it moved from) that
    are down, where the backend can reach their configs (a broker that comes back with its
    throttle would replicate throttled for good)."""
    plan = plan if isinstance(plan, ReassignmentPlan) else ReassignmentPlan.from_dict(plan)
    plan.validate()
    if base is not None and not isinstance(base, ReassignmentPlan):
        base = ReassignmentPlan.from_dict(base)
    results = verify_plan(backend, plan)
    cleared = False
    left: list[int] = []
    if not preserve_throttles and not backend.list_reassignments():
        now = backend.describe_partitions(plan.partitions)
        alive = set(now.alive_broker_ids)
        clear_throttles(backend, plan.topics, sorted(alive))
        involved = {b for doc in (plan, base) if doc is not None
                    for reps in doc.replicas.values() for b in reps}
        involved |= {b for p in now.partitions.values() for b in p.replicas}
        for broker in sorted(involved - alive):
            try:
                clear_throttles(backend, [], [broker])
            except BrokerNotAvailableError:
                left.append(broker)
        cleared = True
    return VerifyResult(
        partitions={str(r.tp): r.status.value for r in results},
        messages=[r.message for r in results],
        throttles_cleared=cleared,
        complete=all(r.status is VerifyStatus.COMPLETED for r in results),
        throttles_left_on=left,
    )


@dataclass(frozen=True)
class LeaderResult(Record):
    elected: list[str]
    errors: dict[str, str]
    misplaced: dict[str, dict[str, int]]  # partition -> preferred, leader

    @property
    def ok(self) -> bool:
        return not self.misplaced


def elect_leaders(
    backend: ClusterBackend, plan: ReassignmentPlan | Mapping[str, Any], *, batch_size: int = 200
) -> LeaderResult:
    """Preferred leader election for the plan's partitions not led by their first replica,
    ``batch_size`` at a time; then which are still misplaced."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise OptionError("batch_size", "must be a positive integer")
    plan = plan if isinstance(plan, ReassignmentPlan) else ReassignmentPlan.from_dict(plan)
    plan.validate()
    report = elect_preferred_leaders(backend, plan.replicas, batch_size)
    return LeaderResult(
        elected=[str(tp) for tp in report.elected],
        errors={str(tp): e for tp, e in report.errors.items()},
        misplaced={str(tp): {"preferred": w, "leader": lead} for tp, (w, lead) in report.misplaced.items()},
    )
