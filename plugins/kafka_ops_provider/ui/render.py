"""HTML and SVG for the rebalancing view: server-rendered, no build step, no external assets.

The pages must open fast at 3 a.m. on a laptop over a VPN: one HTML document, inline SVG charts
(a few hundred points at most), and two small scripts (the diff table pages through the JSON
API; the progress panel polls it). Everything shown is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from kafka_ops.formatting import format_bytes, format_duration

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2937;background:#f8fafc}
header{background:#017cee;color:#fff;padding:10px 20px}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:16px 20px;max-width:1200px}h1{font-size:22px}h2{font-size:18px;margin-top:28px}
table{border-collapse:collapse;background:#fff;font-size:13px}
td,th{border:1px solid #e5e7eb;padding:4px 8px;text-align:left}
th{background:#f1f5f9}th a{color:inherit}.figs td:first-child{font-weight:600}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;font-size:12px;background:#e5e7eb}
.planned{background:#fde68a}.running{background:#bfdbfe}.completed{background:#bbf7d0}
.failed,.paused,.cancelled{background:#fecaca}.muted{color:#6b7280}
.bar{height:14px;background:#e5e7eb;border-radius:7px;overflow:hidden;width:420px}
.bar>div{height:100%;background:#16a34a}form.filters input,form.filters select{margin-right:8px}
svg text{font-size:11px;fill:#374151}
"""


def fmt_bytes(n: float | None) -> str:
    return "?" if n is None else format_bytes(n, decimal=True)


def fmt_duration(seconds: float | None) -> str:
    return format_duration(seconds, words=True)


def page(title: str, body: str, base: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body><header><a href='{base}/'>Kafka rebalancing</a>"
            f" <span class='muted' style='color:#dbeafe'>kafka-ops</span></header>"
            f"<main>{body}</main></body></html>")


def badge(status: str) -> str:
    return f"<span class='badge {escape(status)}' data-testid='status'>{escape(status)}</span>"


def run_url(base: str, dag_id: str, key: str) -> str:
    return f"{base}/runs/{quote(dag_id, safe='')}/{quote(key, safe='')}"


def table(headers: list[str], rows: list[list[str]], attrs: str = "") -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def line_chart(series: list[tuple[str, str, list[tuple[float, float]]]], *, width: int = 640,
               height: int = 220, x_label: str = "", y_label: str = "", testid: str = "") -> str:
    """Polylines (name, colour, points) on shared axes starting at 0."""
    pts = [p for _, _, s in series for p in s]
    if not pts:
        return "<p class='muted'>no data</p>"
    xmax = max(x for x, _ in pts) or 1.0
    ymax = max(y for _, y in pts) or 1.0
    left, bottom, top, right = 50, 30, 26, 10
    w, h = width - left - right, height - top - bottom

    def xy(x: float, y: float) -> str:
        return f"{left + w * x / xmax:.1f},{top + h - h * y / ymax:.1f}"

    lines = "".join(
        f"<polyline fill='none' stroke='{colour}' stroke-width='2' points='"
        + " ".join(xy(x, y) for x, y in s) + f"'><title>{escape(name)}</title></polyline>"
        for name, colour, s in series)
    legend = "".join(f"<text x='{left + 10 + 160 * i}' y='14' style='fill:{c}'>"
                     f"&#9632; {escape(n)}</text>" for i, (n, c, _) in enumerate(series))
    axes = (f"<line x1='{left}' y1='{top + h}' x2='{left + w}' y2='{top + h}' stroke='#9ca3af'/>"
            f"<line x1='{left}' y1='{top}' x2='{left}' y2='{top + h}' stroke='#9ca3af'/>"
            f"<text x='{left}' y='{height - 8}'>0</text>"
            f"<text x='{left + w - 80}' y='{height - 8}'>{escape(x_label)}</text>"
            f"<text x='2' y='{top + 10}'>{escape(y_label)}</text>")
    return (f"<svg data-testid='{testid}' width='{width}' height='{height}' "
            f"style='background:#fff'>{axes}{lines}{legend}</svg>")


