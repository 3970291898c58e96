"""Where a cluster is and how to reach it; ``connect`` picks the backend that speaks to it.

A ZooKeeper connect string (``host:port[,host:port...][/chroot]``, as in Kafka's
``zookeeper.connect``) means ZooKeeper-mode Kafka and the kazoo backend; bootstrap servers mean
the Admin API backend (KRaft or any modern Kafka). Credentials live here and nowhere else: the
repr and str of a connection show that auth is configured, never the secret, so a connection
can be logged or put in an error message safely.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_ops.backends.base import ClusterBackend

# ZooKeeper settings live in zk_connect (the ZooKeeper backend needs them, and this module
# imports that backend); they are part of this module's interface too.
from kafka_ops.backends.zk_connect import ZooKeeperAuth, validate_zookeeper_connect
from kafka_ops.errors import ValidationError

#: Keys of librdkafka/Kafka client security settings whose values are secrets.
_SECRET_HINTS = ("password", "secret", "token", "key", "jaas.config")


def _is_secret(key: str) -> bool:
    # "ssl.key.location" names a file, not a secret; "ssl.key.password" is one.
    return any(h in key.lower() for h in _SECRET_HINTS) and not key.endswith(".location")


@dataclass(frozen=True)
class ClusterConnection:
    """Either ``zookeeper`` (ZooKeeper mode) or ``bootstrap_servers`` (Admin API), not both.

    ``security`` holds Kafka client settings for the Admin API (``security.protocol``,
    ``sasl.mechanism``, ``sasl.username``, ``sasl.password``, ``ssl.*``); in ZooKeeper mode
    they reach the brokers' Admin API for log directories (ZooKeeper does not hold them).
    """

    zookeeper: str | None = None
    zookeeper_session_timeout_s: float = 18.0  # Kafka's zookeeper.session.timeout.ms default
    zookeeper_connect_timeout_s: float = 15.0
    zookeeper_auth: ZooKeeperAuth | None = None
    bootstrap_servers: str | None = None
    security: Mapping[str, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if bool(self.zookeeper) == bool(self.bootstrap_servers):
            raise ValidationError(
                "give either a ZooKeeper connect string or bootstrap servers (exactly one)"
            )
        if self.zookeeper:
            validate_zookeeper_connect(self.zookeeper)
        else:
            validate_bootstrap_servers(self.bootstrap_servers or "")
        if self.zookeeper_session_timeout_s <= 0 or self.zookeeper_connect_timeout_s <= 0:
            raise ValidationError("ZooKeeper timeouts must be positive")

    def __repr__(self) -> str:
        if self.zookeeper:
            return (
                f"ClusterConnection(zookeeper={self.zookeeper!r}, "
                f"session_timeout_s={self.zookeeper_session_timeout_s}, "
                f"auth={self.zookeeper_auth!r})"
            )
        shown = {k: ("***" if _is_secret(k) else v) for k, v in (self.security or {}).items()}
        return (
            f"ClusterConnection(bootstrap_servers={self.bootstrap_servers!r}, security={shown!r})"
        )

    __str__ = __repr__


_BOOTSTRAP = re.compile(r"^(?:[A-Za-z_]+://)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.\-]+)):(?P<port>\d{1,5})$")


def validate_bootstrap_servers(servers: str) -> None:
    """``host:port[,host:port...]`` as Kafka's bootstrap.servers ("[::1]:9092" for IPv6):
    refused here, with the bad entry named, rather than as librdkafka's "Broker transport
    failure" a minute later."""
    entries = [e.strip() for e in servers.split(",")]
    if not servers.strip() or not all(entries):
        raise ValidationError(f"bootstrap servers {servers!r}: empty entry; expected host:port[,...]")
    for entry in entries:
        m = _BOOTSTRAP.match(entry)
        if m is None:
            raise ValidationError(
                f"bootstrap servers {servers!r}: invalid url {entry!r}; expected host:port"
            )
        if not 1 <= int(m["port"]) <= 65535:
            raise ValidationError(
                f"bootstrap servers {servers!r}: port {m['port']} of {entry!r} is out of range 1..65535"
            )


def connect(conn: ClusterConnection) -> ClusterBackend:
    """A started backend for the connection: ZooKeeper (kazoo) or the Admin API (checked to
    answer, so a wrong password or an unreachable host is named before anything else)."""
    if conn.zookeeper:
        from kafka_ops.backends.zookeeper import ZooKeeperBackend

        return ZooKeeperBackend(
            conn.zookeeper,
            session_timeout_s=conn.zookeeper_session_timeout_s,
            connect_timeout_s=conn.zookeeper_connect_timeout_s,
            auth=conn.zookeeper_auth,
            security=conn.security,  # the brokers' Admin API, for log directories
        )
    from kafka_ops.backends.admin import AdminApiBackend  # lazy: confluent-kafka is heavy

    assert conn.bootstrap_servers is not None  # ClusterConnection requires one of the two
    backend = AdminApiBackend(conn.bootstrap_servers, security=dict(conn.security or {}))
    try:
        backend.check_connection()  # a named auth/TLS/unreachable error within seconds
    except BaseException:
        backend.close()
        raise
    return backend
