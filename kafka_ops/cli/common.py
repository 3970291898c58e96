"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.snapshot import load_snapshot


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON output")


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    """Where the cluster state comes from (a snapshot file for now; live backends later)."""
    parser.add_argument(
        "--cluster", metavar="SNAPSHOT", required=True, help="cluster snapshot JSON file"
    )


def load_cluster(args: argparse.Namespace) -> ClusterModel:
    return load_snapshot(args.cluster)


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
