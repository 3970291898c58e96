"""A private Prometheus on loopback: for tests, benchmarks and the embedded demo.

Runs Debian's ``prometheus`` (2.42, ``apt-get install prometheus``; the package's service is not
used) on 127.0.0.1 and a free port with its own data directory. History without waiting: an
OpenMetrics file is turned into TSDB blocks with ``promtool tsdb create-blocks-from openmetrics``
before the server starts on that directory, and live scraping continues on top.

With ``basic_auth`` the server demands HTTP basic auth on every endpoint, as Prometheus 2.42 does
with ``--web.config.file`` and bcrypt-hashed ``basic_auth_users`` (hashed here with the
``bcrypt`` package; the plain password is never written to disk).
"""

from __future__ import annotations

import base64
import json
import math
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from kafka_ops.errors import KafkaOpsError
from kafka_ops.testing.zookeeper import free_port


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise KafkaOpsError(f"{name} is not installed: apt-get install prometheus")
    return path


def backfill(openmetrics: str | Path, data_dir: str | Path) -> None:
    """TSDB blocks from an OpenMetrics file (``# EOF``-terminated, timestamps in seconds)."""
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [_binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", "-q",
         str(openmetrics), str(data_dir)],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise KafkaOpsError(f"promtool backfill failed: {done.stderr.strip()[-2000:]}")


class PrometheusServer:
    """Start with ``start()`` (or as a context manager); ``url`` to query it; ``stop()`` ends it."""

    def __init__(self, scrape_configs: Sequence[Mapping[str, Any]], *,
                 data_dir: str | Path | None = None, port: int | None = None,
                 scrape_interval: str = "15s",
                 basic_auth: tuple[str, str] | None = None) -> None:
        self.scrape_configs = [dict(c) for c in scrape_configs]
        self._auth = basic_auth
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-ops-prometheus-"))
        self.data_dir = self.dir / "data"
        self.log_path = self.dir / "prometheus.log"
        self.scrape_interval = scrape_interval
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _headers(self) -> dict[str, str]:
        if self._auth is None:
            return {}
        raw = f"{self._auth[0]}:{self._auth[1]}".encode()
        return {"Authorization": "Basic " + base64.b64encode(raw).decode()}

    def _open(self, path: str, timeout: float) -> Any:
        return urllib.request.urlopen(
            urllib.request.Request(f"{self.url}{path}", headers=self._headers()), timeout=timeout)

    def _web_config(self) -> list[str]:
        """``--web.config.file`` demanding basic auth, when asked for; else no option."""
        if self._auth is None:
            return []
        import bcrypt  # test dependency: only a server with basic auth needs it

        user, password = self._auth
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
        path = self.dir / "web.yml"
        path.write_text(yaml.safe_dump({"basic_auth_users": {user: hashed}}))
        return [f"--web.config.file={path}"]

    def backfill(self, openmetrics: str | Path) -> None:
        """Import history before ``start()`` (Prometheus reads blocks when it opens the TSDB)."""
        if self._process is not None:
            raise KafkaOpsError("backfill before starting Prometheus")
        backfill(openmetrics, self.data_dir)

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        config = self.dir / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": self.scrape_interval,
                       "evaluation_interval": self.scrape_interval},
            "scrape_configs": self.scrape_configs,
        }))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        self._process = subprocess.Popen(
            [_binary("prometheus"), f"--config.file={config}",
             f"--storage.tsdb.path={self.data_dir}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             # Backfilled blocks may reach into the head's time range.
             "--storage.tsdb.retention.time=30d", "--web.enable-lifecycle",
             *self._web_config()],
            stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise KafkaOpsError(f"Prometheus exited at start-up; see {self.log_path}:\n"
                                    f"{self.logs()[-2000:]}")
            try:
                with self._open("/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise KafkaOpsError(f"Prometheus not ready within {timeout:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- querying (tests) -------------------------------------------------------------------
    def api(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode(params)
        with self._open(f"/api/v1/{path}?{query}", timeout=30) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise KafkaOpsError(f"Prometheus API {path}: {body.get('error')}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        return self.api("query", query=promql)["result"]

    def wait_for(self, promql: str, until: Callable[[list[dict[str, Any]]], bool],
                 timeout: float = 60.0) -> list[dict[str, Any]]:
        """Poll an instant query until ``until(result)`` holds; KafkaOpsError after ``timeout``."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            result = self.query(promql)
            if until(result):
                return result
            time.sleep(0.5)
        raise KafkaOpsError(f"{promql!r} did not reach the expected state in {timeout:.0f}s: "
                            f"{str(result)[:500]}")


@contextmanager
def prometheus_for_emulator(face: Any, history: float = 0.0, step: float = 60.0,
                            scrape_interval: str = "5s", job: str = "kafka",
                            basic_auth: tuple[str, str] | None = None
                            ) -> Iterator[PrometheusServer]:
    """A Prometheus scraping an emulator's MetricsFace, with ``history`` seconds backfilled.

    The backfill ends a little before now (on the ``step`` grid) and live scrapes continue
    from the same counters. ``face`` is a started kafka_ops.emulator.metrics.MetricsFace (typed
    loosely: kafka_ops.testing does not import the emulator at module level).
    """
    from kafka_ops.emulator.metrics import scrape_config

    server = PrometheusServer([scrape_config(face.targets, job=job, interval=scrape_interval)],
                              scrape_interval=scrape_interval, basic_auth=basic_auth)
    try:
        if history > 0:
            end = face.metrics.now() - 1  # the last sample within a step of the first scrape
            start = math.floor((end - history) / step) * step
            path = server.dir / "history.om"
            with open(path, "w") as out:
                face.metrics.history(out, start, end, step, job=job, instances=face.targets)
            server.backfill(path)
            path.unlink()
        server.start()
        yield server
    finally:
        server.cleanup()
