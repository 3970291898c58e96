"""The balance planner: Cruise Control's ordered, vetoing goals on a pure in-memory model.

Entry points are the ``plan_*`` functions of modes.py; each takes a ClusterModel (and pools)
and returns a PlanResult: a ReassignmentPlan in Kafka's JSON plus a PlanSummary. Nothing here
does I/O.
"""

from kafka_ops.planner.context import PlannerOptions
from kafka_ops.planner.goals import DEFAULT_SOFT_GOALS, GOALS, HARD_GOALS, SOFT_GOALS
from kafka_ops.planner.modes import (
    plan_add_brokers,
    plan_demote,
    plan_fix_offline,
    plan_migrate_pool,
    plan_rebalance,
    plan_remove_brokers,
    plan_replace_broker,
    plan_set_replication_factor,
)
from kafka_ops.planner.optimizer import PlanResult
from kafka_ops.planner.summary import GoalResult, PlanSummary

__all__ = [
    "DEFAULT_SOFT_GOALS",
    "GOALS",
    "HARD_GOALS",
    "SOFT_GOALS",
    "GoalResult",
    "PlanResult",
    "PlanSummary",
    "PlannerOptions",
    "plan_add_brokers",
    "plan_demote",
    "plan_fix_offline",
    "plan_migrate_pool",
    "plan_rebalance",
    "plan_remove_brokers",
    "plan_replace_broker",
    "plan_set_replication_factor",
]
