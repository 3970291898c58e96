"""Mirror benchmark: how far the emulator's ZooKeeper znodes lag its model under a large plan.

Issue 17: during a 4,000-partition plan the mirror fell ~60 s behind and left topic throttle
lists in /config/topics/* minutes after a clean exit. This drives, on a real ZooKeeper and
through our ZooKeeper backend, what an executor run does to a ZooKeeper-mode cluster:

  1. throttle lists on every plan topic (leader/follower throttled replicas, ~12 KB each),
  2. one /admin/reassign_partitions of 4,000 partitions (each moves one replica to a new broker
     that also becomes its preferred leader), replicated by the emulator's bandwidth model,
  3. the throttles removed,
  4. preferred leader elections in 10 batches of 400 (/admin/preferred_replica_election),

while a sampler measures the end-to-end lag: every ``--sample`` seconds it takes each
partition's epoch from the model and times how long until every state znode's version (Kafka's
partition epoch) has reached it. At the end every znode must equal the model (no throttle left).
Target: the worst lag under one executor poll interval (5 s by default).

    .venv/bin/python benchmarks/bench_mirror.py [--partitions 4000] [--batches 10]

Timings are wall-clock on whatever else the machine is running: treat them as upper bounds.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from kazoo.client import KazooClient

from kafka_ops.backends.base import ConfigResource
from kafka_ops.backends.zookeeper import ZooKeeperBackend
from kafka_ops.emulator.clock import ManualClock
from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.zk_check import mirror_differences, wait_for_mirror
from kafka_ops.emulator.zk_face import TOPICS, ZooKeeperFace
from kafka_ops.executor.leaders import elect_preferred_leaders
from kafka_ops.model import (
    Broker,
    BrokerCapacity,
    ClusterModel,
    Partition,
    TopicPartition,
)
from kafka_ops.testing.zookeeper import ZooKeeperServer

MB = 10**6
OLD, NEW = 12, 6  # brokers holding the data, brokers it moves to


def build(partitions: int, topics: int) -> tuple[ClusterModel, dict[TopicPartition, tuple]]:
    capacity = BrokerCapacity(10**13, 200.0 * MB, 200.0 * MB)
    brokers = [Broker(i, host="localhost", port=9090 + i, capacity=capacity)
               for i in range(1, OLD + NEW + 1)]
    parts, targets = [], {}
    for n in range(partitions):
        replicas = tuple((n + k) % OLD + 1 for k in range(3))
        p = Partition(f"topic-{n % topics}", n // topics, replicas, replicas[0], replicas,
                      size_bytes=5 * MB)
        parts.append(p)
        targets[p.tp] = (OLD + 1 + n % NEW, replicas[0], replicas[1])
    return ClusterModel(brokers, parts, {}), targets


class LagSampler(threading.Thread):
    """End-to-end lag: model epochs at time t -> first time every state znode shows them."""

    def __init__(self, cluster: EmulatedCluster, zk: KazooClient, every: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.zk, self.every = cluster, zk, every
        self.lags: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.every):
            t0 = time.monotonic()
            with self.cluster.lock:
                epochs = {tp: p.partition_epoch for tp, p in self.cluster.partitions.items()}
            behind = dict(epochs)
            while behind and not self.stop.is_set():
                stats = {tp: self.zk.exists_async(
                    f"{TOPICS}/{tp.topic}/partitions/{tp.partition}/state") for tp in behind}
                behind = {tp: e for tp, e in behind.items()
                          if (s := stats[tp].get(timeout=60)) is None or s.version < e}
                if behind:
                    time.sleep(0.05)
            if not behind:
                self.lags.append(time.monotonic() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=4000)
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--batches", type=int, default=10, help="election batches")
    parser.add_argument("--step", type=float, default=0.05,
                        help="emulated seconds per 50 ms tick (replication speed)")
    parser.add_argument("--sample", type=float, default=1.0, help="lag sample period, s")
    parser.add_argument("--poll-interval", type=float, default=5.0,
                        help="the executor poll interval the lag is compared with, s")
    args = parser.parse_args()

    model, targets = build(args.partitions, args.topics)
    clock = ManualClock()
    cluster = EmulatedCluster(model, clock=clock, cluster_id="bench-mirror")
    with ZooKeeperServer() as server:
        t0 = time.monotonic()
        face = ZooKeeperFace(cluster, server.connect_string, timeout=30.0).start()
        print(f"{args.partitions} partitions, {OLD + NEW} brokers; face started in "
              f"{time.monotonic() - t0:.1f} s")
        zk = KazooClient(hosts=server.connect_string, timeout=30.0)
        zk.start(timeout=30)
        sampler = LagSampler(cluster, zk, args.sample)
        ticking = threading.Event()

        def tick() -> None:
            while not ticking.wait(0.05):
                clock.advance(args.step)
                cluster.tick()

        ticker = threading.Thread(target=tick, daemon=True)
        backend = ZooKeeperBackend(server.connect_string, election_timeout_s=120.0)
        try:
            sampler.start()
            ticker.start()
            phases = []
            start = time.monotonic()
            by_topic: dict[str, list[str]] = {}
            for tp, target in targets.items():
                by_topic.setdefault(tp.topic, []).extend(
                    f"{tp.partition}:{b}" for b in sorted(set(target) | set(
                        model.partitions[tp].replicas)))
            for topic, entries in by_topic.items():
                value = ",".join(entries)
                backend.alter_configs(ConfigResource("topic", topic), {
                    "leader.replication.throttled.replicas": value,
                    "follower.replication.throttled.replicas": value})
            phases.append(("throttles set", time.monotonic() - start))
            backend.alter_reassignments(targets)
            deadline = time.monotonic() + 900
            while backend.list_reassignments():
                if time.monotonic() > deadline:
                    raise SystemExit("reassignment did not finish within 900 s")
                time.sleep(0.5)
            phases.append(("reassignment done", time.monotonic() - start))
            for topic in by_topic:
                backend.alter_configs(ConfigResource("topic", topic), delete_configs=(
                    "leader.replication.throttled.replicas",
                    "follower.replication.throttled.replicas"))
            phases.append(("throttles removed", time.monotonic() - start))
            batch = -(-args.partitions // args.batches)
            report = elect_preferred_leaders(backend, targets, batch)
            elected = (f"{len(report.elected)} leaders elected in "
                       f"{-(-len(report.elected) // batch)} batches")
            phases.append((elected, time.monotonic() - start))
            ticking.set()
            final = wait_for_mirror(cluster, zk, timeout=120)
            phases.append(("znodes equal the model", time.monotonic() - start))
        finally:
            ticking.set()
            sampler.stop.set()
            sampler.join(timeout=120)
            backend.close()
        left = mirror_differences(cluster, zk)
        throttles_left = [t for t in by_topic if b"throttled" in zk.get(f"/config/topics/{t}")[0]]
        zk.stop()
        zk.close()
        stats = getattr(face, "mirror_stats", dict)()
        face.stop()

    for name, at in phases:
        print(f"  {at:7.1f} s  {name}")
    lags = sorted(sampler.lags)
    if lags:
        p95 = lags[min(len(lags) - 1, int(0.95 * len(lags)))]
        print(f"end-to-end lag over {len(lags)} samples: median {statistics.median(lags):.2f} s, "
              f"p95 {p95:.2f} s, max {lags[-1]:.2f} s (includes reading "
              f"{args.partitions} state znodes, ~0.2-0.5 s)")
        verdict = "within" if lags[-1] < args.poll_interval else "OVER"
        print(f"worst lag {lags[-1]:.2f} s: {verdict} one poll interval ({args.poll_interval:g} s)")
    print(f"caught up {final:.2f} s after the last election; differences left: {len(left)}; "
          f"topics with throttle lists left: {len(throttles_left)}")
    if stats:
        print("face: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
    print(f"leader report: {len(report.elected)} elected, {len(report.errors)} errors, "
          f"{len(report.misplaced)} misplaced")


if __name__ == "__main__":
    main()
