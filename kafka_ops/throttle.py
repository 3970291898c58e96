"""Replication throttles set the way ``kafka-reassign-partitions --throttle`` sets them.

Kafka throttles a reassignment with two halves that only work together: per topic, the replicas
to throttle (``leader.replication.throttled.replicas`` = ``partition:broker`` for every current
replica, which may serve the fetches; ``follower.replication.throttled.replicas`` = the new
replicas that fetch), and per broker the rates those lists are held to. The ``calculate_*``
functions are pure (ReassignPartitionsCommand's calculateLeaderThrottles,
calculateFollowerThrottles, calculateReassigningBrokers); ``apply_throttles`` and
``clear_throttles`` make the backend calls.

Unlike the stock tool, which throttles every partition of the plan at once, the executor passes
only the moves in flight, so each value stays short: Kafka serialises a config value as a
protocol string of at most 32,767 bytes and a longer one breaks the request (KAFKA-17993, where a
topic with thousands of partitions made the tool fail). ``throttle_entry_fits`` lets the
scheduler hold a move back rather than build a value over that limit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_ops import kafka_rules
from kafka_ops.backends.base import ClusterBackend, ConfigResource
from kafka_ops.errors import BrokerNotAvailableError
from kafka_ops.model import TopicPartition

# Kafka's config keys (kafka_ops.kafka_rules), under the names the executor uses.
LEADER_REPLICAS = kafka_rules.LEADER_THROTTLED_REPLICAS
FOLLOWER_REPLICAS = kafka_rules.FOLLOWER_THROTTLED_REPLICAS
LEADER_RATE = kafka_rules.LEADER_THROTTLED_RATE
FOLLOWER_RATE = kafka_rules.FOLLOWER_THROTTLED_RATE
LOG_DIRS_RATE = kafka_rules.LOG_DIRS_THROTTLED_RATE
TOPIC_KEYS = kafka_rules.THROTTLED_REPLICA_KEYS
BROKER_KEYS = kafka_rules.THROTTLE_RATE_KEYS

#: Kafka protocol strings carry an int16 length: a longer config value cannot be sent.
MAX_CONFIG_VALUE_BYTES = 32767


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """Kafka's PartitionMove: sources = current replicas, destinations = new ones."""

    sources: tuple[int, ...]
    destinations: tuple[int, ...]


def calculate_move(current: Sequence[int], target: Sequence[int]) -> PartitionMove:
    """The move from ``current`` to ``target`` (destinations keep the target's order)."""
    return PartitionMove(tuple(current), tuple(b for b in target if b not in current))


def _per_topic(
    moves: Mapping[TopicPartition, PartitionMove], brokers_of: str
) -> dict[str, str]:
    entries: dict[str, list[str]] = defaultdict(list)
    for tp, move in moves.items():
        entries[tp.topic].extend(f"{tp.partition}:{b}" for b in getattr(move, brokers_of))
    # Kafka sorts the entries as strings ("10:1" before "2:1") and joins them with commas.
    return {topic: ",".join(sorted(items)) for topic, items in sorted(entries.items()) if items}


def calculate_leader_throttles(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, str]:
    """Topic -> leader throttle list: ``partition:broker`` for every source replica."""
    return _per_topic(moves, "sources")


def calculate_follower_throttles(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, str]:
    """Topic -> follower throttle list: ``partition:broker`` for every destination replica."""
    return _per_topic(moves, "destinations")


def calculate_reassigning_brokers(moves: Mapping[TopicPartition, PartitionMove]) -> set[int]:
    """Every source and destination broker: the brokers whose rates the tool sets."""
    return {b for m in moves.values() for b in (*m.sources, *m.destinations)}


def calculate_broker_rates(
    moves: Mapping[TopicPartition, PartitionMove], rate: int
) -> dict[int, dict[str, str]]:
    """Broker -> the leader and follower rate (bytes/s) on every reassigning broker."""
    value = str(int(rate))
    return {
        b: {LEADER_RATE: value, FOLLOWER_RATE: value}
        for b in sorted(calculate_reassigning_brokers(moves))
    }


@dataclass(frozen=True)
class ThrottleConfig:
    """The dynamic configs a set of in-flight moves needs: per topic and per broker."""

    topics: dict[str, dict[str, str]]
    brokers: dict[int, dict[str, str]]


