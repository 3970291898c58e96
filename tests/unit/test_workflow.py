"""The workflow API, step by step, on the emulator's core in-process (no sockets, manual clock).

Each record is passed through JSON between steps as Airflow's XCom would, and each execution
step runs on a fresh executor read from the store, as a different worker would. Outcomes are
checked on the emulated cluster itself, never through the code under test.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kafka_ops import workflow as wf
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.testing.clusters import four_broker_cluster
from kafka_ops.testing.inprocess import InProcessBackend
from kafka_ops.throttle import BROKER_KEYS, LEADER_RATE, TOPIC_KEYS


def xcom(record):
    """A record after a trip through JSON, as it reaches the next task."""
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def backend(clock) -> InProcessBackend:
    return InProcessBackend.for_model(four_broker_cluster(), clock=clock)


def assignment(backend: InProcessBackend) -> dict:
    return {tp: tuple(p.replicas) for tp, p in backend.cluster.partitions.items()}


def throttles_left(backend: InProcessBackend) -> list:
    c = backend.cluster
    topics = [(t, k) for t in {tp.topic for tp in c.partitions} for k in TOPIC_KEYS if k in c.topic_config(t)]
    brokers = [(b, k) for b in c.brokers for k in BROKER_KEYS if k in c.broker_config(b)]
    return topics + brokers


def run_steps(backend, store, clock, limit=200) -> wf.ExecutionStatus:
    status = wf.execution_progress(store)
    for _ in range(limit):
        if status.ended:
            return status
        clock.advance(status.poll_interval)
        status = xcom(wf.step_execution(backend, store, clock=clock.now))
    pytest.fail(f"execution did not end in {limit} steps: {status}")


def test_snapshot_round_trips_through_json(backend) -> None:
    snap = wf.read_cluster(backend)
    again = xcom(snap)
    assert again == snap
    assert again.model().assignment == four_broker_cluster().assignment
    assert snap.summary == {"brokers": 4, "alive_brokers": 4, "partitions": 5, "replicas": 12,
                            "under_replicated": 0}


@pytest.mark.parametrize("data, message", [
    ({"mode": "shuffle"}, "unknown plan mode 'shuffle'"),
    ({"mode": "add-brokers"}, "brokers is required by add-brokers"),
    ({"mode": "set-rf", "topics": ["orders"]}, "replication_factor is required by set-rf"),
    ({"mode": "rebalance", "brokers": [1]}, "brokers does not apply to rebalance"),
    ({"mode": "demote", "brokers": [1, "2"]}, "brokers must be broker ids"),
    ({"mode": "rebalance", "max_moves": -1}, "max_moves must not be negative"),
    ({"mode": "rebalance", "max_bytes": 1.5}, "max_bytes must be an integer"),
    ({"mode": "rebalance", "thresholds": {"capacity": 0.1}}, "name a soft goal"),
    ({"mode": "rebalance", "thresholds": {"disk": float("nan")}}, "of disk must be a number"),
    ({"mode": "rebalance", "colour": "red"}, "unknown field(s) colour"),
    ([], "expected a JSON object"),
])
def test_plan_requests_are_validated_before_planning(data, message) -> None:
    with pytest.raises(ValidationError) as e:
        wf.PlanRequest.from_dict(data)
    assert message in str(e.value)


def test_plan_digest_and_hash(backend) -> None:
    snap = xcom(wf.read_cluster(backend))
    proposal = xcom(wf.make_plan(snap, {"mode": "remove-brokers", "brokers": [4]}, throttle=1000))
    plan = proposal.reassignment()
    model = snap.model()
    # Independent check: the plan empties broker 4 and keeps every replication factor.
    assert not any(4 in r for r in {**model.assignment, **plan.replicas}.values())
    assert all(len(r) == len(model.partitions[tp].replicas) for tp, r in plan.replicas.items())
    assert proposal.base().replicas == {tp: model.partitions[tp].replicas for tp in plan.replicas}
    digest = xcom(wf.approval_digest(plan, model, throttle=1000, summary=proposal.summary))
    assert digest.content_hash == proposal.content_hash == wf.content_hash(plan, model)
    moved = sum(model.partitions[tp].size_bytes for tp, r in plan.replicas.items()
                for b in r if b not in model.partitions[tp].replicas)
    assert digest.bytes_to_move == moved and digest.replica_moves == len(plan)
    # One broker receives or sends everything at most: duration >= max per-broker bytes / rate.
    assert digest.estimated_seconds >= max(b["bytes_in"] for b in digest.brokers) / 1000 - 0.1
    assert {g["name"] for g in digest.goals} >= {"broker_exclusions"}
    assert ReassignmentPlan.from_dict(digest.rollback).replicas == proposal.base().replicas
    assert "replica moves: 2" in digest.text()


def test_digest_names_risks(backend) -> None:
    model = wf.read_cluster(backend).model()
    # Leader moves off broker 1 and events-0 grows from RF 3 to RF 4.
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (2, 1), TP("events", 0): (4, 1, 2, 3)})
    risks = wf.approval_digest(plan, model).risks
    assert any("broker 1 loses 1 leaders" in r for r in risks)
    assert any("change replication factor" in r and "3 -> 4" in r for r in risks)


def test_execution_by_steps_in_fresh_executors(backend, clock, tmp_path: Path) -> None:
    snap = wf.read_cluster(backend)
    proposal = wf.make_plan(snap, {"mode": "remove-brokers", "brokers": [4]})
    digest = wf.approval_digest(proposal.reassignment(), snap.model(), throttle=1000)
    store = str(tmp_path / "state")
    status = xcom(wf.start_execution(backend, proposal.plan, store, {"throttle": 1000, "poll_interval": 1},
                                     base=proposal.rollback, approved_hash=digest.content_hash, clock=clock.now))
    assert status.status == "running" and not status.ended and status.progress["pending"] == 2
    final = run_steps(backend, store, clock)
    assert final.status == "completed" and final.progress["fraction"] == 1.0
    for tp, target in proposal.reassignment().replicas.items():
        assert assignment(backend)[tp] == target
    assert throttles_left(backend) == []
    report = xcom(wf.final_report(store))
    assert report.report["status"] == "completed" and sorted(report.report["completed"]) == ["events-1", "orders-2"]
    assert ReassignmentPlan.from_dict(report.rollback_plan).replicas == proposal.base().replicas
    verify = xcom(wf.verify_and_clear_throttles(backend, proposal.plan))
    assert verify.complete and verify.throttles_cleared
    leaders = xcom(wf.elect_leaders(backend, proposal.plan))
    assert leaders.ok


def test_start_refuses_when_the_base_changed_since_approval(backend, clock, tmp_path) -> None:
    snap = wf.read_cluster(backend)
    proposal = wf.make_plan(snap, {"mode": "remove-brokers", "brokers": [4]})
    # Someone else moves a planned partition after approval.
    backend.alter_reassignments({TP("orders", 2): [3, 1]})
    clock.advance(60)
    backend.cluster.tick()
    writes = backend.writes
    with pytest.raises(wf.PlanChangedError, match="changed since approval"):
        wf.start_execution(backend, proposal.plan, tmp_path, approved_hash=proposal.content_hash)
    assert backend.writes == writes and not (tmp_path / "execution.json").exists()
    changed = dict(proposal.plan)
    changed["partitions"] = proposal.plan["partitions"][:1]
    with pytest.raises(wf.PlanChangedError):
        wf.start_execution(backend, changed, tmp_path, approved_hash=proposal.content_hash)


def test_cancel_request_travels_through_the_store(backend, clock, tmp_path) -> None:
    before = assignment(backend)
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4), TP("orders", 1): (1, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 100, "poll_interval": 1}, clock=clock.now)
    clock.advance(1)
    status = wf.step_execution(backend, tmp_path, clock=clock.now)
    assert status.progress["in_flight"] == 2
    wf.request_cancel(tmp_path)  # from "another machine": only the store is touched
    final = run_steps(backend, tmp_path, clock)
    assert final.status == "cancelled"
    assert assignment(backend) == before and throttles_left(backend) == []
    with pytest.raises(ValidationError, match="nothing to cancel"):
        wf.request_cancel(tmp_path)


def test_progress_reads_only_the_store(backend, clock, tmp_path) -> None:
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 100}, clock=clock.now)
    read = backend.partitions_read
    status = wf.execution_progress(tmp_path)
    assert backend.partitions_read == read and status.progress["total"] == 1
    with pytest.raises(ValidationError, match="no execution recorded"):
        wf.execution_progress(tmp_path / "nowhere")
    with pytest.raises(ValidationError, match="no report yet"):
        wf.final_report(tmp_path)


@pytest.mark.parametrize("data, message", [
    ({"throttle": 0}, "throttle must be a positive number"),
    ({"throttle": 10**20}, "at most 9223372036854775807"),
    ({"poll_interval": float("nan")}, "poll_interval must be a positive, finite"),
    ({"poll_interval": float("inf")}, "poll_interval must be a positive, finite"),
    ({"stall_timeout": -1}, "stall_timeout must be a positive"),
    ({"max_in_flight": 0}, "max_in_flight must be a positive integer"),
    ({"strategy": ["sideways"]}, "strategy must name strategies"),
    ({"on_drift": "ignore"}, "on_drift must be 'skip' or 'abort'"),
])
def test_bad_execution_requests_change_nothing(backend, tmp_path, data, message) -> None:
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4)})
    with pytest.raises(ValidationError) as e:
        wf.start_execution(backend, plan, tmp_path, data)
    assert message in str(e.value)
    assert backend.writes == 0 and not any(tmp_path.iterdir())


def test_plans_with_log_dir_moves_are_refused_not_half_run(backend, tmp_path) -> None:
    """The stateful executor does not run log-dir moves yet: a plan moving a replica between
    directories of its broker is refused whole (nothing written) rather than run as
    "completed" with its directory moves never made."""
    staying = backend.cluster.partitions[TP("orders", 0)].replicas
    plan = ReassignmentPlan({TP("orders", 0): tuple(staying)},
                            {TP("orders", 0): ("/disk2",) + ("any",) * (len(staying) - 1)})
    with pytest.raises(ValidationError, match="between log directories"):
        wf.start_execution(backend, plan, tmp_path)
    assert backend.writes == 0 and not any(tmp_path.iterdir())


def test_rerunning_a_finished_plan_writes_nothing(backend, clock, tmp_path) -> None:
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4), TP("events", 1): (1, 3, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 1000, "poll_interval": 1}, clock=clock.now)
    assert run_steps(backend, tmp_path, clock).status == "completed"
    writes = backend.writes
    status = wf.start_execution(backend, plan, tmp_path, {"throttle": 1000, "poll_interval": 1}, clock=clock.now)
    assert run_steps(backend, tmp_path, clock).status == "completed"
    assert backend.writes == writes, "a rerun sent a reassignment, config change or election"
    assert status.progress["completed"] == 2


def test_plan_files_pairing(tmp_path) -> None:
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 2)})
    back = ReassignmentPlan.from_assignment({TP("t", 0): (2, 3)})
    for name, expected in [("p.json", "p.rollback.json"), ("p", "p.rollback.json"),
                           ("p.txt", "p.txt.rollback.json")]:
        assert wf.rollback_path(tmp_path / name).name == expected
    written = wf.write_plan_pair(plan, back, tmp_path / "p.json")
    assert wf.read_base(tmp_path / "p.json") == back.replicas
    assert written == tmp_path / "p.rollback.json"
    assert wf.read_base(tmp_path / "q.json") is None
    with pytest.raises(ValidationError, match="base file .* does not exist"):
        wf.read_base(tmp_path / "p.json", tmp_path / "missing.json")


def test_plan_step_takes_loads_from_a_load_source(tmp_path) -> None:
    """Sizes only the load source knows: without it nothing is worth moving for disk balance;
    with it the heavy broker is relieved, and the proposal says where the loads came from."""
    from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition

    cap = BrokerCapacity(10**12, 10**8, 10**8)
    parts = [Partition("t", p, (1 + p % 2, 3), 1 + p % 2, (1 + p % 2, 3)) for p in range(4)]
    parts += [Partition("u", p, (1, 2), 1, (1, 2)) for p in range(4)]
    model = ClusterModel([Broker(b, capacity=cap) for b in (1, 2, 3, 4)], parts)
    heavy = {"t": {str(p): {"size_bytes": 10**9 * (p % 2 == 0)} for p in range(4)},
             "u": {str(p): {"size_bytes": 10**6} for p in range(4)}}
    (tmp_path / "loads.json").write_text(json.dumps({"version": 1, "source": "test", "topics": heavy}))
    request = {"mode": "rebalance", "goals": ["disk"], "thresholds": {"disk": 0.1}}
    plain = wf.make_plan(model, request)
    laid = xcom(wf.make_plan(model, request, loads=f"file:{tmp_path / 'loads.json'}"))
    assert plain.empty
    assert not laid.empty and laid.loads["coverage"]["covered"] == 8 and laid.loads["source"] == "test"
    before = {b: sum(10**9 for p in range(0, 4, 2) if b in parts[p].replicas) for b in (1, 2, 3, 4)}
    after_plan = {**model.assignment, **laid.reassignment().replicas}
    after = {b: sum(10**9 for p in range(0, 4, 2) if b in after_plan[TP("t", p)]) for b in (1, 2, 3, 4)}
    assert max(after.values()) < max(before.values())


def test_step_due_reads_only_the_moves_in_flight(backend, clock, tmp_path) -> None:
    """A trigger's poll: due when a move ended or on a cancel request, else not; it reads the
    reassignments of the moves in flight only and never a partition."""
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4), TP("orders", 1): (1, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 200, "max_incoming": 1, "poll_interval": 1},
                       clock=clock.now)
    assert wf.step_due(backend, tmp_path).reason == "nothing in flight"
    wf.step_execution(backend, tmp_path, clock=clock.now)
    read = backend.partitions_read
    check = xcom(wf.step_due(backend, tmp_path))
    assert (check.step_due, check.in_flight, check.ended) == (False, 1, [])
    for _ in range(100):  # replication runs on; the executor does not step meanwhile
        clock.advance(1)
        check = wf.step_due(backend, tmp_path)
        if check.step_due:
            break
    assert check.ended == ["orders-0"] and "1 moves ended (e.g. orders-0)" in check.reason
    assert backend.partitions_read == read
    wf.request_cancel(tmp_path)
    assert wf.step_due(backend, tmp_path).reason == "cancel requested"


def test_step_due_in_zookeeper_mode_waits_for_the_whole_batch(clock, tmp_path) -> None:
    """ZooKeeper mode starts the next batch only once the previous one is gone: a wake-up when
    one of two moves ended would start nothing, so the step is due only when both ended."""
    backend = InProcessBackend.for_model(four_broker_cluster(), incremental=False, clock=clock)
    sizes = {tp: p.size_bytes for tp, p in backend.cluster.to_model().partitions.items()}
    small, large = sorted([TP("orders", 0), TP("orders", 1)], key=sizes.__getitem__)
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4), TP("orders", 1): (1, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 200, "poll_interval": 1},
                       clock=clock.now)
    wf.step_execution(backend, tmp_path, clock=clock.now)
    assert wf.step_due(backend, tmp_path).in_flight == 2
    seen = []
    for _ in range(200):
        clock.advance(1)
        check = wf.step_due(backend, tmp_path)
        seen.append((len(check.ended), check.step_due))
        if check.step_due:
            break
    assert check.ended == sorted([str(small), str(large)]) and "2 moves ended" in check.reason
    assert (1, False) in seen, "one move ended first, and that was no reason to step"


def test_step_due_when_a_broker_of_the_run_goes_offline(backend, clock, tmp_path) -> None:
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4)})
    wf.start_execution(backend, plan, tmp_path, {"throttle": 1, "poll_interval": 1},
                       clock=clock.now)
    wf.step_execution(backend, tmp_path, clock=clock.now)
    assert not wf.step_due(backend, tmp_path).step_due  # at 1 B/s nothing ends soon
    backend.cluster.stop_broker(4)
    check = wf.step_due(backend, tmp_path)
    assert check.step_due and check.reason == "broker(s) 4 went offline"


class AdminApiLike(InProcessBackend):
    """The in-process backend refusing a down broker's configs the way the Admin API backend
    does (Kafka serves a broker's configs through that broker only)."""

    def alter_configs(self, resource, set_configs=None, delete_configs=()):
        from kafka_ops.errors import BrokerNotAvailableError

        if resource.type == "broker" and not self.cluster.brokers[int(resource.name)].alive:
            raise BrokerNotAvailableError(f"broker {resource.name} is not alive")
        return super().alter_configs(resource, set_configs, delete_configs)


@pytest.mark.parametrize("reachable", [True, False], ids=["zookeeper-like", "admin-api-like"])
def test_clearing_throttles_covers_down_brokers_or_names_them(clock, reachable) -> None:
    """A broker of the plan that is down when throttles are cleared would come back throttled
    for good: its configs are cleared where the backend reaches them, else it is named."""
    kind = InProcessBackend if reachable else AdminApiLike
    backend = kind(InProcessBackend.for_model(four_broker_cluster(), clock=clock).cluster)
    plan = ReassignmentPlan.from_assignment({TP("orders", 0): (3, 4)})
    base = ReassignmentPlan.from_assignment(
        {TP("orders", 0): backend.cluster.to_model().partitions[TP("orders", 0)].replicas})
    for b in (1, 2, 3, 4):
        backend.cluster.set_broker_config(b, {LEADER_RATE: "1000"})
    gone = base.replicas[TP("orders", 0)][0]  # a broker the plan moves data from
    backend.cluster.stop_broker(gone)
    result = xcom(wf.verify_and_clear_throttles(backend, plan, base=base))
    assert result.throttles_cleared
    left = [b for b, _k in throttles_left(backend)]
    if reachable:
        assert left == [] and result.throttles_left_on == []
    else:
        assert left == [gone] and result.throttles_left_on == [gone]
        backend.cluster.start_broker(gone)
        again = wf.verify_and_clear_throttles(backend, plan, base=base)
        assert again.throttles_left_on == [] and throttles_left(backend) == []


def test_digest_warns_when_the_throttle_is_below_the_ingest(backend) -> None:
    """A follower copying slower than its leader takes in data never catches up (as in Kafka)."""
    model = wf.read_cluster(backend).model()
    tp = TP("orders", 0)
    parts = [dataclasses.replace(p, bytes_in_per_sec=5000.0) if p.tp == tp else p for p in model]
    hot = ClusterModel(model.brokers.values(), parts, model.topic_configs)
    target = tuple(b for b in (1, 2, 3, 4) if b not in hot.partitions[tp].replicas)[:1] \
        + hot.partitions[tp].replicas[1:]
    plan = ReassignmentPlan.from_assignment({tp: target})
    never = wf.approval_digest(plan, hot, throttle=4000).risks
    assert any("never catch up" in r and "orders-0" in r for r in never), never
    shared = wf.approval_digest(plan, hot, throttle=8000, concurrency=2).risks
    assert any("share of the throttle" in r and "orders-0" in r for r in shared), shared
    fine = wf.approval_digest(plan, hot, throttle=20000, concurrency=2).risks
    assert not any("catch up" in r for r in fine), fine


def test_a_resume_after_moves_finished_is_no_log_dir_move(backend, clock, tmp_path) -> None:
    """On JBOD clusters a plan names the directory of each replica it adds. Once such a move
    finished (before a pause), the replica is on its broker: judged against the plan's base it
    is no directory move, and the resume goes on instead of refusing the plan."""
    tp = TP("orders", 0)
    base = ReassignmentPlan.from_assignment({tp: backend.cluster.partitions[tp].replicas})
    plan = ReassignmentPlan({tp: (3, 4)}, {tp: ("/disk1", "/disk2")})
    backend.cluster.alter_reassignments({tp: [3, 4]})  # the move finished before the pause
    for _ in range(100):
        clock.advance(1)
        if backend.describe_partitions([tp]).partitions[tp].replicas == (3, 4):
            break
    assert backend.describe_partitions([tp]).partitions[tp].replicas == (3, 4)
    with pytest.raises(ValidationError, match="between log directories"):
        wf.start_execution(backend, plan, tmp_path / "no-base")  # judged by the live replicas
    status = wf.start_execution(backend, plan, tmp_path / "with-base", base=base.to_dict(),
                                clock=clock.now)
    assert status.status == "running"
    assert run_steps(backend, tmp_path / "with-base", clock).status == "completed"
