"""JBOD log directories without sockets: snapshots, the disk planner, the emulator's
directory copies (future replica, throttle, swap) and directory failures.

Balance is checked by recomputing each directory's bytes from the plan applied to the cluster
(not by the planner's own measure), and plans go through Kafka's JSON rules (ReassignmentPlan
parsing: log_dirs as long as replicas, "any" allowed).
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, ClusterModel, LogDir, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner.disks import (
    failed_replicas,
    place_added_replicas,
    plan_fix_failed_dirs,
    plan_rebalance_disks,
)
from kafka_ops.snapshot import model_from_dict, model_to_dict

MB = 1_000_000
DIRS = tuple(LogDir(f"/disk{i}", 1000 * MB) for i in range(4))


def one_full_disk(sizes: list[int], brokers: int = 3) -> ClusterModel:
    """Every replica of broker 0 (and of the others) on /disk0; /disk1-3 empty."""
    bs = [Broker(i, rack=f"r{i}", log_dirs=DIRS) for i in range(brokers)]
    parts = [Partition("t", i, tuple(range(brokers)), 0, tuple(range(brokers)), size_bytes=s,
                       log_dirs=("/disk0",) * brokers) for i, s in enumerate(sizes)]
    return ClusterModel(bs, parts)


def applied(cluster: ClusterModel, plan: ReassignmentPlan) -> dict[int, dict[str, int]]:
    """Bytes per directory once the plan's log_dirs are in place, counted from scratch."""
    used: dict[int, dict[str, int]] = {b: {d.path: 0 for d in cluster.brokers[b].log_dirs}
                                       for b in cluster.brokers}
    for p in cluster:
        target = plan.log_dirs.get(p.tp)
        reps = plan.replicas.get(p.tp, p.replicas)
        for i, b in enumerate(reps):
            path = target[i] if target and target[i] != "any" else p.log_dir_of(b)
            used[b][path] += p.size_bytes
    return used


def test_one_full_disk_is_balanced_inside_the_broker_and_no_replica_leaves():
    sizes = [37 * MB + (i * 7919) % (20 * MB) for i in range(60)]  # ~2.8 GB per broker
    cluster = one_full_disk(sizes)
    result = plan_rebalance_disks(cluster, threshold=0.8, band=0.05)
    plan = ReassignmentPlan.from_json(result.plan.to_json())  # Kafka's rules
    plan.validate_against(cluster)
    assert plan.replicas == {tp: cluster.partitions[tp].replicas for tp in plan.replicas}
    total = sum(sizes)
    for b, used in applied(cluster, plan).items():
        assert sum(used.values()) == total  # nothing left the broker
        fractions = [u / (1000 * MB) for u in used.values()]
        mean = total / 4 / (1000 * MB)
        assert max(fractions) <= 0.8
        assert all(abs(f - mean) <= 0.05 for f in fractions), (b, fractions)
    assert result.before.worst_spread > 0.5 and result.after.worst_spread <= 0.1


def test_threshold_relieves_an_over_full_directory_even_when_the_band_is_wide():
    cluster = one_full_disk([100 * MB] * 9, brokers=2)  # 900 MB of 1000 on /disk0
    plan = plan_rebalance_disks(cluster, threshold=0.5, band=0.99).plan
    for used in applied(cluster, plan).values():
        assert max(used.values()) <= 500 * MB


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.integers(1, 200 * MB), min_size=1, max_size=40), hs.integers(0, 2**31))
def test_disk_plans_never_change_replica_lists_and_never_overfill(sizes, seed):
    rng = random.Random(seed)
    dirs = tuple(LogDir(f"/d{i}", rng.choice([0, 2000 * MB, 4000 * MB])) for i in range(3))
    bs = [Broker(i, log_dirs=dirs) for i in range(3)]
    parts = [Partition("t", i, (0, 1, 2), 0, (0, 1, 2), size_bytes=s,
                       log_dirs=tuple(rng.choice(dirs).path for _ in range(3)))
             for i, s in enumerate(sizes)]
    cluster = ClusterModel(bs, parts)
    result = plan_rebalance_disks(cluster, threshold=0.9, band=0.02)
    plan = ReassignmentPlan.from_json(result.plan.to_json())
    for tp, reps in plan.replicas.items():
        assert reps == cluster.partitions[tp].replicas
    before = applied(cluster, ReassignmentPlan({}))
    after = applied(cluster, plan)
    for b in after:
        assert sum(after[b].values()) == sum(before[b].values())
    assert result.after.worst_spread <= result.before.worst_spread + 1e-9


