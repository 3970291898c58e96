"""On-call's night, in a real browser: Chromium (Debian's chromium + chromium-driver, headless,
loopback only, a fresh profile) driven by Selenium against a real Airflow 3.3 (api-server,
scheduler, dag-processor, triggerer) with the project's DAGs and plugin, and a real emulated
cluster on a real ZooKeeper.

Steps, each screenshotted into the test artefacts: log into Airflow; open the Kafka rebalancing
view; open the waiting approval; check the digest figures shown equal the plan's (the plan
task's XCom, read over the REST API); approve in Airflow's own Required Actions page; watch the
view's progress advance to done; open the report. The on-call webhook (a loopback receiver)
must have heard "approval waits" and "completed", with no secret in either.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "airflow"))

from e2e_helpers import OPS, REMOVE, throttles_left  # noqa: E402
from test_notifications import SECRET, Receiver  # noqa: E402

from kafka_ops.testing.airflow import wait_for  # noqa: E402
from kafka_ops_provider.hooks.state import run_key  # noqa: E402

# airflow_stack and cluster: the session's one Airflow (tests/airflow_fixtures.py, loaded by
# tests/conftest.py for every suite).

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = Path(os.environ.get("KAFKA_OPS_TEST_ARTIFACTS", REPO / ".artifacts")) / "ui-screenshots"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.fail("chromium and chromium-driver are needed (apt-get install chromium "
                    "chromium-driver; scripts/setup.sh installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="kafka-ops-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-extensions", "--disable-sync",
                 "--no-first-run", "--no-default-browser-check", "--window-size=1400,1100",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def webhook(airflow_stack):
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    airflow_stack.set_connection("kafka_ops_webhook", "http", host="127.0.0.1", schema="http",
                                 port=server.server_address[1], password=SECRET)
    yield server
    airflow_stack.api("DELETE", "/connections/kafka_ops_webhook", ok=(404,))
    server.shutdown()
    server.server_close()


def shot(driver, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def find(driver, css: str, timeout: float = 60.0):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def click_text(driver, tag: str, text: str, timeout: float = 60.0) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = f"//{tag}[normalize-space(.)='{text}']"
    WebDriverWait(driver, timeout).until(ec.element_to_be_clickable((By.XPATH, xpath))).click()


def login(driver, stack) -> None:
    driver.get(f"{stack.url}/auth/login/")
    user = find(driver, "input[name='username'], input[type='text']")
    user.send_keys("admin")
    password = find(driver, "input[type='password']")
    password.send_keys(stack.password)
    shot(driver, "01-login")
    find(driver, "button[type='submit']").click()
    wait_for(lambda: "/auth/login" not in driver.current_url and any(
        c["name"] == "_token" for c in driver.get_cookies()), 60, "the login to complete")


def test_on_call_approves_in_the_browser_and_watches_it_finish(airflow_stack, cluster, browser,
                                                                webhook):
    stack, driver = airflow_stack, browser
    run_id = stack.trigger(OPS, {**cluster.conf, **REMOVE})
    stack.wait_task(OPS, run_id, "approve", {"awaiting_input"}, timeout=600)
    planned = stack.api("GET", f"/dags/{OPS}/dagRuns/{urllib.parse.quote(run_id, safe='')}"
                               "/taskInstances/plan/xcomEntries/return_value")["value"]
    if isinstance(planned, str):
        planned = json.loads(planned)
    digest = planned["digest"]

    # The plugin is registered: the view in Airflow's navigation, its app on the api-server.
    plugins = stack.api("GET", "/plugins")["plugins"]
    views = [v for p in plugins for v in p.get("external_views") or []]
    assert any(v["href"] == "/kafka-ops/" and v["name"] == "Kafka rebalancing" for v in views)

    login(driver, stack)
    wait_for(lambda: driver.execute_script("return document.body.innerText.length") > 20, 60,
             "Airflow's UI to render")
    shot(driver, "02-airflow-home")

    driver.get(f"{stack.url}/kafka-ops/")
    link = find(driver, "a[data-testid='run-link']")
    assert "waiting" in driver.page_source  # Airflow says this approval waits
    shot(driver, "03-rebalancing-view")
    link.click()

    moves = find(driver, "[data-testid='digest-moves']").text
    assert int(moves) == digest["replica_moves"]
    assert find(driver, "[data-testid='digest-hash']").text == digest["content_hash"]
    assert int(find(driver, "[data-testid='digest-bytes']").get_attribute("data-value")) \
        == digest["bytes_to_move"]
    assert int(find(driver, "[data-testid='digest-partitions']").text) == digest["partitions"]
    find(driver, "[data-testid='predicted-duration']")
    wait_for(lambda: find(driver, "[data-testid='diff-count']").get_attribute("data-total"),
             60, "the diff table to load")
    total = int(find(driver, "[data-testid='diff-count']").get_attribute("data-total"))
    assert total == digest["partitions"]
    shot(driver, "04-waiting-approval")
    # The charts on-call reads before approving: per-broker before/after, the predicted timeline.
    driver.execute_script(
        "document.querySelector(\"[data-testid='before-after-replicas']\").scrollIntoView();"
        "window.scrollBy(0, -90)")
    find(driver, "svg[data-testid='timeline'] polyline")
    shot(driver, "04b-before-after-and-timeline")
    # Filter the diff by the broker being removed: every planned partition has a replica there.
    find(driver, "[data-testid='diff-broker']").send_keys("9")
    find(driver, "[data-testid='diff-apply']").click()
    wait_for(lambda: find(driver, "[data-testid='diff-count']").get_attribute("data-total")
             and "9" in find(driver, "#diff tbody").text, 30, "the filtered diff")
    shot(driver, "05-diff-filtered")

    # Approve where Airflow asks: its Required Actions page for this task.
    find(driver, "a[data-testid='approve-link']").click()
    click_text(driver, "button", "Approve", timeout=90)
    wait_for(lambda: stack.hitl(OPS, run_id, "approve").get("chosen_options") == ["Approve"],
             60, "Airflow to record the approval")
    shot(driver, "06-required-actions-approved")

    driver.get(f"{stack.url}/kafka-ops/runs/{run_key(OPS, run_id)}")
    seen: set[str] = set()

    def done() -> bool:
        from selenium.common.exceptions import StaleElementReferenceException

        try:  # the panel is re-rendered by its poll: an element may go stale under us
            status = find(driver, "[data-testid='progress-status']").get_attribute("data-status")
        except StaleElementReferenceException:
            return False
        seen.add(status)
        if status == "running" and "progress-running" not in seen:
            seen.add("progress-running")
            driver.execute_script("document.getElementById('progress').scrollIntoView()")
            shot(driver, "07-progress")
        if status in ("failed", "cancelled", "paused"):  # the execution ended otherwise: say how
            raise AssertionError(f"the execution ended {status}; tasks: "
                                 f"{stack.task_states(OPS, run_id)}")
        return status == "completed"

    wait_for(done, 600, "the view to show the execution done", interval=1.0)
    driver.execute_script("document.getElementById('progress').scrollIntoView()")
    shot(driver, "08-progress-done")
    assert "running" in seen or "completed" in seen
    find(driver, "a[data-testid='report-link']").click()
    assert find(driver, "[data-testid='report-status']").text == "completed"
    assert int(find(driver, "[data-testid='report-moved']").text) == digest["partitions"]
    find(driver, "[data-testid='predicted-vs-actual']")
    shot(driver, "09-report")

    assert stack.wait_run(OPS, run_id, timeout=300) == "success"
    assert throttles_left(cluster) == {}
    events = [p["body"]["kafka_ops"]["event"] for p in webhook.posts]
    assert "approval" in events and "completed" in events, events
    assert all(SECRET not in json.dumps(p["body"]) for p in webhook.posts)
