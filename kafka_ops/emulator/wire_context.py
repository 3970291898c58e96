"""What every wire-face handler shares: the request context, Kafka's constants, framing and
refusals.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors as Errors
from kafka.protocol.metadata import (
    ApiVersionsRequest,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

from kafka_ops.emulator.kafka_errors import KafkaError

API_VERSIONS_KEY = ApiVersionsRequest.API_KEY
SASL_HANDSHAKE_KEY = SaslHandshakeRequest.API_KEY
SASL_AUTHENTICATE_KEY = SaslAuthenticateRequest.API_KEY

NONE = 0
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type
# DescribeConfigs config_source values (DescribeConfigsResponse.json).
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
# AclOperation bit positions reported as "authorized" (the emulator has no ACLs: all allowed).
# Cluster: CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = {5, 7, 8, 9, 10, 11, 12}
TOPIC_OPERATIONS = {3, 4, 5, 6, 7, 8, 10, 11}  # READ WRITE CREATE DELETE ALTER DESCRIBE *_CONFIGS


@dataclass
class RequestContext:
    """What a handler knows besides the request: which broker received it, at which version."""

    cluster: Any  # kafka_ops.emulator.cluster.EmulatedCluster
    broker_id: int
    version: int
    sasl_enabled: bool
    sasl_users: Mapping[str, str]
    connection: Any  # wire_face._Connection (SASL state)

    @property
    def answers_controller_apis(self) -> bool:
        return self.cluster.mode == "kraft" or self.cluster.controller_id == self.broker_id


@dataclass(frozen=True)
class Api:
    """An API the face serves: its request class (the codec) and the handler."""

    request: Any  # a kafka-python request class (valid_versions, API_KEY)
    handle: Callable[[RequestContext, Any], Any]

    @property
    def versions(self) -> tuple[int, int]:
        low, high = self.request.valid_versions
        return low, high


def encode_response(response: Any, version: int, correlation_id: int) -> bytes:
    """Frame a response. Order matters (kafka-python: the version setter touches the header)."""
    response.API_VERSION = version
    response.with_header(correlation_id)
    return bytes(response.encode(header=True, framed=True))



class Refused(Exception):
    """A request refused by the face itself (routing, shape) with Kafka's code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code, self.message = code, message


def error_of(exc: Exception) -> tuple[int, str | None]:
    """Kafka error code and message of a refusal (the core's KafkaError or the face's own)."""
    if isinstance(exc, (KafkaError, Refused)):
        return exc.code, exc.message
    return Errors.InvalidRequestError.errno, str(exc)


def not_controller() -> tuple[int, str | None]:
    return Errors.NotControllerError.errno, "This is not the correct controller for this cluster."


def topic_uuid(topic_id: str | None) -> uuid.UUID:
    if not topic_id:
        return uuid.UUID(int=0)
    try:
        return uuid.UUID(topic_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, topic_id)


def live_brokers(cluster) -> list:
    return [b for b in cluster.brokers.values() if b.alive]
