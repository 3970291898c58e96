"""Kafka's own rules that several parts of kafka_ops apply: config keys, and what Kafka accepts.

The backends (validating before they write), the throttle calculator and the emulator (which
plays the broker and must refuse what a broker refuses) all follow these; one module keeps the
three from drifting apart. Each rule names the Kafka class it follows. Callers word their own
errors (a backend raises ValidationError, the emulator a Kafka error code), so the predicates
here return or raise ValueError only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# -- replication throttles (topic configs name replicas, broker configs hold rates) -------------
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LOG_DIRS_THROTTLED_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
#: Topic configs listing the replicas a throttle applies to.
THROTTLED_REPLICA_KEYS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
#: Broker configs holding throttle rates (bytes/s, LONG at least 0).
THROTTLE_RATE_KEYS = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, LOG_DIRS_THROTTLED_RATE)
#: A throttled-replicas value that throttles every replica of the topic.
ALL_REPLICAS = "*"

THROTTLED_REPLICAS_FORMAT = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)

_REPLICA_ENTRY = re.compile(r"([0-9]+):([0-9]+)")
_LONG = re.compile(r"[+-]?[0-9]+")


def parse_throttled_replicas(value: str) -> str | frozenset[tuple[int, int]]:
    """A throttled-replicas value: ``ALL_REPLICAS`` or the set of (partition, broker) pairs.

    Kafka's ThrottledReplicaListValidator: ``*``, or comma-separated ``partition:broker``
    entries, each trimmed, empty entries allowed. Raises ValueError naming the bad entry.
    """
    if value.strip() == ALL_REPLICAS:
        return ALL_REPLICAS
    pairs = set()
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        match = _REPLICA_ENTRY.fullmatch(item)
        if match is None:
            raise ValueError(item)
        pairs.add((int(match[1]), int(match[2])))
    return frozenset(pairs)


def is_throttled_replica_list(value: str) -> bool:
    try:
        parse_throttled_replicas(value)
    except ValueError:
        return False
    return True


def is_throttle_rate(value: str) -> bool:
    """A rate config's value: a LONG at least 0 (ConfigDef.Type.LONG, Range.atLeast(0))."""
    text = value.strip()
    return bool(_LONG.fullmatch(text)) and int(text) >= 0


# -- topics and replica lists -----------------------------------------------------------------
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_problem(topic: str) -> str | None:
    """Kafka's Topic.validate: None when legal, else the reason in Kafka's words."""
    if not topic:
        return "Topic name is illegal, it can't be empty"
    if topic in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
                f"characters, topic name: {topic}")
    if not _LEGAL_TOPIC.match(topic):
        return (f'Topic name "{topic}" is illegal, it contains a character other than '
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def duplicate_replicas(replicas: Sequence[int]) -> list[int]:
    """Broker ids listed more than once in a replica list, in the order their repeats appear.
    Kafka refuses any (the reassign tool, AdminZkClient, the controller)."""
    seen: set[int] = set()
    repeated: list[int] = []
    for b in replicas:
        if b in seen and b not in repeated:
            repeated.append(b)
        seen.add(b)
    return repeated