def bar_chart(values: dict[str, float], *, width: int = 640, height: int = 180,
              unit: str = "", testid: str = "") -> str:
    if not values:
        return "<p class='muted'>no data</p>"
    items = list(values.items())[:200]
    vmax = max(v for _, v in items) or 1.0
    left, bottom = 50, 30
    w, h = width - left - 10, height - bottom - 10
    bw = w / len(items)
    bars = "".join(
        f"<rect x='{left + i * bw:.1f}' y='{10 + h - h * v / vmax:.1f}' width='{max(bw - 2, 1):.1f}'"
        f" height='{h * v / vmax:.1f}' fill='#017cee'><title>{escape(k)}: {v:,.0f} {unit}</title>"
        f"</rect>" + (f"<text x='{left + i * bw:.1f}' y='{height - 12}'>{escape(k)}</text>"
                      if len(items) <= 40 else "")
        for i, (k, v) in enumerate(items))
    return (f"<svg data-testid='{testid}' width='{width}' height='{height}' style='background:#fff'>"
            f"<text x='2' y='12'>{escape(fmt_bytes(vmax))}/s</text>{bars}</svg>")


def _figures(values: Any) -> str:
    if isinstance(values, dict):
        return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in values.items()) or "-"
    return str(values)


def digest_table(planned: dict[str, Any]) -> str:
    """The workflow API's approval digest (kafka_ops.workflow.ApprovalDigest.to_dict())."""
    d = planned.get("digest") or {}
    rows = [
        ["Digest", f"<code data-testid='digest-hash'>{escape(str(d.get('content_hash', '?')))}</code>"],
        ["Mode", escape(str(planned.get("mode", "?")))],
        ["Replica moves", f"<span data-testid='digest-moves'>{d.get('replica_moves', '?')}</span>"],
        ["Partitions", f"<span data-testid='digest-partitions'>{d.get('partitions', '?')}</span>"],
        ["Bytes to copy", f"<span data-testid='digest-bytes' data-value='{d.get('bytes_to_move', '')}'>"
                          f"{fmt_bytes(d.get('bytes_to_move'))}</span>"],
        ["Throttle", f"{fmt_bytes(d.get('throttle_bytes_per_sec'))}/s per broker"],
        ["Estimated duration (bytes / throttle)", fmt_duration(d.get("estimated_seconds"))],
        ["Leadership changes", f"<span data-testid='digest-leaders'>{d.get('leader_changes', 0)}</span>"],
        ["Loads", escape(str(planned.get("loads") or "from the cluster (sizes; no measured rates)"))],
    ]
    goals = d.get("goals") or []
    risks = d.get("risks") or []
    out = table(["", ""], rows, "class='figs' data-testid='digest'")
    if goals:
        out += "<h3>Goals, before and after</h3>" + table(
            ["goal", "status", "before", "after"],
            [[escape(str(g.get("name"))) + (" (hard)" if g.get("hard") else ""),
              escape(str(g.get("status", ""))), escape(_figures(g.get("before"))),
              escape(_figures(g.get("after")))] for g in goals], "data-testid='goals'")
    out += ("<h3>Risks</h3><ul>" + "".join(f"<li>{escape(str(r))}</li>" for r in risks) + "</ul>"
            if risks else "<p><b>Risks:</b> none found</p>")
    busiest = sorted(d.get("brokers") or [], key=lambda b: -(b.get("bytes_in", 0) + b.get("bytes_out", 0)))
    if busiest:
        out += "<h3>Brokers most affected</h3>" + table(
            ["broker", "replicas in / out", "leaders + / -", "bytes in / out"],
            [[str(b["broker"]), f"{b.get('replicas_in')} / {b.get('replicas_out')}",
              f"+{b.get('leaders_gained')} / -{b.get('leaders_lost')}",
              f"{fmt_bytes(b.get('bytes_in'))} / {fmt_bytes(b.get('bytes_out'))}"]
             for b in busiest[:10]])
    return out


DIFF_SCRIPT = """
<script>
(function(){
  const api = document.getElementById('diff').dataset.api;
  const form = document.getElementById('diff-filters');
  const state = {offset: 0, limit: 100};
  async function load(){
    const q = new URLSearchParams(new FormData(form));
    q.set('offset', state.offset); q.set('limit', state.limit);
    const r = await fetch(api + '?' + q.toString(), {credentials: 'same-origin'});
    const d = await r.json();
    const body = document.querySelector('#diff tbody');
    body.innerHTML = '';
    for (const row of d.rows) {
      const tr = document.createElement('tr');
      const cells = [row.topic, row.partition, row.before.join(','), row.after.join(','),
                     row.adding.join(','), row.removing.join(','), row.size_text,
                     row.leader_before === row.leader_after ? '' : row.leader_before + ' → ' + row.leader_after];
      for (const c of cells) { const td = document.createElement('td'); td.textContent = c; tr.appendChild(td); }
      body.appendChild(tr);
    }
    document.getElementById('diff-count').textContent = d.total + ' partitions match; showing ' +
      (d.total ? state.offset + 1 : 0) + '–' + (state.offset + d.rows.length) + ' (' + d.millis.toFixed(1) + ' ms)';
    document.getElementById('diff-count').dataset.total = d.total;
  }
  form.addEventListener('submit', e => { e.preventDefault(); state.offset = 0; load(); });
  document.getElementById('diff-prev').onclick = () => {
    state.offset = Math.max(0, state.offset - state.limit); load(); };
  document.getElementById('diff-next').onclick = () => { state.offset += state.limit; load(); };
  load();
})();
</script>
"""


