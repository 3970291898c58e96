"""Kafka's error codes and messages as the emulated controller returns them (Errors.java)."""

from __future__ import annotations

# Kafka's error codes (org.apache.kafka.common.protocol.Errors) that the controller returns.
errors: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "BROKER_NOT_AVAILABLE": 8,
    "INVALID_TOPIC_EXCEPTION": 17,
    "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37,
    "INVALID_REPLICATION_FACTOR": 38,
    "INVALID_REPLICA_ASSIGNMENT": 39,
    "INVALID_CONFIG": 40,
    "NOT_CONTROLLER": 41,
    "INVALID_REQUEST": 42,
    "REASSIGNMENT_IN_PROGRESS": 60,
    "PREFERRED_LEADER_NOT_AVAILABLE": 80,
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": 83,
    "ELECTION_NOT_NEEDED": 84,
    "NO_REASSIGNMENT_IN_PROGRESS": 85,
    "KAFKA_STORAGE_ERROR": 56,
    "LOG_DIR_NOT_FOUND": 57,
}
error_names: dict[int, str] = {code: name for name, code in errors.items()}

# Errors.java default messages, used when the controller gives none.
_DEFAULT_MESSAGES = {
    "UNKNOWN_SERVER_ERROR": "The server experienced an unexpected error when processing the request.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "ELECTION_NOT_NEEDED": "Leader election not needed for topic partition.",
    "NO_REASSIGNMENT_IN_PROGRESS": "No partition reassignment is in progress.",
    "NOT_CONTROLLER": "This is not the correct controller for this cluster.",
}

class KafkaError(Exception):
    """A Kafka error: code and name as in Errors.java, message as the controller words it."""

    def __init__(self, name: str, message: str | None = None) -> None:
        self.name = name
        self.code = errors[name]
        self.message = message if message is not None else _DEFAULT_MESSAGES.get(name, name)
        super().__init__(f"{name}: {self.message}")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KafkaError) and (self.code, self.message)
                == (other.code, other.message))

    def __hash__(self) -> int:
        return hash((self.code, self.message))

