"""A real Airflow on loopback (api-server, scheduler, dag-processor, triggerer; SQLite).

For the Airflow tests and the embedded demo: one private ``AIRFLOW_HOME``, the project's
``dags/`` and ``plugins/`` folders, a fixed admin password, and the REST calls an on-call person's
clicks turn into (unpause, trigger, answer an approval). It runs Airflow's own CLI as subprocesses
and talks HTTP only, so nothing here imports Airflow: the library stays Airflow-free.

Pitfalls measured here (environment notes): retry API writes on HTTP 5xx (SQLite write locks),
and answer an approval only once the scheduler has seen the waiting task's process end.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kafka_ops.errors import KafkaOpsError
from kafka_ops.testing.zookeeper import free_port

REPO = Path(__file__).resolve().parents[2]
COMPONENTS = ("scheduler", "dag-processor", "triggerer")
ADMIN = "admin"

#: Settings for a session whose DAG files do not change and whose runs should turn around
#: quickly on a loaded 2-core machine (the tests and the demo): the scheduler idles half as
#: long between loops; the dag-processor parses the DAG folder at start and then only every
#: ten minutes (re-parsing three files every ten seconds costs CPU the runs need); the
#: triggerer polls progress every second.
TEST_TUNING = {
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "600",
    "AIRFLOW__KAFKA_OPS__POLL_INTERVAL": "1",
}


class AirflowError(KafkaOpsError):
    """Airflow did not start, or an API call or a wait failed."""


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AirflowError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class AirflowStack:
    """Start with ``start()``; ``api()`` for REST calls; ``stop()`` ends every process it started."""

    def __init__(
        self,
        home: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        parallelism: int = 4,
    ) -> None:
        self._own_home = home is None
        self.home = Path(home or tempfile.mkdtemp(prefix="kafka-ops-airflow-"))
        self.port = port or free_port()
        self.password = secrets.token_urlsafe(12)
        self.bin = Path(sys.executable).parent / "airflow"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._token: str | None = None
        self.env = self._environment(parallelism, env or {})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _environment(self, parallelism: int, extra: Mapping[str, str]) -> dict[str, str]:
        (self.home / "passwords.json").write_text(json.dumps({ADMIN: self.password}))
        path = [str(REPO), str(REPO / "plugins"), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ)
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "PYTHONPATH": os.pathsep.join(p for p in path if p),
            # spark-submit (pyspark's wheel) must be on PATH for SparkSubmitOperator.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        })
        env.update(extra)
        return env

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 240.0) -> AirflowStack:
        """Migrate the database, start the four components, wait until the API answers."""
        if not self.bin.exists():
            raise AirflowError(f"Airflow is not installed in this virtualenv ({self.bin} missing):"
                               " scripts/setup.sh all")
        migrate = subprocess.run([str(self.bin), "db", "migrate"], env=self.env,
                                 capture_output=True, timeout=timeout)
        if migrate.returncode:
            raise AirflowError("airflow db migrate failed:\n" + migrate.stderr.decode()[-3000:])
        try:
            self._spawn("api-server", "--host", "127.0.0.1", "--port", str(self.port))
            for component in COMPONENTS:
                self._spawn(component)
            wait_for(self._healthy, timeout, "the Airflow API server to answer", interval=1.0)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, component: str, *args: str) -> None:
        log = open(self.home / f"{component}.log", "wb")
        self.processes[component] = subprocess.Popen(
            [str(self.bin), component, *args], env=self.env, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )

    def _healthy(self) -> bool:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AirflowError(f"airflow {name} exited ({process.returncode}):\n"
                                   + self.logs(name)[-3000:])
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def logs(self, component: str) -> str:
        path = self.home / f"{component}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM every component (its process group: the task runners too), SIGKILL stragglers."""
        for process in self.processes.values():
            if process.poll() is None:
                _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(10)
        self.processes.clear()

    def cleanup(self) -> None:
        self.stop()
        if self._own_home:
            shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> AirflowStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- REST --------------------------------------------------------------------------------

    def token(self) -> str:
        if self._token is None:
            body = self._request("POST", "/auth/token",
                                 {"username": ADMIN, "password": self.password}, auth=False)
            self._token = body["access_token"]
        return self._token

    def api(self, method: str, path: str, body: Any = None, ok: Iterable[int] = ()) -> Any:
        """One REST call under ``/api/v2``; retried on 5xx. ``ok``: extra statuses not raised."""
        return self._request(method, f"/api/v2{path}", body, ok=tuple(ok))

    def _request(self, method: str, path: str, body: Any = None, auth: bool = True,
                 ok: tuple[int, ...] = (), attempts: int = 8) -> Any:
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(attempts):
            request = urllib.request.Request(self.url + path, data=data, method=method)
            request.add_header("Content-Type", "application/json")
            if auth:
                request.add_header("Authorization", f"Bearer {self.token()}")
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    text = response.read().decode()
                    return json.loads(text) if text else None
            except urllib.error.HTTPError as e:
                detail = e.read().decode(errors="replace")
                if e.code in ok:
                    return {"status": e.code, "detail": detail}
                if e.code >= 500 and attempt + 1 < attempts:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise AirflowError(f"{method} {path} -> HTTP {e.code}: {detail[:2000]}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                if attempt + 1 < attempts:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise AirflowError(f"{method} {path}: {e}") from None
        raise AssertionError("unreachable")

    # -- what on-call does -------------------------------------------------------------------

    def wait_dags(self, dag_ids: Iterable[str], timeout: float = 180.0) -> None:
        """Until the dag-processor has parsed every DAG in ``dag_ids``; then unpause them."""
        wanted = set(dag_ids)

        def parsed() -> bool:
            dags = self.api("GET", "/dags?limit=100")["dags"]
            return wanted <= {d["dag_id"] for d in dags}

        try:
            wait_for(parsed, timeout, f"DAGs {sorted(wanted)} to be parsed", interval=1.0)
        except AirflowError as e:
            errors = self.api("GET", "/importErrors")
            raise AirflowError(f"{e}; import errors: {json.dumps(errors)[:3000]}") from None
        for dag_id in wanted:
            self.api("PATCH", f"/dags/{dag_id}", {"is_paused": False})

    def set_connection(self, conn_id: str, conn_type: str, **fields: Any) -> None:
        """Create or replace a connection in Airflow's connection store."""
        if "extra" in fields and not isinstance(fields["extra"], str):
            fields["extra"] = json.dumps(fields["extra"])
        body = {"connection_id": conn_id, "conn_type": conn_type, **fields}
        self.api("DELETE", f"/connections/{conn_id}", ok=(404,))
        self.api("POST", "/connections", body)

    def set_variable(self, key: str, value: str) -> None:
        self.api("DELETE", f"/variables/{key}", ok=(404,))
        self.api("POST", "/variables", {"key": key, "value": value})

    def trigger(self, dag_id: str, conf: Mapping[str, Any] | None = None) -> str:
        run = self.api("POST", f"/dags/{dag_id}/dagRuns",
                       {"logical_date": None, "conf": dict(conf or {})})
        return run["dag_run_id"]

    def _run_path(self, dag_id: str, run_id: str) -> str:
        return f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}"

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.api("GET", self._run_path(dag_id, run_id))["state"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        body = self.api("GET", self._run_path(dag_id, run_id) + "/taskInstances?limit=100")
        return {ti["task_id"]: ti["state"] for ti in body["task_instances"]}

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return self.api("GET", self._run_path(dag_id, run_id) + f"/taskInstances/{task_id}")

    def wait_task(self, dag_id: str, run_id: str, task_id: str, states: Iterable[str],
                  timeout: float = 300.0) -> str:
        """Until ``task_id`` is in one of ``states``; fails early when the run ends otherwise."""
        wanted = set(states)

        def reached() -> str | None:
            state = self.task_states(dag_id, run_id).get(task_id)
            if state in wanted:
                return state
            if self.run_state(dag_id, run_id) in ("success", "failed"):
                raise AirflowError(f"run {run_id} ended with {task_id} {state}, not in "
                                   f"{sorted(wanted)}: {self.task_states(dag_id, run_id)}")
            return None

        return wait_for(reached, timeout, f"{dag_id}.{task_id} in {sorted(wanted)}", interval=1.0)

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 600.0) -> str:
        return wait_for(lambda: (s := self.run_state(dag_id, run_id)) in ("success", "failed")
                        and s, timeout, f"run {run_id} of {dag_id} to finish", interval=1.0)

    def hitl(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> dict[str, Any]:
        """The approval request as the UI shows it (subject, body, options, assignees)."""
        return self.api("GET", self._run_path(dag_id, run_id)
                        + f"/taskInstances/{task_id}/{map_index}/hitlDetails")

    def answer(self, dag_id: str, run_id: str, task_id: str, option: str,
               map_index: int = -1, timeout: float = 120.0) -> dict[str, Any]:
        """Click ``option`` (e.g. "Approve" / "Reject") on a waiting approval.

        Only once the scheduler has processed the executor's report that the task's process
        ended (it parks the task in ``awaiting_input``): an answer that overtakes that report
        fails the task (the race the environment notes describe).
        """
        self.wait_task(dag_id, run_id, task_id, {"awaiting_input"})
        ti = self.task_instance(dag_id, run_id, task_id)
        key = (f"TaskInstanceKey(dag_id='{dag_id}', task_id='{task_id}', run_id='{run_id}', "
               f"try_number={ti['try_number']}, map_index={map_index})")
        wait_for(lambda: any("Received executor event" in line and key in line
                             for line in self.logs("scheduler").splitlines()),
                 timeout, f"the scheduler to process {task_id}'s end of execution")
        path = self._run_path(dag_id, run_id) + f"/taskInstances/{task_id}/{map_index}/hitlDetails"
        # The request row is written as the task defers; until then the answer has nothing to
        # land on (404): ask again rather than give up.
        def send() -> dict[str, Any] | None:
            body = self.api("PATCH", path, {"chosen_options": [option]}, ok=(404,))
            return None if isinstance(body, dict) and body.get("status") == 404 else body or {}

        return wait_for(send, timeout, f"the approval request of {task_id} to accept an answer")


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
