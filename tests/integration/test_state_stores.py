"""Both state stores against real storage: a directory, fsspec on file://, and S3 over HTTP.

The S3 store talks through s3fs to moto's server mode started as its own process on loopback:
a real S3 endpoint (HTTP, signatures, buckets), nothing mocked inside our process. The same
contract runs on every store, then an execution is carried by two "workers" (two store
objects, fresh executors) through S3, with a cancel request travelling through the bucket.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from kafka_ops import workflow as wf
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.errors import ReassignmentInProgressError, ValidationError
from kafka_ops.executor import Executor, FsspecStateStore, LocalStateStore, StateStore
from kafka_ops.executor.state import ExecutionState
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.clusters import four_broker_cluster
from kafka_ops.testing.inprocess import InProcessBackend

S3_OPTIONS = {"key": "testing", "secret": "testing", "client_kwargs": {"region_name": "us-east-1"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server as a separate process on 127.0.0.1, with a bucket "kafka-ops"."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"moto server did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
    import boto3

    boto3.client("s3", endpoint_url=url, aws_access_key_id="testing", aws_secret_access_key="testing",
                 region_name="us-east-1").create_bucket(Bucket="kafka-ops")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def make_store(kind: str, tmp_path, request) -> StateStore:
    if kind == "local":
        return StateStore(tmp_path / "state")
    if kind == "file":
        return StateStore(f"file://{tmp_path}/fs-state")
    endpoint = request.getfixturevalue("s3_endpoint")
    return FsspecStateStore(f"s3://kafka-ops/{uuid.uuid4().hex}",
                            {**S3_OPTIONS, "endpoint_url": endpoint, "skip_instance_cache": True})


def twin(store: StateStore) -> StateStore:
    """Another process's view of the same location."""
    if isinstance(store, LocalStateStore):
        return StateStore(store.dir)
    assert isinstance(store, FsspecStateStore)
    return FsspecStateStore(store.location, store.storage_options)


KINDS = ["local", "file", pytest.param("s3", marks=pytest.mark.slow)]


def _state() -> ExecutionState:
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (3, 2)})
    return ExecutionState(plan=plan, base={TP("t", 0): (1, 2)}, tasks=[], options={"throttle": 1})


@pytest.mark.parametrize("kind", KINDS)
def test_store_contract(kind, tmp_path, request) -> None:
    store = make_store(kind, tmp_path, request)
    other = twin(store)
    assert isinstance(store, FsspecStateStore) == (kind != "local")
    assert store.load() is None and not store.cancel_requested() and not store.executor_running()
    state = _state()
    store.save(state)
    assert other.load().to_dict() == state.to_dict()
    other.request_cancel()
    assert store.cancel_requested()
    store.clear_cancel_request()
    assert not other.cancel_requested()
    with store.lock():
        assert other.executor_running()
        with pytest.raises(ReassignmentInProgressError):
            with other.lock():
                pass
    assert not other.executor_running()
    with other.lock():
        pass
    where = store.write_rollback(state.plan)
    assert str(where).endswith("rollback.json")


@pytest.mark.parametrize("kind", ["file", pytest.param("s3", marks=pytest.mark.slow)])
def test_fsspec_store_unreadable_state_and_expired_lease(kind, tmp_path, request) -> None:
    store = make_store(kind, tmp_path, request)
    store._write("execution.json", b"\xff\xfe not json")
    with pytest.raises(ValidationError, match="execution state .* is unreadable"):
        store.load()
    # A lease whose holder died (expired) does not block the next worker.
    store._write("executor.lock", json.dumps({"owner": "gone:1:x", "expires": time.time() - 1}).encode())
    assert not store.executor_running()
    with twin(store).lock():
        assert store.executor_running()


def test_local_store_refuses_a_directory_as_state(tmp_path) -> None:
    store = StateStore(tmp_path)
    store.path.mkdir()
    with pytest.raises(ValidationError, match="is unreadable"):
        store.load()


@pytest.mark.slow
def test_execution_carried_by_two_workers_through_s3(s3_endpoint) -> None:
    clock = ManualClock()
    backend = InProcessBackend.for_model(four_broker_cluster(), clock=clock)
    url = f"s3://kafka-ops/{uuid.uuid4().hex}"
    options = {**S3_OPTIONS, "endpoint_url": s3_endpoint, "skip_instance_cache": True}
    worker_a = FsspecStateStore(url, options)
    worker_b = FsspecStateStore(url, options)
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4), TP("events", 0): (4, 2, 3)})
    wf.start_execution(backend, plan, worker_a, {"throttle": 500, "poll_interval": 1}, clock=clock.now)
    for i in range(200):
        clock.advance(1)
        status = wf.step_execution(backend, (worker_a, worker_b)[i % 2], clock=clock.now)
        if status.ended:
            break
    assert status.status == "completed"
    assert {tp: tuple(backend.cluster.partitions[tp].replicas) for tp in plan.replicas} == plan.replicas
    assert wf.final_report(worker_b).report["status"] == "completed"

    # A second plan, cancelled from a third party that only reaches the bucket.
    back = ReassignmentPlan.from_assignment({TP("orders", 0): (1, 2)})
    wf.start_execution(backend, back, worker_a, {"throttle": 10, "poll_interval": 1}, clock=clock.now)
    clock.advance(1)
    assert wf.step_execution(backend, worker_b, clock=clock.now).progress["in_flight"] == 1
    wf.request_cancel(FsspecStateStore(url, options))
    for _ in range(50):
        clock.advance(1)
        status = wf.step_execution(backend, worker_a, clock=clock.now)
        if status.ended:
            break
    assert status.status == "cancelled"
    assert tuple(backend.cluster.partitions[TP("orders", 0)].replicas) == (3, 4)
    assert Executor.from_store(backend, worker_b).report().status == "cancelled"
