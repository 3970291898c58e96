"""What a test checks a cluster with after a refused command or a fault: through the cluster's
own interfaces (every znode ZooKeeper holds; the Admin API's view via a backend).

``zk_fingerprint`` records each znode's last-modified and child-list zxids: a command that was
refused must leave all of them as they were (even a rewrite with the same bytes changes mzxid).
``safety_violations`` names what breaks the executor's promises: a partition with fewer in-sync
replicas than its replication factor, a throttle left behind, a reassignment still running.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_ops.backends.base import ClusterBackend, ConfigResource
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)


def zk_fingerprint(hosts: str) -> dict[str, tuple[int, int]]:
    """{znode path: (mzxid, pzxid)} of every znode under the connect string's chroot."""
    client = KazooClient(hosts=hosts)
    client.start(timeout=15)
    try:
        out: dict[str, tuple[int, int]] = {}
        stack = ["/"]
        while stack:
            path = stack.pop()
            try:
                stat = client.exists(path)
                children = client.get_children(path)
            except NoNodeError:
                continue
            if stat is not None:
                out[path] = (stat.mzxid, stat.pzxid)
            stack.extend(f"{path.rstrip('/')}/{c}" for c in children)
        return out
    finally:
        client.stop()
        client.close()


def throttles_left(backend: ClusterBackend, model: ClusterModel) -> dict[str, dict[str, str]]:
    """Every throttle config still set on a topic or a live broker."""
    keys = {LEADER_REPLICAS, FOLLOWER_REPLICAS, LEADER_RATE, FOLLOWER_RATE}
    found = {}
    resources = [ConfigResource.topic(t) for t in model.topics]
    resources += [ConfigResource.broker(b) for b in model.alive_broker_ids]
    for resource in resources:
        configs = {k: v for k, v in backend.describe_configs(resource).items() if k in keys}
        if configs:
            found[f"{resource.type} {resource.name}"] = configs
    return found


def under_replicated(model: ClusterModel, expected_rf: dict[TopicPartition, int]) -> list[str]:
    """Partitions with fewer in-sync replicas than the replication factor they should have."""
    bad = []
    for tp, rf in expected_rf.items():
        p = model.partitions[tp]
        if len(set(p.isr)) < rf or len(p.target_replicas) != rf:
            bad.append(f"{tp}: replicas {list(p.replicas)} isr {list(p.isr)} (rf {rf})")
    return bad


def safety_violations(backend: ClusterBackend, expected_rf: dict[TopicPartition, int]) -> list[str]:
    """What a finished (or cleanly stopped) run must not leave: under-replication, throttles,
    a reassignment in flight."""
    model = backend.describe_cluster()
    problems = under_replicated(model, expected_rf)
    problems += [f"throttle left on {r}: {c}" for r, c in throttles_left(backend, model).items()]
    problems += [f"reassignment still running: {tp}" for tp in backend.list_reassignments()]
    return problems
