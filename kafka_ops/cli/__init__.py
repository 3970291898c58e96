"""The ``kafka-ops`` command line.

Each subcommand module exposes ``register(subparsers)``; handlers take the parsed args and
return an exit code. Any KafkaOpsError becomes a one-line ``error: ...`` on stderr and exit
code 2, so bad input never prints a traceback and never changes anything.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kafka_ops.errors import KafkaOpsError

# (module, group): modules whose register() adds subcommands; group names a parent command
# ("kafka-ops pools ...") shared by several modules, None for top-level commands.
COMMAND_MODULES: list[tuple[str, str | None]] = [
    ("kafka_ops.cli.assign", None),
    ("kafka_ops.cli.pools", "pools"),
    ("kafka_ops.cli.plan_files", "plan"),
    ("kafka_ops.cli.plan_goals", "plan"),
    ("kafka_ops.cli.execute", None),
    ("kafka_ops.cli.emulator", "emulator"),
    ("kafka_ops.cli.snapshot", None),
]

GROUP_HELP = {
    "pools": "resource pools (isolation groups): validate, show, assign, migrate",
    "plan": "reassignment plans: build, show, diff, validate",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-ops",
        description="Plan and execute Kafka partition replica moves safely.",
    )
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for module_name, group in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        if group is None:
            module.register(top)
            continue
        if group not in groups:
            group_parser = top.add_parser(group, help=GROUP_HELP.get(group))
            groups[group] = group_parser.add_subparsers(
                dest=f"{group}_command", required=True, metavar="SUBCOMMAND"
            )
        module.register(groups[group])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KafkaOpsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
