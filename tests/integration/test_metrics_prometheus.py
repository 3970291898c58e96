"""The emulator's broker metrics through a real Prometheus (Debian's 2.42): backfilled history
answers PromQL exactly as the traffic model integrates, live scrapes continue the same counters,
moves show as replication traffic, a stopped broker stops answering and the snapshot counts its
samples as stale. Snapshots go to Parquet through kafka-ops' own Prometheus source."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kafka_ops.emulator.runtime import Emulator
from kafka_ops.errors import BackendError
from kafka_ops.generator import generate_cluster
from kafka_ops.monitor import names
from kafka_ops.monitor.schema import read_table
from kafka_ops.monitor.snapshot import take_snapshot
from kafka_ops.monitor.sources import PrometheusConfig, PrometheusSource
from kafka_ops.snapshot import save_snapshot
from kafka_ops.testing.prometheus import prometheus_for_emulator
from kafka_ops.testing.zookeeper import free_port

pytestmark = pytest.mark.slow


def _value(result: list[dict]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])


@pytest.fixture(scope="module")
def scraped():
    model = generate_cluster("small", seed=3)
    # The emulator's runtime ticks replication; speed 20 so a move copies in seconds.
    with Emulator(model, speed=20, metrics_port_base=0) as emulator:
        face = emulator.metrics_face
        with prometheus_for_emulator(face, history=3 * 3600, step=60, scrape_interval="1s") as prom:
            yield model, emulator.cluster, face, prom


def test_backfilled_history_is_the_traffic_model(scraped) -> None:
    model, cluster, face, prom = scraped
    topo = face.metrics.read_topology()
    traffic = face.metrics.traffic
    broker = 0
    topic = next(p.topic for p in model if p.leader == broker)
    t = traffic.index[topic]
    # An instant 2 hours back, on the backfill's minute grid: rate() over [5m] sees the samples
    # at q-300 .. q (2.x range selectors include both ends): the mean slope over 300 s.
    q = (int(time.time()) // 60) * 60 - 7200
    got = prom.api("query", query=f'rate({names.BY_KEY["bytes_in"].name}'
                   f'{{broker="{broker}",topic="{topic}"}}[5m])', time=q)["result"]
    expected = topo.lead_in[face.metrics.bindex[broker], t] * float(
        traffic.integral(q)[t] - traffic.integral(q - 300)[t]) / 300
    assert _value(got) == pytest.approx(expected, rel=1e-9)
    # The whole cluster's ingest equals the model's rates times the day's shape, too.
    total = prom.api("query", query=f'sum(rate({names.BY_KEY["bytes_in"].name}{{topic!=""}}[5m]))',
                     time=q)["result"]
    mult = (traffic.integral(q) - traffic.integral(q - 300)) / 300
    per_topic = topo.lead_in.sum(axis=0)
    assert _value(total) == pytest.approx(float((per_topic * mult).sum()), rel=1e-9)


def test_live_scrapes_continue_history_and_moves_show(scraped) -> None:
    model, cluster, face, prom = scraped
    n = len(model.brokers)
    # Live scrapes (scrape_samples_scraped exists only for them; the backfill has "up" too).
    prom.wait_for("count(scrape_samples_scraped > 0)", lambda r: bool(r) and _value(r) == n,
                  timeout=60)
    # Counters only grow across the backfill/live seam: no reset Prometheus would see.
    resets = prom.query(f'sum(resets({names.BY_KEY["bytes_in"].name}[4h]))')
    assert _value(resets) == 0
    # Move one replica of a partition onto broker 5 (the generator's empty new broker).
    p = min((p for p in model if 5 not in p.replicas and p.size_bytes > 0),
            key=lambda p: p.size_bytes)
    target = [*p.replicas[:-1], 5]
    repl = f'{names.BY_KEY["replication_bytes_in"].name}{{broker="5"}}'
    before = _value(prom.wait_for(repl, bool, timeout=30))
    assert cluster.alter_reassignments({p.tp: target})[p.tp] is None
    prom.wait_for(repl, lambda r: bool(r) and _value(r) - before >= p.size_bytes, timeout=60)


def test_snapshot_counts_a_stopped_broker(scraped, tmp_path: Path) -> None:
    model, cluster, face, prom = scraped
    victim = 4
    port = face.ports[victim]
    cluster.stop_broker(victim)
    deadline = time.monotonic() + 30
    while True:  # its listener closes: connection refused, as from a dead process
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).close()
        except OSError:  # refused (or reset while closing)
            break
        assert time.monotonic() < deadline, "the stopped broker still answers"
        time.sleep(0.2)
    # Every scrape of the last 4 s failed: the snapshot window below lies in the outage.
    prom.wait_for(f'max_over_time(up{{broker="{victim}"}}[4s])',
                  lambda r: bool(r) and _value(r) == 0, timeout=30)
    end = time.time()
    source = PrometheusSource(PrometheusConfig(prom.url, job="kafka"), rate_window=600)
    result = take_snapshot(cluster.to_model(), source, tmp_path / "ds", "small", step=1,
                           start=end - 3, end=end)
    assert result.issues["broker_down_samples"] == result.samples == 3
    brokers = read_table(tmp_path / "ds", "brokers", "small").to_pylist()
    down = [r for r in brokers if r["broker"] == victim]
    assert down and all(r["up"] is False and r["leader_count"] is None for r in down)
    cluster.start_broker(victim)
    prom.wait_for(f'up{{broker="{victim}"}}', lambda r: bool(r) and _value(r) == 1, timeout=30)


class _AuthProxy(http.server.ThreadingHTTPServer):
    """Basic auth in front of Prometheus, as operators put a reverse proxy before it."""

    daemon_threads = True

    def __init__(self, upstream: str, expected: str) -> None:
        self.upstream, self.expected, self.seen = upstream, expected, []
        super().__init__(("127.0.0.1", free_port()), _ProxyHandler)


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: _AuthProxy

    def do_GET(self) -> None:
        self.server.seen.append(self.headers.get("Authorization"))
        if self.headers.get("Authorization") != self.server.expected:
            self.send_error(401)
            return
        with urllib.request.urlopen(self.server.upstream + self.path, timeout=30) as r:
            body = r.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_credentials_reach_prometheus_and_nothing_else(scraped, tmp_path: Path, caplog) -> None:
    model, cluster, face, prom = scraped
    import base64

    proxy = _AuthProxy(prom.url, "Basic " + base64.b64encode(b"ops:s3cret-pw").decode())
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}"
        end = time.time() - 3600
        caplog.set_level("DEBUG")
        good = PrometheusSource(PrometheusConfig(url, username="ops", password="s3cret-pw"))
        result = take_snapshot(model, good, tmp_path / "ds", "small", step=300, start=end - 900,
                               end=end)
        assert result.rows["partitions"] == len(model.partitions) * result.samples > 0
        with pytest.raises(BackendError, match="HTTP 401") as err:
            PrometheusSource(PrometheusConfig(url, username="ops", password="wrong-pw")).samples(
                model, end - 300, end, 300)
        text = json.dumps(result.to_dict()) + str(err.value) + caplog.text + repr(good.config)
        assert "s3cret-pw" not in text and "wrong-pw" not in text
        assert proxy.seen and all(h and h.startswith("Basic ") for h in proxy.seen)
    finally:
        proxy.shutdown()
        proxy.server_close()


PASSWORD = "Pr0m-s3cret-" + "x9"  # noqa: S105 - a test password, checked absent from output


def _snapshot_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``kafka-ops snapshot`` in a child with every logger at DEBUG (what would leak, shows)."""
    code = ("import logging, sys; logging.basicConfig(level=logging.DEBUG); "
            "from kafka_ops.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, "snapshot", *args], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})


def test_snapshot_from_prometheus_with_basic_auth(tmp_path: Path) -> None:
    """A real Prometheus demanding basic auth (--web.config.file, bcrypt basic_auth_users):
    the snapshot CLI reads the credentials from its configuration file and gets the samples; a
    wrong password is refused with a clear error; the password appears in no output, log or
    file the snapshot writes."""
    model = generate_cluster("small", seed=5)
    with Emulator(model, metrics_port_base=0) as emulator:
        face = emulator.metrics_face
        with prometheus_for_emulator(face, history=3600, step=60, scrape_interval="1s",
                                     basic_auth=("ops", PASSWORD)) as prom:
            # Prometheus itself refuses requests without the credentials.
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{prom.url}/api/v1/query?query=up", timeout=10)
            assert refused.value.code == 401
            cluster = tmp_path / "cluster.json"
            save_snapshot(model, cluster)
            props = tmp_path / "prometheus.properties"
            props.write_text(f"username=ops\npassword={PASSWORD}\n")
            end = int(time.time() // 300) * 300 - 600
            common = ["--cluster", str(cluster), "--name", "small", "--prometheus", prom.url,
                      "--job", "kafka", "--step", "300", "--start", str(end - 1800),
                      "--end", str(end), "--json"]
            done = _snapshot_cli([*common, "--dataset", str(tmp_path / "ds"),
                                  "--prometheus-config", str(props)])
            assert done.returncode == 0, done.stderr[-3000:]
            result = json.loads(done.stdout)
            assert result["samples"] == 7
            assert result["rows"]["partitions"] == 7 * len(model.partitions)
            assert not result["issues"].get("missing_rate_samples")
            bad = tmp_path / "bad.properties"
            bad.write_text("username=ops\npassword=not-the-" + PASSWORD + "\n")
            refused_run = _snapshot_cli([*common, "--dataset", str(tmp_path / "ds2"),
                                         "--prometheus-config", str(bad)])
            server_log = prom.logs()
    assert refused_run.returncode != 0
    assert "401" in refused_run.stderr and "Prometheus" in refused_run.stderr
    rates = read_table(tmp_path / "ds", "broker_topics", "small")
    assert rates.num_rows and all(v is not None for v in rates["bytes_in"].to_pylist())
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "ds").rglob("*.json"))
    for text in (done.stdout, done.stderr, refused_run.stdout, refused_run.stderr, server_log,
                 written):
        assert PASSWORD not in text
