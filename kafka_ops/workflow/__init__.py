"""The runbook as a library: one function per step, plain records in and out.

Airflow operators, the CLI and the Spark jobs call these; every record has ``to_dict()`` and
``from_dict()`` so it can travel between tasks as JSON (XCom). In runbook order:

1. ``read_cluster(backend)`` / ``read_snapshot_file(path)`` -> ``ClusterSnapshot``
2. ``make_plan(snapshot, PlanRequest(mode=...), pools)`` -> ``PlanProposal``
3. ``approval_digest(plan, cluster, throttle=..., summary=...)`` -> ``ApprovalDigest``
   (``content_hash``: re-checked by step 4; ``PlanChangedError`` when plan or base changed)
4. ``start_execution(backend, plan, store, ExecutionRequest(...), approved_hash=...)``,
   then ``step_execution(backend, store)`` once per poll, from any worker -> ``ExecutionStatus``
5. ``execution_progress(store)`` (no cluster access) -> ``ExecutionStatus``
6. ``request_cancel(store)`` / ``cancel_execution(store, connect)`` -> ``CancelResult``
7. ``verify_and_clear_throttles(backend, plan)`` -> ``VerifyResult``
8. ``elect_leaders(backend, plan)`` -> ``LeaderResult``
9. ``final_report(store)`` -> ``FinalReport``

A store is a directory or any fsspec URL (``open_store``); the backend is any ClusterBackend.
"""

from kafka_ops.workflow.digest import (
    ApprovalDigest,
    PlanChangedError,
    approval_digest,
    check_unchanged,
    content_hash,
)
from kafka_ops.workflow.execution import (
    CancelResult,
    ExecutionRequest,
    ExecutionStatus,
    FinalReport,
    cancel_execution,
    execution_progress,
    final_report,
    open_store,
    report_dict,
    request_cancel,
    run_execution,
    start_execution,
    state_dict,
    step_execution,
)
from kafka_ops.workflow.files import read_base, rollback_path, write_plan_pair
from kafka_ops.workflow.maintenance import LeaderResult, VerifyResult, elect_leaders, verify_and_clear_throttles
from kafka_ops.workflow.planning import MODES, PlanProposal, PlanRequest, make_plan, plan_cluster
from kafka_ops.workflow.records import OptionError, Record
from kafka_ops.workflow.snapshot import ClusterSnapshot, read_cluster, read_snapshot_file

__all__ = [
    "MODES",
    "ApprovalDigest",
    "CancelResult",
    "ClusterSnapshot",
    "ExecutionRequest",
    "ExecutionStatus",
    "FinalReport",
    "LeaderResult",
    "OptionError",
    "PlanChangedError",
    "PlanProposal",
    "PlanRequest",
    "Record",
    "VerifyResult",
    "approval_digest",
    "cancel_execution",
    "check_unchanged",
    "content_hash",
    "elect_leaders",
    "execution_progress",
    "final_report",
    "make_plan",
    "open_store",
    "plan_cluster",
    "read_base",
    "read_cluster",
    "read_snapshot_file",
    "report_dict",
    "request_cancel",
    "rollback_path",
    "run_execution",
    "start_execution",
    "state_dict",
    "step_execution",
    "verify_and_clear_throttles",
    "write_plan_pair",
]
