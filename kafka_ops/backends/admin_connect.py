"""Reaching a cluster over the Admin API, and naming why it failed within seconds.

librdkafka reports a refused SASL login, a failed TLS handshake, an unresolvable or refusing
bootstrap server through its error callback within milliseconds, but a request merely times out
("Broker transport failure" a minute later); kafka-python only says KafkaTimeoutError. So the
backend records every error the callback reports and, before its first request, probes the
cluster with one DescribeCluster while watching those errors: a clear, named error in at most a
few seconds. Client settings are passed through as Kafka's tools do; an unknown one is named.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_ops import secrets
from kafka_ops.errors import (
    AuthenticationError,
    TlsError,
    UnreachableError,
    ValidationError,
)

#: How long the connection probe waits for a first answer at most.
PROBE_TIMEOUT_S = 10.0


@dataclass
class ClientErrors:
    """librdkafka's error callback: the errors seen so far (thread-safe, newest last)."""

    errors: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, error: Any) -> None:
        with self.lock:
            self.errors.append((error.name(), secrets.redact(error.str())))
            del self.errors[:-20]

    def snapshot(self) -> list[tuple[str, str]]:
        with self.lock:
            return list(self.errors)


def named_error(errors: list[tuple[str, str]], servers: str, all_down: bool) -> Exception | None:
    """The error to raise for what librdkafka reported, or None to keep waiting.

    Authentication and TLS failures are final at once (every broker shares the settings, and
    Java clients give up on them too); transport failures only once every broker is down.
    """
    for name, text in errors:
        if name == "_AUTHENTICATION":
            return AuthenticationError(
                f"authentication to {servers} failed: {_detail(text)} (check sasl.mechanism, "
                "sasl.username and sasl.password in --command-config)")
        if name == "_SSL" or "SSL handshake failed" in text or "certificate verify failed" in text:
            return TlsError(f"TLS connection to {servers} failed: {_detail(text)} (check "
                            "security.protocol and the ssl.* settings in --command-config)")
    if errors and (all_down or errors[-1][0] == "_ALL_BROKERS_DOWN"):
        transport = [t for n, t in errors if n in ("_RESOLVE", "_TRANSPORT")]
        if transport:
            return UnreachableError(f"cannot reach {servers}: {_detail(transport[-1])}")
    return None


def _detail(text: str) -> str:
    """librdkafka's text without its "proto://host:port/id: " prefix and timing suffix."""
    head, sep, rest = text.partition(": ")
    if sep and ("/" in head or "bootstrap" in head):
        text = rest
    return text.split(" (after ")[0]


def probe(admin: Any, errors: ClientErrors, servers: str, timeout_s: float) -> None:
    """One DescribeCluster, polling librdkafka's callbacks meanwhile; a named error at once."""
    future = admin.describe_cluster(request_timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while not future.done():
        admin.poll(0.05)
        error = named_error(errors.snapshot(), servers, all_down=False)
        if error is not None:
            raise error
        if time.monotonic() > deadline:
            break
    if future.done() and future.exception() is None:
        return
    error = named_error(errors.snapshot(), servers, all_down=True)
    if error is not None:
        raise error
    cause = future.exception() if future.done() else None
    raise UnreachableError(
        f"no answer from {servers} within {timeout_s:g}s"
        + (f": {cause}" if cause else "")
        + " (a listener expecting another security.protocol does not answer either)")


def check_client_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """Settings as strings, secrets registered for masking; librdkafka itself validates the
    names when the client is created (see :func:`create_admin_client`)."""
    checked = {str(k).strip(): str(v) for k, v in settings.items()}
    for key in checked:
        if key in ("bootstrap.servers", "error_cb", "logger"):
            raise ValidationError(f"client setting {key!r} cannot be given in --command-config")
    secrets.register_settings(checked)
    return checked


def create_admin_client(config: dict[str, Any]) -> Any:
    """confluent-kafka's AdminClient; an unknown or invalid setting becomes a ValidationError
    naming it (librdkafka's message names the property, never a secret value)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        return AdminClient(config)
    except (KafkaException, ValueError, TypeError) as e:
        text = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
        raise ValidationError(f"client settings refused by librdkafka: {secrets.redact(text)}") from None


def attach_debug_log(logger: logging.Logger) -> None:
    """With librdkafka's ``debug`` set (as with Kafka's tools), show its debug lines on
    stderr — through the secret-masking filter."""
    if any(getattr(h, "_kafka_ops_debug", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler()
    handler._kafka_ops_debug = True  # type: ignore[attr-defined]
    handler.addFilter(secrets.RedactingFilter())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