def test_bad_options_are_refused():
    with pytest.raises(ValidationError, match="threshold"):
        plan_rebalance_disks(one_full_disk([MB]), threshold=0)
    with pytest.raises(ValidationError, match="unknown broker 9"):
        plan_rebalance_disks(one_full_disk([MB]), brokers=[9])


def test_added_replicas_land_in_the_least_used_directory():
    cluster = one_full_disk([100 * MB] * 3, brokers=4)
    # broker 3 holds everything on /disk0; its replica of t-0 moves to new broker... 4 is absent,
    # so move t-0 from broker 3 to broker 2? Both hold it: use a fresh cluster instead.
    bs = [Broker(i, log_dirs=DIRS) for i in range(3)]
    parts = [Partition("t", 0, (0, 1), 0, (0, 1), size_bytes=10 * MB, log_dirs=("/disk0", "/disk0")),
             Partition("u", 0, (2,), 2, (2,), size_bytes=50 * MB, log_dirs=("/disk0",))]
    cluster = ClusterModel(bs, parts)
    plan = place_added_replicas(cluster, ReassignmentPlan({TopicPartition("t", 0): (2, 1)}))
    assert plan.log_dirs == {TopicPartition("t", 0): ("/disk1", "any")}
    assert ReassignmentPlan.from_json(plan.to_json()).log_dirs == plan.log_dirs


def test_snapshot_round_trips_log_dirs_and_old_snapshots_still_load():
    cluster = one_full_disk([MB, 2 * MB])
    again = model_from_dict(model_to_dict(cluster))
    assert again.brokers[1].log_dirs == DIRS
    assert again.partition("t", 1).log_dirs == ("/disk0",) * 3
    old = model_to_dict(cluster)
    for b in old["brokers"]:
        del b["log_dirs"]
    for t in old["topics"]:
        for p in t["partitions"]:
            del p["log_dirs"]
    plain = model_from_dict(old)
    assert plain.brokers[1].log_dirs == () and plain.partition("t", 1).log_dirs == ()
    bad = model_to_dict(cluster)
    bad["topics"][0]["partitions"][0]["log_dirs"] = ["/disk0"]
    with pytest.raises(ValidationError, match="parallel to replicas"):
        model_from_dict(bad)


# -- the emulator ------------------------------------------------------------------------------
def emulated(sizes: list[int], rate: int | None) -> tuple[EmulatedCluster, ManualClock]:
    clock = ManualClock()
    cluster = EmulatedCluster(one_full_disk(sizes), mode="kraft", clock=clock)
    if rate is not None:
        cluster.set_broker_config(0, {"replica.alter.log.dirs.io.max.bytes.per.second": str(rate)})
    return cluster, clock


def test_a_move_copies_a_future_replica_at_the_throttle_then_swaps():
    cluster, clock = emulated([10 * MB, 30 * MB], rate=MB)
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert cluster.alter_replica_log_dirs(0, {t0: "/disk1", t1: "/disk2"}) == {t0: 0, t1: 0}
    clock.advance(19.9)  # two futures share 1 MB/s: t-0 (10 MB) done at 20 s
    cluster.tick()
    dirs = {path: entries for path, _, _, entries in cluster.describe_log_dirs_full(0)}
    assert (t0, 10 * MB, False) in dirs["/disk0"]
    assert [e for e in dirs["/disk1"] if e[0] == t0][0][2] is True  # still a future replica
    clock.advance(0.2)
    cluster.tick()
    assert cluster.to_model().partition("t", 0).log_dirs == ("/disk1", "/disk0", "/disk0")
    clock.advance(19.8)  # t-1 has 20 MB left at 1 MB/s alone: done at 40 s
    cluster.tick()
    assert cluster.to_model().partition("t", 1).log_dir_of(0) == "/disk0"
    clock.advance(0.3)
    cluster.tick()
    assert cluster.to_model().partition("t", 1).log_dir_of(0) == "/disk2"


def test_alter_replica_log_dirs_errors_follow_kafka():
    cluster, _ = emulated([MB], rate=None)
    t0 = TopicPartition("t", 0)
    assert cluster.alter_replica_log_dirs(0, {t0: "/nope"}) == {t0: 57}  # LOG_DIR_NOT_FOUND
    assert cluster.alter_replica_log_dirs(0, {TopicPartition("x", 0): "/disk1"}) == {
        TopicPartition("x", 0): 6}  # not hosted: NOT_LEADER_OR_FOLLOWER, remembered
    cluster.fail_log_dir(0, "/disk3")
    assert cluster.alter_replica_log_dirs(0, {t0: "/disk3"}) == {t0: 56}  # KAFKA_STORAGE_ERROR
    assert cluster.alter_replica_log_dirs(0, {t0: "/disk1"}) == {t0: 0}
    cluster.tick()  # unthrottled: done at once
    assert cluster.to_model().partition("t", 0).log_dir_of(0) == "/disk1"


