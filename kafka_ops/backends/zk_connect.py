"""ZooKeeper connection settings: Kafka's zookeeper.connect format and ZooKeeper credentials.

Their own module so that both ``connection`` (which picks a backend) and the ZooKeeper backend
itself use them without importing each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafka_ops.errors import ValidationError

_HOST_PORT = re.compile(r"^[^\s/,:]+(:\d{1,5})?$")


@dataclass(frozen=True)
class ZooKeeperAuth:
    """Digest credentials (Kafka's ZooKeeper ACLs) or SASL/DIGEST-MD5 (a JAAS login)."""

    username: str
    password: str = field(repr=False)
    scheme: str = "digest"  # "digest" (auth_data) or "sasl" (kazoo sasl_options)

    def __post_init__(self) -> None:
        if self.scheme not in ("digest", "sasl"):
            raise ValidationError(
                f"ZooKeeper auth scheme must be 'digest' or 'sasl', not {self.scheme!r}"
            )
        if not self.username or ":" in self.username:
            raise ValidationError("ZooKeeper auth username must be non-empty and contain no ':'")

    def __repr__(self) -> str:
        return f"ZooKeeperAuth(scheme={self.scheme!r}, username={self.username!r}, password='***')"

    __str__ = __repr__


def validate_zookeeper_connect(connect: str) -> None:
    """``host:port[,host:port...][/chroot]``, Kafka's zookeeper.connect format."""
    hosts, slash, chroot = connect.partition("/")
    if slash and (not chroot or chroot.endswith("/") or "//" in chroot):
        raise ValidationError(f"ZooKeeper chroot '/{chroot}' is not a valid path in {connect!r}")
    for host in hosts.split(","):
        if not _HOST_PORT.match(host.strip()):
            raise ValidationError(
                f"ZooKeeper connect string {connect!r} has a bad host:port {host!r}"
            )
