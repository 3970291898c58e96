"""Shared fixtures: one real ZooKeeper server per test session, a fresh chroot per test.

Modelled on kazoo's harness: the server is started lazily, once, on 127.0.0.1 and a free port;
each test gets its own chroot so nothing needs cleaning between tests. When a test fails, the
server's log is attached to the report.

Markers are applied here, not in every file: ``zookeeper`` to every test that uses the
ZooKeeper server (through any fixture), ``slow`` to every test under tests/integration (they
start servers: ZooKeeper, the emulator's listeners, moto) and to the unit tests listed in
``SLOW_TESTS`` (more than a few seconds each). ``pytest -m "not slow"`` is the inner loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_ops.testing.zookeeper import ZooKeeperServer

#: One real Airflow per session for tests/airflow and tests/ui alike (``airflow_stack``,
#: ``cluster``): defined once here, so no suite starts a second one.
pytest_plugins = ("airflow_fixtures",)

SLOW_DIRS = ("tests/integration/",)
#: Unit tests that take more than a few seconds (measured on the 2-core CI machine).
SLOW_TESTS = {
    "tests/unit/test_cli_pools_plan.py::test_demo_script_writes_plan_and_rollback",
    "tests/unit/test_cli_pools_plan.py::test_console_script_exit_code",
    "tests/unit/test_charts.py::test_chart_is_a_png_covering_every_broker",
    "tests/unit/test_planner_cli.py::test_chart_draws_the_load_before_and_after",
    "tests/unit/test_cli_assign.py::test_console_script_prints_the_seed_000_table",
    "tests/unit/test_cli_assign.py::test_console_script_reports_a_validation_error_on_stderr",
    "tests/unit/test_executor_steps.py::test_interrupted_run_resumed_elsewhere_ends_like_an_uninterrupted_one",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "zookeeper_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.zookeeper)
        path = item.nodeid.split("::")[0]
        if path.startswith(SLOW_DIRS) or item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A connect string with a fresh chroot of its own for this test."""
    chroot = f"/kafkaops-{uuid.uuid4().hex[:12]}"
    root = KazooClient(hosts=zookeeper_server.connect_string)
    root.start(timeout=15)
    try:
        root.ensure_path(chroot)
    finally:
        root.stop()
        root.close()
    yield f"{zookeeper_server.connect_string}{chroot}"
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        request.node.add_report_section("call", "zookeeper log", zookeeper_server.logs()[-5000:])


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