def test_a_failed_directory_takes_its_replicas_offline_and_fix_moves_them_away():
    cluster, clock = emulated([MB, MB], rate=None)
    cluster.fail_log_dir(0, "/disk0")
    model = cluster.to_model()
    for p in model:
        assert 0 not in p.isr and p.leader in (1, 2)
    assert not model.brokers[0].log_dir("/disk0").online and model.brokers[0].alive
    assert {(p.tp, b) for p, b in failed_replicas(model)} == {
        (TopicPartition("t", 0), 0), (TopicPartition("t", 1), 0)}
    bigger = ClusterModel(list(model.brokers.values()) + [Broker(3, rack="r0", log_dirs=DIRS)],
                          model.partitions.values())
    plan = ReassignmentPlan.from_json(plan_fix_failed_dirs(bigger).to_json())
    assert plan.replicas == {TopicPartition("t", 0): (3, 1, 2), TopicPartition("t", 1): (3, 1, 2)}
    assert {d[0] for d in plan.log_dirs.values()} <= {"/disk0", "/disk1"}


# -- the workflow: cross-broker plans on JBOD clusters ------------------------------------------
def test_cross_broker_plans_name_the_directory_of_each_added_replica():
    from kafka_ops.workflow import PlanRequest, plan_cluster

    bs = [Broker(i, rack=f"r{i % 2}", log_dirs=DIRS) for i in range(4)]
    parts = [Partition("t", i, (i % 3, (i + 1) % 3), i % 3, (i % 3, (i + 1) % 3),
                       size_bytes=(10 + i) * MB, log_dirs=("/disk0", "/disk1")) for i in range(9)]
    cluster = ClusterModel(bs, parts)
    result = plan_cluster(cluster, PlanRequest(mode="add-brokers", brokers=[3]))
    plan = ReassignmentPlan.from_json(result.plan.to_json())
    added = [(tp, b) for tp, reps in plan.replicas.items() for b in reps
             if b not in cluster.partitions[tp].replicas]
    assert added and all(b == 3 for _, b in added)
    for tp, b in added:  # every added replica has a directory of broker 3, the others "any"
        dirs = plan.log_dirs[tp]
        assert dirs[plan.replicas[tp].index(b)] in {d.path for d in DIRS}
        assert all(d == "any" for r, d in zip(plan.replicas[tp], dirs, strict=True) if r != b)
    placed = [plan.log_dirs[tp][plan.replicas[tp].index(3)] for tp, _ in added]
    assert len(set(placed)) == min(len(placed), 4)  # spread over the empty disks


def test_fix_offline_also_moves_replicas_of_a_failed_directory():
    from kafka_ops.workflow import PlanRequest, plan_cluster

    failed = tuple(LogDir(d.path, d.capacity_bytes, d.path != "/disk1") for d in DIRS)
    bs = [Broker(0, "r0", log_dirs=failed)] + [Broker(i, f"r{i % 2}", log_dirs=DIRS)
                                               for i in range(1, 4)]
    parts = [Partition("t", 0, (0, 1), 1, (1,), size_bytes=MB, log_dirs=("/disk1", "/disk0")),
             Partition("t", 1, (0, 2), 0, (0, 2), size_bytes=MB, log_dirs=("/disk0", "/disk0"))]
    result = plan_cluster(ClusterModel(bs, parts), PlanRequest(mode="fix-offline"))
    assert set(result.plan.replicas) == {TopicPartition("t", 0)}
    new = result.plan.replicas[TopicPartition("t", 0)]
    assert 0 not in new and 1 in new
    assert result.plan.log_dirs[TopicPartition("t", 0)][new.index(new[0])] in {d.path for d in DIRS}


# -- Kafka's JSON rules for log_dirs --------------------------------------------------------------
# No Kafka runs here (no broker or Kafka distribution can be installed), so the stock
# `kafka-reassign-partitions --execute` could not be run on our plans. Instead each plan we
# write is checked by this second, independent reading of the rules of Kafka's
# ReassignPartitionsCommand.parsePartitionReassignmentData and of the broker's
# AlterReplicaLogDirs: a JSON object {"version": 1, "partitions": [...]}; each entry has exactly
# "topic" (string), "partition" (int), "replicas" (ints, no duplicates) and optionally
# "log_dirs" (strings, as many as replicas); each log dir is "any" or an absolute path (the
# broker resolves a relative one against its working directory, which is no log dir).


