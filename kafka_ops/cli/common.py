"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.connection import ClusterConnection, connect
from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.snapshot import load_snapshot


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON output")


def add_backend_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """How to reach a live cluster: ZooKeeper mode or the Admin API (Kafka tools' flags)."""
    where = parser.add_mutually_exclusive_group(required=required)
    _add_live_options(parser, where)


def add_cluster_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """Where the cluster state comes from: a snapshot file or a live cluster."""
    where = parser.add_mutually_exclusive_group(required=required)
    where.add_argument("--cluster", metavar="SNAPSHOT", help="cluster snapshot JSON file")
    _add_live_options(parser, where)


def _add_live_options(parser: argparse.ArgumentParser, where: argparse._MutuallyExclusiveGroup) -> None:
    where.add_argument(
        "--zookeeper", metavar="CONNECT", help="ZooKeeper connect string HOST:PORT[,...][/chroot]"
    )
    where.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", help="Kafka Admin API (KRaft or modern)"
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties for --bootstrap-server (security.protocol, sasl.*, ssl.*), "
        "as for Kafka's tools; secrets stay out of every output",
    )


def read_client_properties(path: str) -> dict[str, str]:
    """A Java-style properties file (key=value, # comments), as Kafka's --command-config."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise ValidationError(f"cannot read --command-config {path}: {e.strerror}") from None
    props = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValidationError(f"--command-config {path} line {number}: expected key=value")
        props[key.strip()] = value.strip()
    return props


def connect_backend(args: argparse.Namespace) -> ClusterBackend:
    """The backend the --zookeeper / --bootstrap-server options name."""
    if getattr(args, "zookeeper", None):
        return connect(ClusterConnection(zookeeper=args.zookeeper))
    if getattr(args, "bootstrap_server", None):
        security = read_client_properties(args.command_config) if args.command_config else None
        return connect(ClusterConnection(bootstrap_servers=args.bootstrap_server, security=security))
    raise ValidationError("give --zookeeper or --bootstrap-server")


def cluster_given(args: argparse.Namespace) -> bool:
    return bool(args.cluster or args.zookeeper or args.bootstrap_server)


def load_cluster(args: argparse.Namespace) -> ClusterModel:
    """The cluster state: from the snapshot file, or read live through a backend."""
    if getattr(args, "cluster", None):
        return load_snapshot(args.cluster)
    backend = connect_backend(args)
    try:
        return backend.describe_cluster()
    finally:
        backend.close()


def parse_int_list(text: str, what: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2] with an error naming the bad item."""
    out = []
    for item in text.split(","):
        item = item.strip()
        try:
            out.append(int(item))
        except ValueError:
            raise ValidationError(f"{what}: {item!r} is not an integer") from None
    return out


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")
