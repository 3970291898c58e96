"""Resource pools: brokers split into isolated groups, each serving its own topics.

Seed 000's isolation scheme (and seed 003's "resource groups"): a pool is a small cluster
inside the cluster, so one tenant's traffic spike or a dead broker only hurts the topics of
that pool. This module holds the pools file, its validation against a cluster, and the two
pool operations: placing a NEW topic (or new partitions) inside its pool with Kafka's own
algorithm in one step, and a plan that migrates existing topics into their pool.

``migrate_to_pool`` is the only placement of misplaced replicas in kafka-ops: ``kafka-ops pools
migrate`` prints its plan, and the planner's migrate-pool mode (``kafka-ops plan migrate-pool``,
the workflow API and the Airflow kafka_pool_migration DAG) applies it, pool by pool, as its
prepare step and adds the hard-goal checks and the planner's summary (see planner/modes.py).

Pools file (YAML; JSON is valid YAML, so a JSON file works too)::

    default_pool: shared            # optional: topics that match no pool go here
    pools:
      payments:
        brokers: [1, 2, 3]          # broker ids; a broker belongs to at most one pool
        topics: [ledger]            # exact topic names
        topic_patterns: ['payments\\..*']   # Python regexes, matched against the WHOLE name
      shared:
        brokers: [7, 8, 9]

A topic's pool is the pool naming it exactly; else the one pool whose pattern matches it
(two matching pools is an error, never a silent pick); else the default pool; else none
(an "unpooled" topic that pool operations refuse to touch).
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kafka_ops import inputs
from kafka_ops.assignment import BrokerMetadata, assign_new_partitions, assign_replicas_to_brokers
from kafka_ops.errors import ValidationError
from kafka_ops.model import Broker, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan

_POOL_KEYS = {"brokers", "topics", "topic_patterns"}
_FILE_KEYS = {"pools", "default_pool"}


@dataclass(frozen=True)
class Pool:
    """A named group of brokers and the topics (names and full-match patterns) it serves."""

    name: str
    brokers: frozenset[int]
    topics: tuple[str, ...] = ()
    topic_patterns: tuple[str, ...] = ()


class PoolSet:
    """The pools of one cluster, checked for internal consistency on construction.

    Construction rejects what is wrong whatever the cluster (empty pool, broker in two
    pools, topic named by two pools, bad regex); ``validate`` adds the checks that need the
    cluster (unknown brokers, topics matching two pools, RF above the pool's size).
    """

    def __init__(self, pools: Iterable[Pool], default_pool: str | None = None) -> None:
        self.pools: dict[str, Pool] = {}
        self._broker_pool: dict[int, Pool] = {}
        self._topic_pool: dict[str, Pool] = {}
        self._patterns: list[tuple[re.Pattern[str], Pool]] = []
        for pool in pools:
            self._add(pool)
        if default_pool is not None and default_pool not in self.pools:
            raise ValidationError(f"default_pool {default_pool!r} is not a defined pool")
        self.default_pool: Pool | None = self.pools.get(default_pool) if default_pool else None

    def _add(self, pool: Pool) -> None:
        if pool.name in self.pools:
            raise ValidationError(f"pool {pool.name!r} is defined twice")
        if not pool.brokers:
            raise ValidationError(f"pool {pool.name!r} has no brokers")
        for b in sorted(pool.brokers):
            other = self._broker_pool.get(b)
            if other is not None:
                raise ValidationError(
                    f"broker {b} is in two pools: {other.name!r} and {pool.name!r}"
                )
            self._broker_pool[b] = pool
        for t in pool.topics:
            other = self._topic_pool.get(t)
            if other is not None and other is not pool:
                raise ValidationError(
                    f"topic {t!r} is listed by two pools: {other.name!r} and {pool.name!r}"
                )
            self._topic_pool[t] = pool
        for pattern in pool.topic_patterns:
            try:
                self._patterns.append((re.compile(pattern), pool))
            except re.error as e:
                raise ValidationError(
                    f"pool {pool.name!r}: bad topic pattern {pattern!r}: {e}"
                ) from None
        self.pools[pool.name] = pool

    def __repr__(self) -> str:
        return f"PoolSet({', '.join(self.pools)})"

    # -- queries -------------------------------------------------------------------------
    def pool(self, name: str) -> Pool:
        try:
            return self.pools[name]
        except KeyError:
            raise ValidationError(
                f"unknown pool {name!r} (pools: {', '.join(self.pools)})"
            ) from None

    def pool_for_topic(self, topic: str) -> Pool | None:
        """The topic's pool: exact name, else the one matching pattern, else the default."""
        exact = self._topic_pool.get(topic)
        if exact is not None:
            return exact
        matching = {pool.name: pool for rx, pool in self._patterns if rx.fullmatch(topic)}
        if len(matching) > 1:
            names = " and ".join(repr(n) for n in sorted(matching))
            raise ValidationError(f"topic {topic!r} matches the patterns of pools {names}")
        if matching:
            return next(iter(matching.values()))
        return self.default_pool

    def pool_of_broker(self, broker_id: int) -> Pool | None:
        return self._broker_pool.get(broker_id)

    def topics_of(self, pool_name: str, cluster: ClusterModel) -> list[str]:
        """Existing topics of the cluster that belong to the pool, sorted."""
        pool = self.pool(pool_name)
        return [t for t in cluster.topics if self.pool_for_topic(t) is pool]

    def misplaced(self, cluster: ClusterModel) -> list[Partition]:
        """Partitions of pooled topics with at least one replica outside their pool."""
        out: list[Partition] = []
        for topic, parts in cluster.topics.items():
            pool = self.pool_for_topic(topic)
            if pool is None:
                continue
            out.extend(p for p in parts if not pool.brokers.issuperset(p.replicas))
        return out

    # -- validation ----------------------------------------------------------------------
    def validate(self, cluster: ClusterModel) -> None:
        """Raise ValidationError for the first inconsistency between pools and cluster."""
        for pool in self.pools.values():
            unknown = sorted(pool.brokers - cluster.brokers.keys())
            if unknown:
                raise ValidationError(
                    f"pool {pool.name!r}: broker {unknown[0]} is not in the cluster"
                )
        for topic, parts in cluster.topics.items():
            topic_pool = self.pool_for_topic(topic)
            if topic_pool is None:
                continue
            rf = max(p.replication_factor for p in parts)
            if rf > len(topic_pool.brokers):
                raise ValidationError(
                    f"topic {topic!r} has replication factor {rf} but its pool {topic_pool.name!r} "
                    f"has only {len(topic_pool.brokers)} brokers"
                )


# -- operations ------------------------------------------------------------------------
def _require_pool(pools: PoolSet, topic: str) -> Pool:
    pool = pools.pool_for_topic(topic)
    if pool is None:
        raise ValidationError(
            f"topic {topic!r} belongs to no pool (no name, pattern or default_pool matches)"
        )
    return pool


def _alive_pool_brokers(cluster: ClusterModel, pool: Pool) -> list[Broker]:
    unknown = sorted(pool.brokers - cluster.brokers.keys())
    if unknown:
        raise ValidationError(f"pool {pool.name!r}: broker {unknown[0]} is not in the cluster")
    return [b for b in cluster.brokers.values() if b.id in pool.brokers and b.alive]


def assign_in_pool(
    cluster: ClusterModel,
    pools: PoolSet,
    topic: str,
    partitions: int,
    replication_factor: int | None = None,
    rack_aware_mode: str = "enforced",
    fixed_start_index: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Replica lists for a new topic, or for the new partitions of an existing one, in its pool.

    Kafka's own algorithm (AdminUtils) over the pool's alive brokers in id order, so the
    topic is born where it belongs: no create-then-reassign round trip, no data copied.
    For an existing topic ``partitions`` is the new total count (as kafka-topics --alter
    --partitions) and the replication factor is the topic's; only new partitions are returned.
    """
    pool = _require_pool(pools, topic)
    brokers = [BrokerMetadata(b.id, b.rack) for b in _alive_pool_brokers(cluster, pool)]
    existing = cluster.topics.get(topic)
    try:
        if existing is None:
            if replication_factor is None:
                raise ValidationError(f"new topic {topic!r} needs a replication factor")
            return assign_replicas_to_brokers(
                brokers,
                partitions,
                replication_factor,
                fixed_start_index=fixed_start_index,
                rack_aware_mode=rack_aware_mode,
                rng=rng,
            )
        rf = existing[0].replication_factor
        if replication_factor is not None and replication_factor != rf:
            raise ValidationError(
                f"topic {topic!r} exists with replication factor {rf}, not {replication_factor}"
            )
        current = {p.partition: list(p.replicas) for p in existing}
        return assign_new_partitions(
            current, brokers, partitions, rack_aware_mode=rack_aware_mode, topic=topic
        )
    except ValidationError as e:
        raise type(e)(f"pool {pool.name!r}: {e}") from None


def migrate_to_pool(
    cluster: ClusterModel, pools: PoolSet, pool_name: str, topics: Iterable[str] | None = None
) -> ReassignmentPlan:
    """A plan moving every replica of the topics that sits outside the pool into the pool.

    Minimal moves: only partitions with a replica outside the pool are in the plan, and a
    replica already in the pool stays (unless it shares a rack with another kept replica
    while the pool has racks enough to separate them, or its broker is dead: Kafka completes
    a reassignment only once every target replica is in sync, and the executor refuses a
    plan onto an offline broker). The current leader, if in the pool,
    stays replicas[0]. Each missing replica goes to an alive pool broker on a rack the
    partition does not use yet; among the brokers below the replica count the pool ends with,
    the one holding the fewest of the topic; then the least loaded rack (replicas per broker)
    and the broker with the fewest replicas, counting what the pool's topics already hold
    there. Partitions whose leader leaves get the replica leading the fewest partitions, then
    leadership is evened out.
    ``topics`` defaults to every existing topic the pools file puts in the pool; a topic the
    file puts in another pool is refused, an unpooled one may move into any pool.

    The planner's migrate-pool mode uses this placement too (planner.modes.plan_migrate_pool):
    change it here and both ``pools migrate`` and ``plan migrate-pool`` follow.
    """
    pool = pools.pool(pool_name)
    alive = _alive_pool_brokers(cluster, pool)
    moving = _partitions_to_migrate(cluster, pools, pool, topics, len(alive))
    load = _PoolLoad(cluster, alive)
    moving_tps = {p.tp for p in moving}
    for b in pool.brokers:
        for p in cluster.partitions_on(b):
            # Other pools' topics (and unpooled ones) leave these brokers in their own migration
            # or the planner's repair: counting them sent replicas past brokers about to empty.
            if p.tp not in moving_tps and pools.pool_for_topic(p.topic) is pool:
                load.add_replica(b, p.topic)
                load.leaders[b] += p.replicas[0] == b

    # Pass 1: what stays, counted before any placement so every choice sees it.
    target: dict[TopicPartition, list[int]] = {}
    free_leader: set[TopicPartition] = set()  # partitions whose leader leaves the pool
    live = {b.id for b in alive}
    for p in moving:
        kept = [r for r in p.replicas if r in live]
        if p.leader in kept:
            kept.remove(p.leader)
            kept.insert(0, p.leader)
            load.leaders[p.leader] += 1
        else:
            free_leader.add(p.tp)
        if len(load.rack_size) >= p.replication_factor:
            kept = _one_per_rack(kept, cluster)
        for r in kept:
            load.add_replica(r, p.topic)
        target[p.tp] = kept
    missing = sum(p.replication_factor - len(target[p.tp]) for p in moving)
    load.fill = (sum(load.replicas[b] for b in live) + missing) // max(1, len(live))

    # Pass 2: fill the missing replicas, then pick leaders where the old one left the pool.
    for p in moving:
        chosen = target[p.tp]
        while len(chosen) < p.replication_factor:
            best = load.best_new_replica(chosen, p.topic)
            chosen.append(best)
            load.add_replica(best, p.topic)
        if p.tp in free_leader:
            leader = min(
                chosen, key=lambda b: (b not in load.rack, load.leaders[b], chosen.index(b))
            )
            chosen.remove(leader)
            chosen.insert(0, leader)
            load.leaders[leader] += 1
    _even_out_leaders(
        [target[p.tp] for p in moving if p.tp in free_leader], load.leaders, set(load.rack)
    )
    return ReassignmentPlan.from_assignment(target)


def _partitions_to_migrate(
    cluster: ClusterModel, pools: PoolSet, pool: Pool, topics: Iterable[str] | None, alive: int
) -> list[Partition]:
    """Partitions of the topics with a replica outside the pool; errors for what cannot move."""
    names = pools.topics_of(pool.name, cluster) if topics is None else list(dict.fromkeys(topics))
    for t in names:
        cluster.topic(t)  # unknown topic -> ValidationError
        declared = pools.pool_for_topic(t)
        if declared is not None and declared is not pool:
            raise ValidationError(
                f"topic {t!r} belongs to pool {declared.name!r}, not {pool.name!r}"
            )
    moving = [
        p for t in names for p in cluster.topics[t] if not pool.brokers.issuperset(p.replicas)
    ]
    for p in moving:
        if p.replication_factor > alive:
            raise ValidationError(
                f"{p.tp} has replication factor {p.replication_factor} but pool {pool.name!r} "
                f"has only {alive} alive brokers"
            )
    return moving


def _one_per_rack(replicas: list[int], cluster: ClusterModel) -> list[int]:
    """The replicas in order, dropping any whose rack an earlier one already uses."""
    seen: set[str | None] = set()
    out = []
    for r in replicas:
        if cluster.rack_of(r) not in seen:
            seen.add(cluster.rack_of(r))
            out.append(r)
    return out


class _PoolLoad:
    """Replica and preferred-leader counts of a pool's alive brokers while a plan is built."""

    def __init__(self, cluster: ClusterModel, alive: Iterable[Broker]) -> None:
        self.rack_of = cluster.rack_of
        self.rack: dict[int, str | None] = {b.id: b.rack for b in alive}
        self.replicas: Counter[int] = Counter()
        self.leaders: Counter[int] = Counter()
        self.rack_replicas: Counter[str | None] = Counter()
        self.rack_size = Counter(self.rack.values())
        self.topic_replicas: Counter[tuple[str, int]] = Counter()
        self.fill = 0  # replicas per alive broker the pool ends with, rounded down

    def add_replica(self, broker: int, topic: str) -> None:
        self.replicas[broker] += 1
        self.topic_replicas[topic, broker] += 1
        if broker in self.rack:  # dead pool brokers keep their replicas but take no new ones
            self.rack_replicas[self.rack[broker]] += 1

    def best_new_replica(self, chosen: list[int], topic: str) -> int:
        """The alive broker to add to a partition's replicas (not yet counted): on a rack the
        partition does not use; among the brokers below the count the pool ends with, the
        one holding the fewest of the topic; then the least loaded rack, the fewest replicas.
        By counts alone, a topic's replicas went wherever room happened to be when its turn
        came: migrations of fuzz_grown's pooled clusters (seeds 0-29) ended at 4 to 8 times
        their per-topic spread floor on 8 of 21, at most 3.1 times with the topic weighed."""
        used = {self.rack_of(r) for r in chosen}
        fill = self.fill

        def cost(b: int) -> tuple[bool, bool, int, float, int, int, int]:
            r = self.rack[b]
            n = self.replicas[b]
            return (
                r in used,
                n >= fill,
                self.topic_replicas[topic, b] if n < fill else 0,
                self.rack_replicas[r] / self.rack_size[r],
                n,
                self.leaders[b],
                b,
            )

        return min((b for b in self.rack if b not in chosen), key=cost)


def _even_out_leaders(free: list[list[int]], leaders: Counter[int], alive: set[int]) -> None:
    """Move leadership along chains of partitions until no broker leads 2+ more than another it
    can reach.

    Greedy placement balances replicas first, so one partition's choice of leader can be short of
    good candidates; a chain (b hands a partition to c, c hands another to d) fixes that without
    moving data. Each chain lowers the sum of squared leader counts, so the loop ends.
    """
    while True:
        led: dict[int, list[int]] = defaultdict(list)
        for i, reps in enumerate(free):
            led[reps[0]].append(i)
        for src in sorted(led, key=lambda b: (-leaders[b], b)):
            path = _leader_chain(src, free, led, leaders, alive)
            if path:
                break
        else:
            return
        leaders[src] -= 1
        leaders[path[-1][1]] += 1
        for i, new_leader in path:
            free[i].remove(new_leader)
            free[i].insert(0, new_leader)


def _leader_chain(
    src: int,
    free: list[list[int]],
    led: dict[int, list[int]],
    leaders: Counter[int],
    alive: set[int],
) -> list[tuple[int, int]]:
    """Breadth-first: (partition index, new leader) steps from src to a broker leading <= src-2."""
    parent: dict[int, tuple[int, int]] = {}  # broker -> (previous broker, partition index)
    queue = deque([src])
    while queue:
        b = queue.popleft()
        for i in led[b]:
            for c in free[i][1:]:
                if c == src or c in parent or c not in alive:
                    continue
                parent[c] = (b, i)
                if leaders[c] <= leaders[src] - 2:
                    path = []
                    while c != src:
                        prev, idx = parent[c]
                        path.append((idx, c))
                        c = prev
                    return path[::-1]
                queue.append(c)
    return []


def check_plan_in_pools(plan: ReassignmentPlan, pools: PoolSet) -> None:
    """Every target replica of a pooled topic must be on a broker of that topic's pool."""
    for tp, reps in plan.replicas.items():
        pool = pools.pool_for_topic(tp.topic)
        if pool is None:
            continue
        outside = [b for b in reps if b not in pool.brokers]
        if outside:
            raise ValidationError(
                f"{tp} would have a replica on broker {outside[0]}, outside its pool {pool.name!r}"
            )


# -- the pools file ----------------------------------------------------------------------
class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys: YAML would silently keep the last pool."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            continue  # unhashable keys: construct_mapping reports them
        if key in seen:
            raise ValidationError(
                f"pools file: key {key!r} appears twice (line {key_node.start_mark.line + 1})"
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def load_pools(path: str | Path) -> PoolSet:
    """Read and check a pools file (YAML or JSON); a one-line ValidationError if malformed."""
    # Through kafka_ops.inputs: size-capped, strict UTF-8, nesting bounded.
    data = inputs.read_yaml(path, "pools file", loader=_UniqueKeyLoader)  # a SafeLoader subclass
    try:
        return pools_from_dict(data)
    except ValidationError as e:
        raise ValidationError(f"pools file {path}: {e}" if str(path) not in str(e) else str(e)) from None


def pools_from_dict(data: Any) -> PoolSet:
    """Build a PoolSet from the parsed file (see the module docstring for the format)."""
    if not isinstance(data, Mapping) or "pools" not in data:
        raise ValidationError("pools file must be a mapping with a 'pools' key")
    extra = sorted(set(data) - _FILE_KEYS, key=str)
    if extra:
        raise ValidationError(
            f"pools file: unknown key {inputs.short_repr(extra[0])} (expected pools, default_pool)"
        )
    pools = data["pools"]
    if not isinstance(pools, Mapping) or not pools:
        raise ValidationError("pools file: 'pools' must map pool names to pool definitions")
    default = data.get("default_pool")
    if default is not None and not isinstance(default, str):
        raise ValidationError(
            f"pools file: default_pool must be a pool name, got {inputs.short_repr(default)}")
    return PoolSet((_pool_from_dict(name, body) for name, body in pools.items()), default)


def _pool_from_dict(name: Any, body: Any) -> Pool:
    if not isinstance(name, str) or not name:
        raise ValidationError(
            f"pools file: pool name must be a non-empty string, got {inputs.short_repr(name)}")
    if not isinstance(body, Mapping):
        raise ValidationError(f"pool {name!r} must be a mapping with 'brokers'")
    extra = sorted(set(body) - _POOL_KEYS, key=str)
    if extra:
        raise ValidationError(
            f"pool {name!r}: unknown key {inputs.short_repr(extra[0])} "
            "(expected brokers, topics, topic_patterns)"
        )
    brokers = body.get("brokers") or []
    if not isinstance(brokers, list) or any(
        isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= inputs.INT32_MAX
        for b in brokers
    ):
        raise ValidationError(
            f"pool {name!r}: brokers must be a list of broker ids (0..2147483647), "
            f"got {inputs.short_repr(brokers)}"
        )
    if len(set(brokers)) != len(brokers):
        dup = next(b for b in brokers if brokers.count(b) > 1)
        raise ValidationError(f"pool {name!r}: broker {dup} is listed twice")
    return Pool(
        name=name,
        brokers=frozenset(brokers),
        topics=_str_tuple(body.get("topics"), name, "topics"),
        topic_patterns=_str_tuple(body.get("topic_patterns"), name, "topic_patterns"),
    )


def _str_tuple(value: Any, pool: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError(
            f"pool {pool!r}: {key} must be a list of non-empty strings, "
            f"got {inputs.short_repr(value)}"
        )
    return tuple(value)