def kafka_json_errors(text: str) -> list[str]:
    import json

    data = json.loads(text)
    errors = []
    if set(data) != {"version", "partitions"} or data["version"] != 1:
        errors.append(f"top level {sorted(data)} version {data.get('version')}")
    seen = set()
    for entry in data["partitions"]:
        where = f"{entry.get('topic')}-{entry.get('partition')}"
        if not set(entry) <= {"topic", "partition", "replicas", "log_dirs"} or \
                not {"topic", "partition", "replicas"} <= set(entry):
            errors.append(f"{where}: keys {sorted(entry)}")
        if not isinstance(entry["topic"], str) or type(entry["partition"]) is not int:
            errors.append(f"{where}: topic/partition types")
        reps = entry["replicas"]
        if not reps or any(type(r) is not int for r in reps) or len(set(reps)) != len(reps):
            errors.append(f"{where}: replicas {reps}")
        if (entry["topic"], entry["partition"]) in seen:
            errors.append(f"{where}: duplicate")
        seen.add((entry["topic"], entry["partition"]))
        if "log_dirs" in entry:
            dirs = entry["log_dirs"]
            if not isinstance(dirs, list) or len(dirs) != len(reps):
                errors.append(f"{where}: log_dirs {dirs} for replicas {reps}")
            elif not all(isinstance(d, str) and (d == "any" or d.startswith("/")) for d in dirs):
                errors.append(f"{where}: log_dirs {dirs} not 'any' or absolute")
    return errors


def jbod_plans() -> dict[str, ReassignmentPlan]:
    """One plan of each kind we write with log_dirs."""
    rng = random.Random(7)
    disks = plan_rebalance_disks(one_full_disk([rng.randint(1, 90) * MB for _ in range(30)]))
    brokers = [Broker(i, rack=f"r{i % 2}", log_dirs=DIRS) for i in range(4)]
    parts = [Partition("t", i, (i % 3, (i + 1) % 3), i % 3, (i % 3, (i + 1) % 3), size_bytes=MB * (i + 1),
                       log_dirs=("/disk0", "/disk1")) for i in range(9)]
    cluster = ClusterModel(brokers, parts)
    added = place_added_replicas(cluster, ReassignmentPlan({TopicPartition("t", i): (3, (i + 1) % 3)
                                                            for i in range(9)}))
    failed = ClusterModel([Broker(b.id, b.rack, log_dirs=(LogDir("/disk0", 1000 * MB, online=False), *DIRS[1:]))
                           if b.id == 0 else b for b in brokers], parts)
    return {"rebalance-disks": disks.plan, "added replicas": added, "failed dirs": plan_fix_failed_dirs(failed)}


@pytest.mark.parametrize("kind", ["rebalance-disks", "added replicas", "failed dirs"])
def test_our_log_dirs_plans_follow_kafkas_json_rules(kind):
    plan = jbod_plans()[kind]
    assert plan.log_dirs, "the plan names no directory: nothing checked"
    text = plan.to_json()
    assert kafka_json_errors(text) == []
    again = ReassignmentPlan.from_json(text)  # our parser: Kafka's checks and messages
    assert again == plan and again.to_json() == text


def test_the_json_shape_exactly():
    """One entry per line, as Kafka's tool prints a proposed assignment; "any" where no
    directory is asked; no log_dirs key when every directory is "any"."""
    plan = ReassignmentPlan({TopicPartition("t", 0): (1, 2), TopicPartition("t", 1): (2, 3)},
                            {TopicPartition("t", 0): ("/disk1", "any")})
    assert plan.to_json() == (
        '{"version":1,"partitions":[\n'
        '{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/disk1","any"]},\n'
        '{"topic":"t","partition":1,"replicas":[2,3]}\n'
        ']}\n')


@pytest.mark.parametrize("entry, message", [
    ('"replicas":[1,2],"log_dirs":["/d"]',
     "Size of replicas list [1, 2] is different from size of log dirs list [/d] for partition t-0"),
    ('"replicas":[1,2],"log_dirs":"/d"', "Expected `log_dirs` to be a list of strings"),
    ('"replicas":[1,2],"log_dirs":[1,"any"]', "Expected `log_dirs` to be a list of strings"),
])
def test_log_dirs_against_kafkas_parse_rules_are_refused_with_its_messages(entry, message):
    text = '{"version":1,"partitions":[{"topic":"t","partition":0,' + entry + '}]}'
    with pytest.raises(ValidationError, match=re.escape(message)):
        ReassignmentPlan.from_json(text)


