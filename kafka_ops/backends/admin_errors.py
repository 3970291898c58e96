"""Kafka's errors from the Admin API clients, as kafka_ops' typed errors with one-line messages.

confluent-kafka raises KafkaException carrying a KafkaError (name and text); kafka-python's
error classes carry the name in ``message``. Each becomes the kafka_ops error the workflow and
CLI act on (bad input, nothing to cancel, broker unavailable, ...), named after the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException

from kafka_ops.errors import (
    BackendError,
    BrokerNotAvailableError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    ReassignmentInProgressError,
    ValidationError,
)
from kafka_ops.model import TopicPartition

# Kafka error names that mean "the request was wrong", not "the cluster failed".
_INVALID_REQUEST_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION", "TOPIC_ALREADY_EXISTS", "INVALID_PARTITIONS",
    "INVALID_REPLICATION_FACTOR", "INVALID_CONFIG", "INVALID_REQUEST", "INVALID_TOPIC_EXCEPTION",
    "POLICY_VIOLATION",
}


def partition_names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(str(tp) for tp in sorted(tps))


def error_name(error: Any) -> str:
    """Kafka's error name from a confluent KafkaException/KafkaError."""
    if isinstance(error, KafkaException):
        error = error.args[0]
    return error.name() if hasattr(error, "name") else type(error).__name__


def error_text(error: Any) -> str:
    if isinstance(error, KafkaException):
        error = error.args[0]
    return error.str() if hasattr(error, "str") else str(error)


def typed_error(what: str, name: str, message: str) -> Exception:
    text = f"{what}: {name}: {message}" if message else f"{what}: {name}"
    if name == "INVALID_REPLICA_ASSIGNMENT":
        return InvalidReplicaAssignmentError(text)
    if name == "NO_REASSIGNMENT_IN_PROGRESS":
        return NoReassignmentInProgressError(f"nothing to cancel: {text}")
    if name == "REASSIGNMENT_IN_PROGRESS":
        return ReassignmentInProgressError(text)
    if name in ("BROKER_NOT_AVAILABLE", "REPLICA_NOT_AVAILABLE"):
        return BrokerNotAvailableError(text)
    if name in _INVALID_REQUEST_ERRORS:
        return ValidationError(text)
    return BackendError(text)


def backend_error(what: str, exc: KafkaException) -> Exception:
    return typed_error(what, error_name(exc), error_text(exc))


def legacy_error(what: str, exc: Exception) -> Exception:
    """kafka-python error classes carry Kafka's name in ``message`` (e.g. NOT_CONTROLLER);
    their text repeats the whole request, so only the name is kept."""
    return typed_error(what, getattr(exc, "message", type(exc).__name__), "")


def raise_partition_errors(what: str, failed: Mapping[TopicPartition, Any]) -> None:
    """One error for a partly failed request; its type follows the first Kafka error name."""
    by_name: dict[str, list[TopicPartition]] = {}
    for tp, err in failed.items():
        by_name.setdefault(getattr(err, "message", str(err)), []).append(tp)
    details = "; ".join(f"{n} for {partition_names(t)}" for n, t in sorted(by_name.items()))
    raise typed_error(what, min(by_name), details)
