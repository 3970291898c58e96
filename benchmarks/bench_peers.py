"""Our planner against the peers on the same cluster, scored by benchmarks/plan_metrics.py.

The cluster is loaded into a real ZooKeeper through the emulator's ZooKeeper face (the peers
read ZooKeeper, as they would a ZooKeeper-mode Kafka). The peers run from a SEPARATE venv
(their old pins would break ours); nothing of theirs is committed or runs in CI:

    python3 -m venv /work/peers-venv && /work/peers-venv/bin/pip install kafka-utils kafka-tools
    .venv/bin/python benchmarks/bench_peers.py [PRESET] [--seed N] [--peers-venv DIR]

- Yelp kafka-utils ``kafka-cluster-manager rebalance --replication-groups --brokers --leaders``
  (dry run: ``--write-to-file``, no ``--apply``), racks as replication groups through a
  group parser written here, its default (uniform) partition measurer.
- LinkedIn kafka-tools ``kafka-assigner balance -t count leader rackaware``, driven through its
  Python API (its CLI insists on Kafka's shell tools and an SSH/JMX sizer; the sizes are set
  from the snapshot instead), reading the cluster from ZooKeeper.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan_metrics import moves, score  # noqa: E402

from kafka_ops.emulator.runtime import Emulator  # noqa: E402
from kafka_ops.generator import generate_cluster  # noqa: E402
from kafka_ops.model import ClusterModel, TopicPartition  # noqa: E402
from kafka_ops.planner import plan_rebalance  # noqa: E402
from kafka_ops.testing.zookeeper import ZooKeeperServer  # noqa: E402

RACK_PARSER = '''
from kafka_utils.kafka_cluster_manager.cluster_info.replication_group_parser import (
    ReplicationGroupParser)


class RackParser(ReplicationGroupParser):
    def get_replication_group(self, broker):
        return (broker.metadata or {}).get("rack")
'''

ASSIGNER = '''
import json, sys
from argparse import Namespace
from kafka.tools.models.cluster import Cluster
from kafka.tools.assigner.actions.balance import ActionBalance

zk, sizes_file, out = sys.argv[1:4]
cluster = Cluster.create_from_zookeeper(zk, 1)
sizes = json.load(open(sizes_file))
for name, topic in cluster.topics.items():
    for p in topic.partitions:
        p.set_size(sizes.get(f"{name}:{p.num}", 0))
        p.scaled_size = p.size
new = cluster.clone()
ActionBalance(Namespace(types=["count", "leader", "rackaware"], default_retention=1,
                        exclude_topics=[]), new
              ).process_cluster()
json.dump({f"{t}:{p.num}": [b.id for b in p.replicas]
           for t, topic in new.topics.items() for p in topic.partitions}, open(out, "w"))
'''


def run_yelp(venv: Path, zk: str, work: Path) -> dict[TopicPartition, tuple[int, ...]]:
    (work / "bench.yaml").write_text(json.dumps({
        "clusters": {"bench": {"broker_list": ["127.0.0.1:9092"], "zookeeper": zk}},
        "local_config": {"cluster": "bench"},
    }))
    (work / "rack_parser.py").write_text(RACK_PARSER)
    out = work / "yelp-plan.json"
    cmd = [str(venv / "bin/kafka-cluster-manager"), "--cluster-type", "bench",
           "--discovery-base-path", str(work), "--group-parser", "rack_parser",
           "--write-to-file", str(out),
           "rebalance", "--replication-groups", "--brokers", "--leaders",
           "--max-partition-movements", "10000000", "--max-leader-changes", "10000000"]
    env = {**os.environ, "PYTHONPATH": str(work)}  # the group parser is imported by name
    subprocess.run(cmd, check=True, cwd=work, env=env, capture_output=True, text=True,
                   timeout=3600)
    plan = json.loads(out.read_text())
    return {TopicPartition(p["topic"], p["partition"]): tuple(p["replicas"])
            for p in plan["partitions"]}


def run_assigner(venv: Path, zk: str, cluster: ClusterModel, work: Path
                 ) -> dict[TopicPartition, tuple[int, ...]]:
    (work / "assigner.py").write_text(ASSIGNER)
    sizes = work / "sizes.json"
    sizes.write_text(json.dumps({f"{p.topic}:{p.partition}": p.size_bytes for p in cluster}))
    out = work / "assigner-plan.json"
    subprocess.run([str(venv / "bin/python"), str(work / "assigner.py"), zk, str(sizes), str(out)],
                   check=True, capture_output=True, text=True, timeout=3600)
    new = json.loads(out.read_text())
    result = {}
    for key, replicas in new.items():
        topic, _, num = key.rpartition(":")
        tp = TopicPartition(topic, int(num))
        if tuple(replicas) != cluster.partitions[tp].replicas:
            result[tp] = tuple(replicas)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", nargs="?", default="medium")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peers-venv", default="/work/peers-venv", type=Path)
    args = parser.parse_args()
    cluster = generate_cluster(args.preset, seed=args.seed)
    rows: dict[str, dict] = {"start": {**score(cluster), "seconds": 0.0}}
    t0 = time.perf_counter()
    ours = plan_rebalance(cluster).plan.replicas
    rows["kafka-ops"] = {**score(cluster, ours), **moves(cluster, ours),
                         "seconds": time.perf_counter() - t0}
    with ZooKeeperServer() as server, tempfile.TemporaryDirectory() as tmp:
        zk = f"{server.connect_string}/kafka"
        with Emulator(cluster, zookeeper=zk, mode="zk"):
            for name, run in (("yelp kafka-cluster-manager", lambda: run_yelp(
                    args.peers_venv, zk, Path(tmp))),
                              ("linkedin kafka-assigner", lambda: run_assigner(
                                  args.peers_venv, zk, cluster, Path(tmp)))):
                t0 = time.perf_counter()
                try:
                    new = run()
                except subprocess.CalledProcessError as e:
                    print(f"{name} failed: {e.stderr[-2000:]}", file=sys.stderr)
                    continue
                except subprocess.TimeoutExpired:
                    print(f"{name} did not finish within an hour", file=sys.stderr)
                    continue
                rows[name] = {**score(cluster, new), **moves(cluster, new),
                              "seconds": time.perf_counter() - t0}
    keys = [k for k in rows["kafka-ops"] if k != "seconds"] + ["seconds"]
    print(f"{args.preset}: {len(cluster.brokers)} brokers, {cluster.replica_count} replicas")
    print(f"{'metric':<30}" + "".join(f"{n[:26]:>28}" for n in rows))
    for k in keys:
        cells = []
        for r in rows.values():
            v = r.get(k, "")
            cells.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        print(f"{k:<30}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