def test_a_relative_log_dir_is_refused_before_execution():
    from kafka_ops.executor.log_dirs import check_log_dir_paths

    plan = ReassignmentPlan.from_json(
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["data/d1","any"]}]}')
    assert kafka_json_errors(plan.to_json()) != []
    with pytest.raises(ValidationError, match="neither \"any\" nor an absolute path"):
        check_log_dir_paths(plan)


# -- directory capacity: a full directory fails like a disk that cannot take a write -------------
def small_dirs_cluster(bytes_in: float = 0.0) -> tuple[EmulatedCluster, ManualClock]:
    """Brokers 0-2, directories /big (1000 MB) and /small (30 MB); t-0 (50 MB) in /big."""
    dirs = (LogDir("/big", 1000 * MB), LogDir("/small", 30 * MB))
    brokers = [Broker(i, rack=f"r{i}", log_dirs=dirs) for i in range(3)]
    part = Partition("t", 0, (0, 1, 2), 0, (0, 1, 2), size_bytes=50 * MB, bytes_in_per_sec=bytes_in,
                     log_dirs=("/big", "/big", "/big"))
    small = Partition("t", 1, (0, 1, 2), 0, (0, 1, 2), size_bytes=20 * MB, bytes_in_per_sec=bytes_in,
                      log_dirs=("/small", "/big", "/big"))
    clock = ManualClock()
    return EmulatedCluster(ClusterModel(brokers, [part, small]), mode="kraft", clock=clock), clock


def test_a_copy_that_does_not_fit_fails_the_target_directory_not_the_replica():
    cluster, clock = small_dirs_cluster()
    t0 = TopicPartition("t", 0)
    cluster.set_broker_config(0, {"replica.alter.log.dirs.io.max.bytes.per.second": str(MB)})
    assert cluster.alter_replica_log_dirs(0, {t0: "/small"}) == {t0: 0}
    for _ in range(9):  # 20 MB there already: the 50 MB copy outgrows 30 MB after ~10 s
        clock.advance(1.0)
        cluster.tick()
    assert cluster.log_dirs.dirs[0]["/small"].online
    clock.advance(2.0)
    cluster.tick()
    dirs = {path: (error, entries) for path, error, _, entries in cluster.describe_log_dirs_full(0)}
    assert dirs["/small"] == (56, [])  # KAFKA_STORAGE_ERROR: the directory is offline
    assert cluster.log_dirs.futures == {} and cluster.log_dirs.placement[t0, 0] == "/big"
    model = cluster.to_model()
    assert 0 in model.partition("t", 0).isr  # the replica being copied is fine where it was
    assert 0 not in model.partition("t", 1).isr and model.partition("t", 1).leader != 0  # t-1 was in /small
    assert [e.data["reason"] for e in cluster.events if e.kind == "log_dir_fault"] == ["full"]
    assert cluster.alter_replica_log_dirs(0, {t0: "/small"}) == {t0: 56}


def test_produce_traffic_filling_a_directory_takes_its_replicas_offline():
    cluster, clock = small_dirs_cluster(bytes_in=MB)  # t-1 grows 1 MB/s in /small: full at ~10 s
    clock.advance(8.0)
    cluster.tick()
    assert cluster.log_dirs.dirs[0]["/small"].online
    clock.advance(4.0)
    cluster.tick()
    assert not cluster.log_dirs.dirs[0]["/small"].online
    model = cluster.to_model()
    assert 0 not in model.partition("t", 1).isr and model.partition("t", 1).leader in (1, 2)
    assert 0 in model.partition("t", 0).isr  # /big is fine
    assert failed_replicas(model) == [(model.partition("t", 1), 0)]


def test_a_brokers_single_synthesized_directory_is_not_enforced():
    """Brokers without known directories get one (their disk): other faults model it."""
    brokers = [Broker(i, rack=f"r{i}") for i in range(3)]
    part = Partition("t", 0, (0, 1, 2), 0, (0, 1, 2), size_bytes=50 * MB)
    cluster = EmulatedCluster(ClusterModel(brokers, [part]), mode="kraft", clock=ManualClock())
    cluster.tick()
    assert not cluster.log_dirs.enforced
