"""Notifications posted to a real HTTP receiver on 127.0.0.1, through a real Airflow connection
(from the environment, as Airflow's env secrets backend reads it).

The task context is a stand-in (a TI with xcom_pull): a notifier only reads ids and XCom from
it, and a real task run is covered by the browser end-to-end test. The execution state is a
real one, written by the real Executor on the emulator core."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.executor import ExecutionOptions, Executor, StateStore
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.inprocess import InProcessBackend

SECRET = "xoxb-TOP-SECRET-token"
PATH_TOKEN = "T000/B000/PATHSECRET"


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.posts: list[dict] = []
        self.headers_seen: list[dict] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts.append({"path": self.path, "body": json.loads(body)})
                receiver.headers_seen.append(dict(self.headers))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def receiver(monkeypatch, tmp_path):
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_OPS_WEBHOOK", json.dumps({
        "conn_type": "http", "host": "127.0.0.1", "port": server.server_address[1],
        "schema": "http", "password": SECRET, "extra": {"endpoint": f"/services/{PATH_TOKEN}"}}))
    monkeypatch.setenv("AIRFLOW_VAR_KAFKA_OPS_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://airflow.example:8080")
    yield server
    server.shutdown()
    server.server_close()


class TI:
    def __init__(self, xcom: dict, state: str = "running") -> None:
        self.dag_id, self.run_id, self.task_id, self.state = "kafka_rebalance", "manual__x:1", "approve", state
        self._xcom = xcom

    def xcom_pull(self, task_ids: str) -> dict | None:
        return self._xcom.get(task_ids)


def no_secret(text: str) -> None:
    assert SECRET not in text and "PATHSECRET" not in text


def test_approval_waiting_posts_a_slack_payload_with_figures_and_links(receiver, tmp_path):
    from kafka_ops_provider.notifications.oncall import OnCallNotifier

    digest = {"replica_moves": 42, "bytes_to_move": 3_500_000_000, "estimated_seconds": 3600,
              "content_hash": "sha256:feed"}
    OnCallNotifier("an approval waits").notify({"ti": TI({"plan": {"digest": digest}})})
    (post,) = receiver.posts
    assert post["path"] == f"/services/{PATH_TOKEN}"  # the endpoint from the connection
    assert receiver.headers_seen[0]["Authorization"] == f"Bearer {SECRET}"
    body = post["body"]
    assert body["blocks"][0]["type"] == "header" and "an approval waits" in body["text"]
    assert "*Moves:* 42" in body["blocks"][1]["text"]["text"] and "3.5 GB" in body["text"]
    assert "sha256:feed" in body["text"]
    button = body["blocks"][2]["elements"][0]["url"]
    assert button == ("http://airflow.example:8080/dags/kafka_rebalance/runs/manual__x%3A1"
                      "/tasks/approve/required_actions")
    assert "/kafka-ops/runs/kafka_rebalance/manual__x_1" in body["text"]
    no_secret(json.dumps(body))
    inbox = (tmp_path / "oncall-inbox.jsonl").read_text()
    assert json.loads(inbox)["event"] == "approval"
    no_secret(inbox)


def _execution(store_dir, kill_broker: bool) -> None:
    cap = BrokerCapacity(10**12, 10**9, 10**9)
    model = ClusterModel([Broker(i, None, capacity=cap) for i in range(1, 5)],
                         [Partition("t", p, (1, 2), 1, (1, 2), size_bytes=50_000_000)
                          for p in range(4)])
    plan = ReassignmentPlan.from_assignment({TP("t", p): (1, 3) for p in range(4)})
    clock = ManualClock()
    backend = InProcessBackend.for_model(model, clock=clock)

    def sleep(s: float) -> None:
        clock.advance(s)
        if kill_broker and clock.now() >= 3:
            backend.cluster.stop_broker(3)

    options = ExecutionOptions(throttle=10_000_000, poll_interval=1.0, elect_leaders=False,
                               drain_timeout=5.0)
    Executor(backend, plan, options=options, store=StateStore(store_dir), clock=clock.now,
             sleep=sleep).run()


@pytest.mark.parametrize("kill,event", [(False, "completed"), (True, "paused")])
def test_run_outcome_says_how_it_ended_from_the_execution_state(receiver, tmp_path, kill, event):
    from kafka_ops_provider.notifications.oncall import RunOutcomeNotifier

    _execution(tmp_path / "state" / "kafka_rebalance" / "manual__x_1", kill)
    RunOutcomeNotifier().notify({"ti": TI({}, state="success")})
    (post,) = receiver.posts
    body = post["body"]
    assert body["kafka_ops"]["event"] == event
    text = body["text"]
    if event == "completed":
        assert "Moves done: 4 of 4" in text and "200.0 MB" in text
    else:
        assert "Resume: bring the broker back" in text and "Why:" in text
    no_secret(json.dumps(body))


def test_a_dead_webhook_does_not_fail_the_task_and_the_url_is_not_logged(receiver, capsys,
                                                                         caplog):
    from kafka_ops_provider.notifications.oncall import OnCallNotifier

    receiver.status = 500
    OnCallNotifier("an approval waits").notify({"ti": TI({})})  # no raise
    assert len(receiver.posts) == 1
    logged = capsys.readouterr().out + caplog.text  # Airflow's structlog writes to stdout
    assert "post failed (500)" in logged
    no_secret(logged)
    assert "127.0.0.1" not in logged.split("post failed")[0].rsplit("\n", 1)[-1]
