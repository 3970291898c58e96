"""The ``predict`` task: between plan and approval, so on-call sees the timeline before deciding.

It reads the live cluster once (the same connection the plan used), lays the analysis' measured
loads over it when the run has one (sizes and produce traffic from the metrics, not guesses),
simulates the plan with the run's throttle and concurrency on the emulator's replication model
(kafka_ops.predict), and writes the view's files next to the plan. A failed simulation
never blocks the gate: the approval is still asked, and the view says there is no prediction.
"""

from __future__ import annotations

from typing import Any

from kafka_ops_provider.operators.base import KafkaOpsOperator

SNAPSHOT = "cluster-before.json"  # written by the plan task next to plan.json


def execution_options(params: dict[str, Any]) -> Any:
    """The ExecutionOptions the execute task will run with, from the run's Params, through the
    workflow API's own ExecutionRequest (one mapping, so the simulation cannot drift from it)."""
    from kafka_ops.workflow import ExecutionRequest

    concurrency = int(params.get("concurrency") or 2)
    return ExecutionRequest(
        throttle=int(params["throttle"]) if params.get("throttle") else None,
        max_incoming=concurrency, max_outgoing=concurrency,
        one_replica_at_a_time=bool(params.get("one_replica_at_a_time")),
        poll_interval=float(params.get("poll_interval") or 5.0),
        elect_leaders=False,
    ).options()


class PredictTimelineOperator(KafkaOpsOperator):
    """Simulate the plan pushed by ``plan_task_id``; write planned/diff/prediction files;
    pass the plan task's XCom on unchanged (the approval reads it from here or from plan)."""

    ui_color = "#ddd6fe"

    def __init__(self, *, analysis_task_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analysis_task_id = analysis_task_id

    def execute(self, context: Any) -> Any:
        from kafka_ops.plan import ReassignmentPlan
        from kafka_ops.predict import predict
        from kafka_ops.snapshot import load_snapshot
        from kafka_ops_provider.ui.files import write_run_files

        pushed = self.planned(context)
        # The view needs the digest and the paths, not the plan twice (it has diff.json).
        planned = {k: v for k, v in pushed.items() if k not in ("plan", "rollback")}
        planned.update(run_id=context["run_id"], dag_id=context["dag"].dag_id)
        plan = ReassignmentPlan.read(planned["plan_path"])
        out = self.artifacts(context)
        with self.cluster_hook(context).backend() as backend:
            incremental = bool(getattr(backend, "supports_incremental_reassignment", True))
            # The state the plan was made from, with the loads it used (sizes, measured
            # traffic): what the digest's hash binds. The live cluster only when absent.
            if (out / SNAPSHOT).is_file():
                model = load_snapshot(out / SNAPSHOT)
            else:
                model = self._with_measured_loads(context, backend.describe_cluster())
        prediction = None
        try:
            result = predict(model, plan, execution_options(dict(context["params"])),
                             incremental=incremental)
            prediction = result.to_dict()
            self.log.info("predicted: %s, %.0f s (simulated in %.1f s), peak replication in "
                          "%s", result.status, result.duration, result.wall_seconds,
                          {b: round(v) for b, v in sorted(result.peak_in.items())})
        except Exception as e:  # the gate must still be asked; the view says why nothing shows
            self.log.warning("no prediction: %s: %s", type(e).__name__, e)
        out = write_run_files(out, planned, model, plan, prediction)
        self.log.info("rebalancing view files in %s", out)
        return planned

    def _with_measured_loads(self, context: Any, model: Any) -> Any:
        if not self.analysis_task_id:
            return model
        pulled = context["ti"].xcom_pull(task_ids=self.analysis_task_id) or {}
        if not pulled.get("analysis"):
            return model
        try:
            from kafka_ops.loads import AnalysisOutputSource, with_loads

            return with_loads(model, AnalysisOutputSource(pulled["analysis"]))[0]
        except Exception as e:  # sizes then come from the backend (log dirs) as read
            self.log.warning("analysis loads not used for the prediction: %s", e)
            return model
