"""Secret values known to this process, and masking them out of any text we print or log.

Client settings read from --command-config (SASL passwords, TLS key passwords) are registered
here as they are read, so the CLI's error lines and crash logs can be masked even when a library
put a secret into an exception message. ``RedactingFilter`` is the one log filter that masks
them; the backends put it on the loggers of the client libraries they drive (kazoo,
kafka-python, librdkafka), which log requests — credentials included — at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

_SECRETS: set[str] = set()
#: Parts of a client setting's name that mark its value as a secret.
_SECRET_HINTS = ("password", "secret", "token", "jaas.config")
MASK = "[hidden]"


def is_secret_key(key: str) -> bool:
    """"ssl.key.password" and "sasl.jaas.config" are secrets; "ssl.key.location" is a path."""
    k = key.lower()
    return any(h in k for h in _SECRET_HINTS) and not k.endswith(".location")


def register(value: str) -> None:
    if value and len(value) >= 3:  # masking "a" everywhere would garble every message
        _SECRETS.add(value)


def register_settings(settings: Mapping[str, str]) -> None:
    for key, value in settings.items():
        if is_secret_key(key):
            register(str(value))


def redact(text: str) -> str:
    """``text`` with every registered secret masked, also as it appears inside a logged bytes
    value (kafka-python logs SASL tokens as ``b'...'``, escaping non-ASCII and quotes)."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
        escaped = repr(secret.encode())[2:-1]
        if escaped != secret:
            text = text.replace(escaped, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Masks every registered secret in a log record (its formatted message)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _SECRETS:
            text = record.getMessage()
            hidden = redact(text)
            if hidden != text:
                record.msg, record.args = hidden, None
        return True


_FILTER = RedactingFilter()


def filter_logger(logger: logging.Logger) -> None:
    """Put the redacting filter on ``logger`` (once). Filters on a logger are not inherited by
    its children: call it for each logger that may carry a secret."""
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def masked(settings: Mapping[str, str]) -> dict[str, str]:
    """The settings with every secret value replaced, safe to print."""
    return {k: (MASK if is_secret_key(k) else str(v)) for k, v in settings.items()}