def calculate_throttles(moves: Mapping[TopicPartition, PartitionMove], rate: int | None) -> ThrottleConfig:
    """Everything to set for ``moves``; nothing at all when no rate is given (unthrottled)."""
    if rate is None or not moves:
        return ThrottleConfig({}, {})
    topics: dict[str, dict[str, str]] = defaultdict(dict)
    for topic, value in calculate_leader_throttles(moves).items():
        topics[topic][LEADER_REPLICAS] = value
    for topic, value in calculate_follower_throttles(moves).items():
        topics[topic][FOLLOWER_REPLICAS] = value
    return ThrottleConfig(dict(sorted(topics.items())), calculate_broker_rates(moves, rate))


def throttle_entry_fits(current_length: int, entries: Iterable[str]) -> bool:
    """Whether appending ``entries`` to a value of ``current_length`` bytes stays sendable."""
    added = sum(len(e) + 1 for e in entries)  # each entry plus its comma
    return current_length + added <= MAX_CONFIG_VALUE_BYTES


@dataclass(frozen=True)
class ThrottleChanges:
    """What to send to go from one ThrottleConfig to another: SETs and DELETEs per resource."""

    set_topics: dict[str, dict[str, str]]
    delete_topics: dict[str, list[str]]
    set_brokers: dict[int, dict[str, str]]
    delete_brokers: dict[int, list[str]]

    @property
    def empty(self) -> bool:
        return not (self.set_topics or self.delete_topics or self.set_brokers or self.delete_brokers)


def _diff(old: Mapping, new: Mapping) -> tuple[dict, dict]:
    sets = {}
    deletes = {}
    for name in sorted(set(old) | set(new), key=str):
        before, after = old.get(name, {}), new.get(name, {})
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        gone = sorted(k for k in before if k not in after)
        if changed:
            sets[name] = changed
        if gone:
            deletes[name] = gone
    return sets, deletes


def calculate_throttle_changes(applied: ThrottleConfig, wanted: ThrottleConfig) -> ThrottleChanges:
    """The SET/DELETE operations that turn the applied throttles into the wanted ones."""
    set_topics, delete_topics = _diff(applied.topics, wanted.topics)
    set_brokers, delete_brokers = _diff(applied.brokers, wanted.brokers)
    return ThrottleChanges(set_topics, delete_topics, set_brokers, delete_brokers)


def apply_throttle_changes(backend: ClusterBackend, changes: ThrottleChanges) -> set[int]:
    """Send the changes, brokers' rates before the topic lists that make them bite.

    Deletions go last so that a move never runs unthrottled while its lists are replaced.
    Returns the brokers that were offline: the Admin API changes a broker's configs only
    through that broker, so their changes are not made (the caller keeps them recorded).
    """
    offline: set[int] = set()

    def alter_broker(broker: int, set_configs: Mapping[str, str] | None = None,
                     delete_configs: Iterable[str] = ()) -> None:
        try:
            backend.alter_configs(ConfigResource.broker(broker), set_configs, delete_configs)
        except BrokerNotAvailableError:
            offline.add(broker)

    for broker, configs in changes.set_brokers.items():
        alter_broker(broker, set_configs=configs)
    for topic, configs in changes.set_topics.items():
        backend.alter_configs(ConfigResource.topic(topic), set_configs=configs)
    for topic, keys in changes.delete_topics.items():
        backend.alter_configs(ConfigResource.topic(topic), delete_configs=keys)
    for broker, keys in changes.delete_brokers.items():
        alter_broker(broker, delete_configs=keys)
    return offline


def clear_throttles(
    backend: ClusterBackend, topics: Iterable[str], brokers: Iterable[int]
) -> None:
    """Delete every throttle key on the topics and brokers, as the tool's clearAllThrottles.

    Deleting a key that is not set is a no-op, so this is safe to repeat (after a crash the
    executor cannot know which of its recorded changes reached the cluster).
    """
    for topic in sorted(set(topics)):
        backend.alter_configs(ConfigResource.topic(topic), delete_configs=TOPIC_KEYS)
    for broker in sorted(set(brokers)):
        backend.alter_configs(ConfigResource.broker(broker), delete_configs=BROKER_KEYS)
