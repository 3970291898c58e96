"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafka_ops import inputs, secrets
from kafka_ops.backends.base import ClusterBackend
from kafka_ops.backends.connection import (
    ClusterConnection,
    connect,
    validate_bootstrap_servers,
    validate_zookeeper_connect,
)
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
    where.add_argument("--cluster", metavar="SNAPSHOT", type=inputs.input_file("cluster snapshot"),
                       help="cluster snapshot JSON file")
    _add_live_options(parser, where)


def _add_live_options(parser: argparse.ArgumentParser, where: argparse._MutuallyExclusiveGroup) -> None:
    where.add_argument(
        "--zookeeper", metavar="CONNECT", type=_zookeeper_connect,
        help="ZooKeeper connect string HOST:PORT[,...][/chroot]",
    )
    where.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", type=_bootstrap_servers,
        help="Kafka Admin API (KRaft or modern)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        type=_command_config,
        help="client properties for --bootstrap-server (security.protocol, sasl.*, ssl.*, and "
        "any other client setting), as for Kafka's tools; with --zookeeper, the security ones "
        "reach the brokers for log directories; secrets stay out of every output",
    )


def _zookeeper_connect(value: str) -> str:
    try:
        validate_zookeeper_connect(value)
    except ValidationError as e:
        raise inputs.InputError(str(e)) from None
    return value


def _bootstrap_servers(value: str) -> str:
    try:
        validate_bootstrap_servers(value)
    except ValidationError as e:
        raise inputs.InputError(str(e)) from None
    return value


def _command_config(value: str) -> str:
    """Parsed while the arguments are (so a bad file is refused first); secrets registered
    for masking at once."""
    secrets.register_settings(inputs.read_properties(value))
    return value


def read_client_properties(path: str) -> dict[str, str]:
    """A Java-style properties file (key=value, # comments), as Kafka's --command-config."""
    props = inputs.read_properties(path)
    secrets.register_settings(props)
    return props


def connect_backend(args: argparse.Namespace) -> ClusterBackend:
    """The backend the --zookeeper / --bootstrap-server options name."""
    command_config = getattr(args, "command_config", None)
    security = read_client_properties(command_config) if command_config else None
    if getattr(args, "zookeeper", None):
        return connect(ClusterConnection(zookeeper=args.zookeeper, security=security))
    if getattr(args, "bootstrap_server", None):
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
    """'0,1,2' -> [0, 1, 2] with an error naming the bad item (broker ids: int32 >= 0)."""
    return inputs.broker_ids(text, what)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")