def diff_section(api: str) -> str:
    return f"""
<form id='diff-filters' class='filters'>
  topic <input name='topic' data-testid='diff-topic' placeholder='substring'>
  broker <input name='broker' data-testid='diff-broker' size='6' placeholder='id'>
  sort <select name='sort' data-testid='diff-sort'><option value='topic'>topic</option>
  <option value='size'>size</option><option value='moves'>replicas added</option></select>
  <label><input type='checkbox' name='desc' value='1'> descending</label>
  <button type='submit' data-testid='diff-apply'>apply</button>
  <button type='button' id='diff-prev'>&lsaquo; prev</button><button type='button' id='diff-next'>next &rsaquo;</button>
</form>
<p id='diff-count' data-testid='diff-count' class='muted'>loading…</p>
<table id='diff' data-api='{escape(api)}' data-testid='diff'><thead><tr><th>topic</th><th>partition</th>
<th>before</th><th>after</th><th>adding</th><th>removing</th><th>size</th><th>leader</th></tr></thead>
<tbody></tbody></table>{DIFF_SCRIPT}"""


PROGRESS_SCRIPT = """
<script>
(function(){
  const el = document.getElementById('progress');
  async function poll(){
    const r = await fetch(el.dataset.api, {credentials: 'same-origin'});
    if (r.ok) { const d = await r.json(); el.innerHTML = d.html; el.dataset.status = d.status;
      if (['completed','failed','cancelled','paused'].includes(d.status)) return; }
    setTimeout(poll, 2000);
  }
  poll();
})();
</script>
"""


def progress_html(p: dict[str, Any] | None, report_url: str) -> str:
    if p is None:
        return ("<p data-testid='progress-status' data-status='planned'>Not started: the plan "
                "waits for approval (or was rejected or expired).</p>")
    frac = p["bytes_done"] / p["bytes_total"] if p["bytes_total"] else (
        1.0 if p["status"] == "completed" else 0.0)
    throttles = p["throttles"]["brokers"]
    rows = [
        ["Status", badge(str(p["status"])) + " " + escape(p.get("message") or "")],
        ["Moves done", f"<span data-testid='moves-done'>{p['completed']}</span> / "
                       f"<span data-testid='moves-total'>{p['total']}</span>"],
        ["In flight", f"<span data-testid='moves-in-flight'>{p['in_flight']}</span>"],
        ["Pending", f"<span data-testid='moves-pending'>{p['pending']}</span>"],
        ["Aborted / failed / skipped", f"{p['aborted']} / {p['dead']} / {p['skipped']}"],
        ["Bytes", f"{fmt_bytes(p['bytes_done'])} of {fmt_bytes(p['bytes_total'])}"
                  f"<div class='bar'><div style='width:{100 * frac:.1f}%'></div></div>"],
        ["Elapsed", fmt_duration(p["elapsed"])],
        ["ETA", fmt_duration(p["eta_seconds"])],
        ["Throttles set", f"<span data-testid='throttles'>{len(throttles)} brokers</span>"
                          + (": " + ", ".join(f"{escape(str(b))}" for b in sorted(throttles))
                             if throttles else "")],
    ]
    out = (f"<span data-testid='progress-status' data-status='{escape(str(p['status']))}'></span>"
           + table(["", ""], rows, "class='figs'"))
    if p["brokers"]:
        out += "<h3>Per broker (replication in)</h3>" + table(
            ["broker", "moves in flight", "average rate since start"],
            [[str(b["broker"]), str(b["in_flight"]), f"{fmt_bytes(b['avg_rate'])}/s"]
             for b in p["brokers"]])
    if p["status"] not in ("running", "cancelling", None):
        out += f"<p><a href='{report_url}' data-testid='report-link'>Open the run report</a></p>"
    return out


