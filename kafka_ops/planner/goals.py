"""The goal registry: every goal by name, the hard goals' fixed order, the default soft order.

Goals are looked up in this explicit dict (never loaded by class name from configuration), and
are stateless, so one instance serves every run.
"""

from __future__ import annotations

from typing import Protocol

from kafka_ops.errors import ValidationError
from kafka_ops.planner.balance import BalanceGoal
from kafka_ops.planner.replica_count import ReplicaCountGoal
from kafka_ops.planner.context import Goal, Run
from kafka_ops.planner.hard import (
    BrokerExclusionsGoal,
    HardGoal,
    CapacityGoal,
    DistinctBrokersGoal,
    PoolMembershipGoal,
    RackAwarenessGoal,
)
from kafka_ops.planner.topic import TopicGoal


class SoftGoal(Goal, Protocol):
    def imbalance(self, run: Run) -> float:
        """One number, lower is better: the optimizer's "not worse" check compares it."""
        ...


HARD_GOALS: tuple[HardGoal, ...] = (
    DistinctBrokersGoal(),
    BrokerExclusionsGoal(),
    PoolMembershipGoal(),
    RackAwarenessGoal(),
    CapacityGoal(),
)

SOFT_GOALS: dict[str, SoftGoal] = {
    g.name: g
    for g in (
        ReplicaCountGoal(),
        BalanceGoal("leader_count", "leaders", 0.0),
        BalanceGoal("disk", "disk", 0.025),
        BalanceGoal("network_in", "network_in", 0.05),
        BalanceGoal("network_out", "network_out", 0.05),
        BalanceGoal("leader_bytes_in", "leader_bytes_in", 0.10),
        TopicGoal("topic_replica_distribution", leaders=False),
        TopicGoal("topic_leader_dispersion", leaders=True),
    )
}

DEFAULT_SOFT_GOALS: tuple[str, ...] = tuple(SOFT_GOALS)
GOALS: dict[str, Goal] = {**{g.name: g for g in HARD_GOALS}, **SOFT_GOALS}


def soft_goals(names: tuple[str, ...] | None) -> list[SoftGoal]:
    """Soft goals in the user's priority order; unknown or repeated names are an error."""
    if names is None:
        names = DEFAULT_SOFT_GOALS
    out = []
    for name in names:
        if name in (g.name for g in HARD_GOALS):
            raise ValidationError(f"goal {name!r} is a hard goal: it always runs first")
        if name not in SOFT_GOALS:
            raise ValidationError(f"unknown goal {name!r}; soft goals: {', '.join(SOFT_GOALS)}")
        if SOFT_GOALS[name] in out:
            raise ValidationError(f"goal {name!r} is listed twice")
        out.append(SOFT_GOALS[name])
    return out
