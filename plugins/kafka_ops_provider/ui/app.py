"""The "Kafka rebalancing" view: a FastAPI app the api-server mounts at ``/kafka-ops``.

Pages: the index (per cluster: latest analysis, plans waiting for approval, executions in
progress, past runs), a run (digest, before/after chart, predicted timeline, full diff, live
progress, predicted against actual) and its report. JSON under ``/api`` feeds the diff table
(filtered, sorted and paged on the server: a 60,000-move plan never reaches the browser whole)
and the progress panel.

Authentication is Airflow's own: the JWT the UI keeps in its ``_token`` cookie (or a Bearer
header), checked by Airflow's auth manager; without one, HTML pages redirect to Airflow's login
and the API answers 401. Approving stays in Airflow's Required Actions page (the approval
operator's body links here; this view links back there), so who may approve is Airflow's rule.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from html import escape
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse

from kafka_ops_provider.ui import analysis
from kafka_ops_provider.ui import render as r
from kafka_ops_provider.ui import runs as data

URL_PREFIX = "/kafka-ops"
TOKEN_COOKIE = "_token"  # airflow.api_fastapi.auth.managers.base_auth_manager.COOKIE_NAME_JWT_TOKEN


class _LoginRequired(Exception):
    pass


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookies.get(TOKEN_COOKIE)


async def airflow_user(request: Request) -> Any:
    """The Airflow user of this request (Airflow's auth manager decides), else login."""
    from airflow.api_fastapi.core_api.security import resolve_user_from_token

    try:
        return await resolve_user_from_token(_token(request))
    except HTTPException as e:
        raise _LoginRequired() from e


def create_app(*, authenticate: bool = True, artifacts: Path | None = None,
               airflow_api: str | None = None) -> FastAPI:
    """``authenticate=False`` and ``artifacts`` are for benchmarks and tests of the view alone;
    ``airflow_api``: where to ask which approvals wait (default: this api-server)."""
    deps = [Depends(airflow_user)] if authenticate else []
    app = FastAPI(title="kafka-ops rebalancing view", dependencies=deps, docs_url=None,
                  redoc_url=None, openapi_url=None)
    base = URL_PREFIX

    @app.exception_handler(_LoginRequired)
    async def _login(request: Request, exc: _LoginRequired) -> Any:
        if request.url.path.startswith(f"{base}/api/") or "/api/" in request.url.path:
            return JSONResponse({"detail": "Not authenticated"}, status_code=401)
        nxt = urllib.parse.quote(str(request.url), safe="")
        return RedirectResponse(f"/auth/login/?next={nxt}", status_code=302)

    def root() -> Path:
        return artifacts or data.artifacts_root()

    def get_run(dag_id: str, key: str) -> data.Run:
        run = data.find_run(dag_id, key, root())
        if run is None:
            raise HTTPException(404, f"no planned run {key!r} of {dag_id!r} under {root()}")
        return run

    def waiting(request: Request) -> dict[tuple[str, str], dict[str, Any]]:
        """Approvals Airflow says wait, keyed by (dag_id, run key), asked with the caller's
        own token so the answer is what this user may see."""
        token = _token(request)
        api = airflow_api or str(request.base_url).rstrip("/")
        if not token:
            return {}
        url = (f"{api}/api/v2/dags/~/dagRuns/~/hitlDetails?response_received=false"
               "&state=awaiting_input&limit=200")
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                body = json.loads(resp.read().decode())
        except (OSError, ValueError):
            return {}
        from kafka_ops_provider.hooks.state import run_key

        out = {}
        for item in body.get("hitl_details", []):
            ti = item.get("task_instance") or {}
            dag_id, run_id = ti.get("dag_id"), ti.get("dag_run_id")
            if dag_id and run_id:
                out[(dag_id, run_key(dag_id, run_id).split("/", 1)[1])] = {
                    **ti, "subject": item.get("subject")}
        return out

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> str:
        runs = data.list_runs(root())
        pending = waiting(request)
        by_cluster: dict[str, list[data.Run]] = {}
        for run in runs:
            by_cluster.setdefault(run.cluster, []).append(run)
        body = "<h1>Kafka rebalancing</h1>"
        if not runs:
            body += f"<p class='muted'>No planned runs yet under <code>{escape(str(root()))}</code>.</p>"
        for cluster, items in by_cluster.items():
            body += f"<h2 data-testid='cluster'>Cluster {escape(cluster)}</h2>"
            body += analysis.panel(root(), f"{base}/analysis/charts")
            groups: dict[str, list[list[str]]] = {"Waiting for approval": [], "In progress": [],
                                                  "Planned, not executed": [], "Past runs": []}
            for run in items:
                status = run.status()
                planned = run.planned or {}
                d = planned.get("digest") or {}
                link = (f"<a data-testid='run-link' href='{r.run_url(base, run.dag_id, run.key)}'>"
                        f"{escape(run.dag_id)} / {escape(run.key)}</a>")
                row = [link, r.badge("waiting" if (run.dag_id, run.key) in pending else status),
                       str(d.get("replica_moves", "?")), r.fmt_bytes(d.get("bytes_to_move"))]
                if (run.dag_id, run.key) in pending and status == "planned":
                    groups["Waiting for approval"].append(row)
                elif status in ("running", "cancelling"):
                    groups["In progress"].append(row)
                elif status == "planned":
                    groups["Planned, not executed"].append(row)
                else:
                    groups["Past runs"].append(row)
            for title, rows in groups.items():
                if rows:
                    body += f"<h3>{title}</h3>" + r.table(["run", "status", "moves", "bytes"], rows)
        return r.page("Kafka rebalancing", body, base)

    @app.get("/runs/{dag_id}/{key}", response_class=HTMLResponse)
    def run_page(dag_id: str, key: str, request: Request) -> str:
        run = get_run(dag_id, key)
        # Index the diff while the browser renders this page: its first fetch finds it ready.
        threading.Thread(target=run.diff, daemon=True).start()
        planned = run.planned or {}
        url = r.run_url(base, dag_id, key)
        run_id = planned.get("run_id") or key
        approve = (f"/dags/{urllib.parse.quote(dag_id)}/runs/{urllib.parse.quote(run_id, safe='')}"
                   f"/tasks/approve/required_actions")
        state = run.state()
        body = (f"<h1>{escape(dag_id)} / {escape(key)} {r.badge(run.status())}</h1>"
                f"<p>Cluster <b>{escape(run.cluster)}</b>. Approve or reject in Airflow: "
                f"<a data-testid='approve-link' href='{approve}' target='_top'>Required actions "
                f"of this run</a>.</p><h2>What Approve means</h2>{r.digest_table(planned)}")
        body += "<h2>Broker load, before and after</h2>" + _before_after_html(run.brokers)
        if run.chart():
            body += (f"<img data-testid='chart' src='{url}/chart.png' style='max-width:100%' "
                     "alt='before/after chart (the plan task)'>")
        body += "<h2>Predicted timeline</h2>" + _prediction_html(run.prediction, state, run)
        body += (f"<h2>Execution</h2><div id='progress' data-api='{base}/api/runs/"
                 f"{urllib.parse.quote(dag_id, safe='')}/{urllib.parse.quote(key, safe='')}"
                 f"/progress'>{r.progress_html(run.progress(state) if state else None, url + '/report')}"
                 f"</div>{r.PROGRESS_SCRIPT}")
        body += ("<h2>Full diff</h2>" + r.diff_section(
            f"{base}/api/runs/{urllib.parse.quote(dag_id, safe='')}/"
            f"{urllib.parse.quote(key, safe='')}/diff"))
        return r.page(f"{dag_id} {key}", body, base)

    @app.get("/runs/{dag_id}/{key}/chart.png")
    def chart(dag_id: str, key: str) -> FileResponse:
        path = get_run(dag_id, key).chart()
        if path is None:
            raise HTTPException(404, "this run has no chart")
        return FileResponse(path, media_type="image/png")

    @app.get("/analysis/charts/{name}")
    def analysis_chart(name: str) -> FileResponse:
        found = analysis.latest(root())
        path = analysis.chart_file(*found, name) if found else None
        if path is None:
            raise HTTPException(404, f"the latest analysis has no chart {name!r}")
        return FileResponse(path, media_type="image/png")

    @app.get("/runs/{dag_id}/{key}/report", response_class=HTMLResponse)
    def report_page(dag_id: str, key: str) -> str:
        run = get_run(dag_id, key)
        return r.page(f"Report {dag_id} {key}", _report_html(run, base), base)

    @app.get("/api/runs")
    def api_runs() -> list[dict[str, Any]]:
        return [{"dag_id": x.dag_id, "key": x.key, "cluster": x.cluster, "status": x.status(),
                 "digest": (x.planned or {}).get("digest")} for x in data.list_runs(root())]

    @app.get("/api/runs/{dag_id}/{key}/diff")
    def api_diff(dag_id: str, key: str, topic: str = "", broker: str = "", sort: str = "topic",
                 desc: str = "", offset: int = 0, limit: int = 100) -> dict[str, Any]:
        started = time.perf_counter()
        index = get_run(dag_id, key).diff()
        if index is None:
            raise HTTPException(404, "this run has no diff.json")
        try:
            broker_id = int(broker) if broker.strip() else None
        except ValueError:
            raise HTTPException(422, f"broker must be a broker id (an integer), not {broker!r}") from None
        try:
            total, rows = index.query(topic, broker_id, sort, bool(desc), offset, limit)
        except ValueError as e:
            raise HTTPException(422, str(e)) from None
        return {"total": total, "offset": offset, "millis": 1000 * (time.perf_counter() - started),
                "rows": [{"topic": x.topic, "partition": x.partition, "before": list(x.before),
                          "after": list(x.after), "adding": list(x.adding),
                          "removing": list(x.removing), "size": x.size,
                          "size_text": r.fmt_bytes(x.size), "leader_before": x.leader_before,
                          "leader_after": x.leader_after} for x in rows]}

    @app.get("/api/runs/{dag_id}/{key}/progress")
    def api_progress(dag_id: str, key: str) -> dict[str, Any]:
        run = get_run(dag_id, key)
        state = run.state()
        p = run.progress(state) if state else None
        html = r.progress_html(p, r.run_url(base, dag_id, key) + "/report")
        return {"status": (p or {}).get("status") or "planned", "progress": p, "html": html}

    return app


def _before_after_html(brokers: list[dict[str, Any]] | None) -> str:
    """Inline SVG per broker, before against after: replicas, preferred leaders, disk."""
    if not brokers:
        return "<p class='muted'>No per-broker totals for this plan.</p>"
    labels = [str(b["broker"]) for b in brokers]
    out = ""
    for key, title, unit in (("replicas", "Replicas", ""), ("leaders", "Preferred leaders", ""),
                             ("disk", "Bytes on disk", "B")):
        out += f"<h3>{title} per broker</h3>" + r.grouped_bars(labels, [
            ("before", "#9ca3af", [float(b[key][0]) for b in brokers]),
            ("after", "#017cee", [float(b[key][1]) for b in brokers]),
        ], unit=unit, testid=f"before-after-{key}")
    return out


def actual_curve(state: dict[str, Any], sizes: dict[tuple[str, int], int] | None = None
                 ) -> list[tuple[float, float]]:
    """Bytes done over time in the real execution, from its tasks' finish times."""
    runtime = state.get("runtime") or {}
    start = float(runtime.get("run_started") or state.get("started_at") or 0.0)
    done = sorted((t["finished_at"], data.task_size(t, sizes)
                   * len([b for b in t["target"] if b not in t["source"]]))
                  for t in state.get("tasks") or []
                  if t.get("state") == "completed" and t.get("finished_at") is not None)
    points, total = [(0.0, 0.0)], 0
    for t, moved in done:
        total += moved
        points.append((max(t - start, 0.0), float(total)))
    return points


def _prediction_html(pred: dict[str, Any] | None, state: dict[str, Any] | None,
                     run: data.Run | None = None) -> str:
    if not pred:
        return "<p class='muted'>No prediction for this plan.</p>"
    samples = pred.get("samples") or []
    o = pred.get("options") or {}
    out = r.table(["", ""], [
        ["Predicted duration", f"<span data-testid='predicted-duration' data-seconds="
                               f"'{pred['duration']:.1f}'>{r.fmt_duration(pred['duration'])}</span>"],
        ["Simulated with", escape(f"throttle {r.fmt_bytes(o.get('throttle'))}/s, "
                                  f"{o.get('incoming_per_broker')} in / {o.get('outgoing_per_broker')}"
                                  f" out per broker, {o.get('in_flight')} in flight, poll "
                                  f"{o.get('poll_interval')} s, "
                                  f"{'pipelined' if o.get('incremental') else 'batches'}")],
        ["Outcome of the simulation", escape(str(pred.get("status")))],
    ], "class='figs'")
    series = [("moves done (predicted)", "#017cee", [(s[0], s[1]) for s in samples]),
              ("in flight (predicted)", "#f59e0b", [(s[0], s[2]) for s in samples])]
    out += r.line_chart(series, x_label="seconds", y_label="moves", testid="timeline")
    bytes_series = [("bytes done (predicted)", "#017cee", [(s[0], s[4]) for s in samples])]
    if state:
        index = run.diff() if run is not None else None
        actual = actual_curve(state, index.sizes if index is not None else None)
        bytes_series.append(("bytes done (actual)", "#16a34a", actual))
        if state.get("status") == "completed" and pred["duration"] > 0:
            elapsed = ((state.get("runtime") or {}).get("report") or {}).get("elapsed")
            if elapsed is not None:
                err = 100.0 * (elapsed - pred["duration"]) / pred["duration"]
                out += (f"<p data-testid='predicted-vs-actual'>Actual {r.fmt_duration(elapsed)} "
                        f"against predicted {r.fmt_duration(pred['duration'])}: "
                        f"{err:+.1f}%.</p>")
    out += r.line_chart(bytes_series, x_label="seconds", y_label="bytes", testid="bytes-timeline")
    peak = {f"b{b}": v for b, v in sorted(pred.get("peak_in", {}).items(), key=lambda x: int(x[0]))}
    out += "<h3>Peak replication traffic received, per broker (predicted)</h3>"
    out += r.bar_chart(peak, unit="B/s", testid="peak-in")
    return out


def _report_html(run: data.Run, base: str) -> str:
    planned = run.planned or {}
    state = run.state()
    body = f"<h1>Report: {escape(run.dag_id)} / {escape(run.key)} {r.badge(run.status())}</h1>"
    if state is None:
        return body + "<p>This plan was never executed (rejected, expired, or still waiting).</p>"
    p = run.progress(state)
    report = p.get("report") or {}
    body += r.table(["", ""], [
        ["Outcome", f"<span data-testid='report-status'>{escape(str(report.get('status', p['status'])))}"
                    f"</span>: {escape(str(report.get('message') or p.get('message') or ''))}"],
        ["Moved", f"<span data-testid='report-moved'>{p['completed']}</span> of {p['total']} "
                  f"partitions, {r.fmt_bytes(p['bytes_done'])}"],
        ["How long", r.fmt_duration(report.get("elapsed", p["elapsed"]))],
        ["Throttles left set", str(len(p["throttles"]["brokers"]))],
        ["Rollback plan", escape(str(report.get("rollback_path") or planned.get("rollback_path")))],
    ], "class='figs'")
    goals = (planned.get("digest") or {}).get("goals") or []
    if goals:
        body += "<h2>Before and after, per goal</h2>" + r.table(
            ["goal", "before", "after (planned)"],
            [[escape(str(g.get("name"))), escape(r._figures(g.get("before"))),
              escape(r._figures(g.get("after")))] for g in goals])
    if run.chart():
        body += (f"<h2>Broker load</h2><img src='{r.run_url(base, run.dag_id, run.key)}/chart.png'"
                 " style='max-width:100%'>")
    body += "<h2>Predicted against actual</h2>" + _prediction_html(run.prediction, state, run)
    skipped = state.get("skipped") or []
    body += f"<h2>Skipped ({len(skipped)})</h2>"
    if skipped:
        body += r.table(["topic", "partition", "why"],
                        [[escape(t), str(pn), escape(why)] for t, pn, why in skipped[:500]])
    failed = [t for t in state.get("tasks") or [] if t["state"] in ("dead", "aborted")]
    if failed:
        body += "<h2>Not moved</h2>" + r.table(
            ["topic", "partition", "state", "error"],
            [[escape(t["topic"]), str(t["partition"]), t["state"], escape(str(t.get("error") or ""))]
             for t in failed[:500]])
    body += (f"<h2>What moved</h2><p>The full diff is on the <a href='"
             f"{r.run_url(base, run.dag_id, run.key)}'>run page</a>.</p>")
    return body
