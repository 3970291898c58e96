"""The runbook's gated tail, shared by every DAG that changes replica placement:

    predict -> approve -> execute -> verify -> elect_leaders -> clear_throttles -> report
                  (any of these failing for good) -> make_safe ------------^

``predict`` simulates the plan (the predicted timeline) and writes what the rebalancing view
shows; ``approve`` is Airflow's human-in-the-loop ApprovalOperator bound to the plan's digest; Reject or
no answer in time skips everything after it, so nothing changes. ``make_safe`` cancels what is
still in flight and removes every throttle when a task after the start of execution failed for
good (after its retries), so a failed run never leaves throttles or a half-moved partition behind.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.configuration import conf
from airflow.sdk import BaseOperator, Param, TriggerRule, chain

from kafka_ops_provider.notifications.oncall import OnCallNotifier, RunOutcomeNotifier
from kafka_ops_provider.operators.approval import PlanApprovalOperator
from kafka_ops_provider.ui.operators import PredictTimelineOperator
from kafka_ops_provider.operators.execution import (
    ClearThrottlesOperator,
    ElectPreferredLeadersOperator,
    ExecuteReassignmentOperator,
    MakeSafeOperator,
    ReassignmentReportOperator,
    VerifyReassignmentOperator,
)



def gate_params() -> dict[str, Param]:
    """Params every gated DAG accepts (its trigger form), with their defaults; scheduled runs
    take the defaults, so throttle, concurrency and poll interval defaults come from
    ``[kafka_ops] throttle``, ``concurrency`` and ``poll_interval`` when set."""
    return {
        "kafka_conn_id": Param("kafka_default", type="string",
                               description="Airflow connection of type kafka (Admin API)"),
        "zookeeper_conn_id": Param("zookeeper_default", type="string",
                                   description="when this connection exists, ZooKeeper mode"),
        "throttle": Param(conf.getint("kafka_ops", "throttle", fallback=50_000_000),
                          type="integer", minimum=1,
                          description="replication throttle, bytes/s per broker"),
        "concurrency": Param(conf.getint("kafka_ops", "concurrency", fallback=2),
                             type="integer", minimum=1,
                             description="moves in and out per broker at a time"),
        "one_replica_at_a_time": Param(False, type="boolean",
                                       description="move one replica of a partition per step"),
        "dry_run": Param(False, type="boolean",
                         description="plan and digest only: nothing is asked, nothing moves"),
        "approval_timeout_minutes": Param(60, type="number", exclusiveMinimum=0,
                                          description="no answer in time: rejected"),
        "poll_interval": Param(conf.getfloat("kafka_ops", "poll_interval", fallback=2.0),
                               type="number", exclusiveMinimum=0,
                               description="seconds between progress polls (triggerer)"),
    }


def gated_execution(plan_task: BaseOperator, retries: int = 2) -> BaseOperator:
    """Append the gated tail after ``plan_task`` (which pushes the plan's digest); returns report."""
    predict = PredictTimelineOperator(
        task_id="predict", plan_task_id=plan_task.task_id,
        analysis_task_id=getattr(plan_task, "analysis_task_id", None))
    approve = PlanApprovalOperator(
        task_id="approve",
        plan_task_id=plan_task.task_id,
        notifiers=[OnCallNotifier(
            "kafka-ops: a reassignment waits for your approval in {{ dag.dag_id }} "
            "(run {{ run_id }}): open the run's 'approve' task in the Airflow UI")],
    )
    common = {"plan_task_id": plan_task.task_id, "retries": retries,
              "retry_delay": timedelta(seconds=10)}
    # Retries outlast the state store's lease (20 s) that a killed worker leaves behind.
    execute = ExecuteReassignmentOperator(task_id="execute", **{**common, "retries": 3,
                                                                "retry_delay": timedelta(seconds=15)})
    verify = VerifyReassignmentOperator(task_id="verify", **common)
    leaders = ElectPreferredLeadersOperator(task_id="elect_leaders", **common)
    clear = ClearThrottlesOperator(task_id="clear_throttles", **common)
    safe = MakeSafeOperator(task_id="make_safe", trigger_rule=TriggerRule.ONE_FAILED, **common)
    # The report runs whatever happened once execution was approved: it says what moved, or
    # what failed, that the cluster was made safe, and how to resume.
    report = ReassignmentReportOperator(task_id="report", trigger_rule=TriggerRule.ALL_DONE,
                                        on_success_callback=RunOutcomeNotifier(),
                                        on_failure_callback=RunOutcomeNotifier(), **common)
    chain(plan_task, predict, approve, execute, verify, leaders, clear)
    [execute, verify, leaders, clear] >> safe
    [clear, safe] >> report
    return report