def grouped_bars(labels: list[str], series: list[tuple[str, str, list[float]]], *,
                 width: int = 900, height: int = 220, unit: str = "", testid: str = "") -> str:
    """Bars per label, one per series side by side (before/after per broker); at most 200
    labels (the busiest first is the caller's choice)."""
    labels = labels[:200]
    if not labels or not series:
        return "<p class='muted'>no data</p>"
    vmax = max((v for _, _, vs in series for v in vs[:len(labels)]), default=0.0) or 1.0
    left, bottom, top = 60, 30, 22
    w, h = width - left - 10, height - bottom - top
    slot = w / len(labels)
    bw = max(slot / (len(series) + 0.5), 0.5)
    parts = []
    for i, label in enumerate(labels):
        for j, (name, colour, values) in enumerate(series):
            v = values[i]
            bh = h * v / vmax
            parts.append(f"<rect x='{left + i * slot + j * bw:.1f}' y='{top + h - bh:.1f}' "
                         f"width='{max(bw - 0.5, 0.5):.1f}' height='{bh:.1f}' fill='{colour}'>"
                         f"<title>{escape(label)} {escape(name)}: {_value(v, unit)}</title></rect>")
        if len(labels) <= 40:
            parts.append(f"<text x='{left + i * slot:.1f}' y='{height - 12}'>{escape(label)}</text>")
    legend = "".join(f"<text x='{left + 10 + 170 * j}' y='14' style='fill:{c}'>&#9632; {escape(n)}</text>"
                     for j, (n, c, _) in enumerate(series))
    axis = (f"<line x1='{left}' y1='{top + h}' x2='{left + w}' y2='{top + h}' stroke='#9ca3af'/>"
            f"<text x='2' y='{top + 10}'>{escape(_value(vmax, unit))}</text>")
    return (f"<svg data-testid='{testid}' width='{width}' height='{height}' "
            f"style='background:#fff'>{axis}{''.join(parts)}{legend}</svg>")


def imbalance_chart(imbalance: dict[str, Any], *, width: int = 640, testid: str = "") -> str:
    """Per resource: max / mean over live brokers, against its threshold; red when out of
    balance (some broker above mean x threshold), green otherwise."""
    rows = [(k, v) for k, v in imbalance.items() if isinstance(v, dict)]
    if not rows:
        return "<p class='muted'>no data</p>"
    ratios = [float(v.get("max_over_mean") or 0.0) for _, v in rows]
    scale = max([*ratios, *(float(v.get("threshold") or 1.0) for _, v in rows), 1.0]) * 1.1
    left, row_h = 130, 24
    w = width - left - 80
    height = row_h * len(rows) + 24
    parts = []
    for i, ((name, v), ratio) in enumerate(zip(rows, ratios, strict=True)):
        y = 8 + i * row_h
        colour = "#16a34a" if v.get("balanced") else "#dc2626"
        threshold = float(v.get("threshold") or 1.0)
        over = ", ".join(str(b) for b in (v.get("brokers_over") or [])[:12])
        parts.append(
            f"<text x='4' y='{y + 14}'>{escape(name.replace('_', ' '))}</text>"
            f"<rect data-resource='{escape(name)}' data-ratio='{ratio:.4f}' x='{left}' y='{y + 2}' "
            f"width='{w * ratio / scale:.1f}' height='{row_h - 8}' fill='{colour}'><title>"
            f"{escape(name)}: max/mean {ratio:.2f} (threshold {threshold:.2f})"
            f"{'; above: brokers ' + escape(over) if over else ''}</title></rect>"
            f"<line x1='{left + w * threshold / scale:.1f}' y1='{y}' "
            f"x2='{left + w * threshold / scale:.1f}' y2='{y + row_h - 4}' stroke='#111827' "
            f"stroke-dasharray='3,2'/>"
            f"<text x='{left + w * ratio / scale + 4:.1f}' y='{y + 14}'>{ratio:.2f}</text>")
    return (f"<svg data-testid='{testid}' width='{width}' height='{height}' style='background:#fff'>"
            f"{''.join(parts)}<text x='{left}' y='{height - 4}'>max / mean over live brokers; "
            f"dashed: threshold</text></svg>")


def _value(v: float, unit: str) -> str:
    if unit == "B":
        return fmt_bytes(v)
    if unit == "B/s":
        return f"{fmt_bytes(v)}/s"
    return f"{v:,.0f}{(' ' + unit) if unit else ''}"
