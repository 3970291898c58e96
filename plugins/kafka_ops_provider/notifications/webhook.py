"""On-call notifications as Slack-compatible webhook posts (`kafka_ops_webhook`, conn_type http).

Events: an approval waits (the approval task's notifier), a run finished, failed or paused (the
report task's callbacks). The payload is Slack's incoming-webhook shape (``text`` as the
fallback, ``blocks`` with a header, the figures and a button to the rebalancing view), which
Mattermost, Rocket.Chat, Teams' Slack-compatible endpoints and most chat relays accept.

Connection: ``host`` is the webhook URL, or a host with ``schema``/``port`` and the path in
extra ``{"endpoint": "/services/..."}``; a ``password`` is sent as a Bearer token. A webhook URL
usually *is* a secret (Slack's carries its token in the path): it is never logged, and the
message is built only from the run's own figures (DAG, run, counts, bytes, digest hash, links),
never from connection fields or configs. A post that fails is logged (without the URL) and does
not fail the task: a dead chat must not stop a rebalance, and the inbox file still has the event.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

WEBHOOK_CONN = "kafka_ops_webhook"
COLOURS = {"approval": "#f59e0b", "completed": "#16a34a", "failed": "#dc2626",
           "paused": "#dc2626", "cancelled": "#6b7280"}


def slack_payload(title: str, fields: list[tuple[str, str]], link: str | None,
                  event: str) -> dict[str, Any]:
    """Slack's incoming-webhook body: plain ``text`` for notifications, ``blocks`` to show."""
    lines = [f"*{k}:* {v}" for k, v in fields]
    text = f"{title}\n" + "\n".join(f"{k}: {v}" for k, v in fields)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines) or " "}},
    ]
    if link:
        text += f"\n{link}"
        blocks.append({"type": "actions", "elements": [{
            "type": "button", "text": {"type": "plain_text", "text": "Open in Airflow"},
            "url": link}]})
    return {"text": text, "blocks": blocks,
            "attachments": [{"color": COLOURS.get(event, "#017cee"), "fallback": title}],
            "kafka_ops": {"event": event}}


def webhook_target(conn: Any) -> tuple[str, dict[str, str]]:
    """(URL, headers) from an http connection."""
    host = (conn.host or "").strip()
    if not host:
        raise ValueError(f"connection {conn.conn_id!r} has no host")
    if "://" in host:
        url = host
    else:
        url = f"{conn.schema or 'https'}://{host}"
        if conn.port:
            url = f"{url}:{conn.port}"
    endpoint = (conn.extra_dejson or {}).get("endpoint")
    if endpoint:
        url = url.rstrip("/") + "/" + str(endpoint).lstrip("/")
    headers = {"Content-Type": "application/json"}
    if conn.password:
        headers["Authorization"] = f"Bearer {conn.password}"
    return url, headers


def post(payload: dict[str, Any], conn_id: str = WEBHOOK_CONN, log: Any = None) -> bool:
    """POST ``payload`` to the connection's webhook; False (logged, URL withheld) on failure or
    when the connection does not exist."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return False
    try:
        url, headers = webhook_target(conn)
        request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        return True
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "code", None) or type(e).__name__
        if log is not None:
            log.warning("on-call webhook %s: post failed (%s)", conn_id, reason)
        return False
