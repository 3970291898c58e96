"""How far the ZooKeeper face's znodes are from the cluster model: the mirror's lag, measured.

Tests and ``benchmarks/bench_mirror.py`` read every znode the face mirrors (live brokers,
controller, topic assignments, partition states, topic configs) with their own kazoo client and
list each difference from the model. An empty list means the znodes show the model exactly;
``wait_for_mirror`` measures how long that takes to become true.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_ops.backends.zk_paths import BROKER_IDS, CONTROLLER, TOPICS, parse_topic
from kafka_ops.emulator.cluster import EmulatedCluster


def mirror_differences(cluster: EmulatedCluster, zk: KazooClient, limit: int = 20) -> list[str]:
    """Differences between the model and the znodes (at most ``limit``, each one line)."""
    with cluster.lock:
        alive = sorted(b.id for b in cluster.brokers.values() if b.alive)
        controller = cluster.controller_id
        parts = {tp: (list(p.replicas), list(p.adding), list(p.removing), p.leader, list(p.isr))
                 for tp, p in cluster.partitions.items()}
        topics = sorted({tp.topic for tp in parts})
        configs = {t: cluster.topic_config(t) for t in topics}
    out: list[str] = []
    live = sorted(int(b) for b in zk.get_children(BROKER_IDS))
    if live != alive:
        out.append(f"/brokers/ids lists {live}, live brokers are {alive}")
    try:
        registered = json.loads(zk.get(CONTROLLER)[0])["brokerid"]
    except NoNodeError:
        registered = -1
    if registered != controller:
        out.append(f"/controller names {registered}, the controller is {controller}")
    topic_reads = {t: zk.get_async(f"{TOPICS}/{t}") for t in topics}
    config_reads = {t: zk.get_async(f"/config/topics/{t}") for t in topics}
    state_reads = {tp: zk.get_async(f"{TOPICS}/{tp.topic}/partitions/{tp.partition}/state")
                   for tp in parts}
    assignments = {}
    for t, result in topic_reads.items():
        assignments[t] = parse_topic(_get(result))[1]
    for t, result in config_reads.items():
        config = json.loads(_get(result)).get("config", {})
        if config != configs[t]:
            out.append(f"/config/topics/{t} holds {_short(config)}, the model {_short(configs[t])}")
    for tp, (replicas, adding, removing, leader, isr) in parts.items():
        shown = assignments[tp.topic].get(tp.partition)
        if shown != (replicas, adding, removing):
            out.append(f"{tp}: topic znode shows {shown}, model {(replicas, adding, removing)}")
        state = json.loads(_get(state_reads[tp]))
        if (state["leader"], state["isr"]) != (leader, isr):
            out.append(f"{tp}: state znode leader {state['leader']} isr {state['isr']}, "
                       f"model leader {leader} isr {isr}")
        if len(out) >= limit:
            break
    return out[:limit]


def wait_for_mirror(cluster: EmulatedCluster, zk: KazooClient, timeout: float,
                    clock: Callable[[], float] = time.monotonic) -> float:
    """Seconds until the znodes equal the model; AssertionError naming what still differs."""
    start = clock()
    while True:
        differences = mirror_differences(cluster, zk)
        if not differences:
            return clock() - start
        if clock() - start > timeout:
            raise AssertionError(f"the znodes still differ from the model after {timeout:g}s: "
                                 + "; ".join(differences[:5]))
        time.sleep(0.05)


def _get(result) -> bytes:
    return result.get(timeout=30)[0]


def _short(config: dict) -> str:
    text = json.dumps(config, sort_keys=True)
    return text if len(text) < 120 else f"{text[:100]}... ({len(text)} chars)"
