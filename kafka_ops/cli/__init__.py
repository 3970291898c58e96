"""The ``kafka-ops`` command line.

Each subcommand module exposes ``register(subparsers)``; handlers take the parsed args and
return an exit code. Bad input — a bad option value (refused while parsing, by the
validators of kafka_ops.inputs) or a KafkaOpsError raised before any change — becomes ONE
``error: ...`` line on stderr and exit code 2, never a traceback. Anything unexpected is caught
by a last-resort handler: one ``error:`` line saying where the traceback was written, exit 70.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from kafka_ops.errors import KafkaOpsError
from kafka_ops.secrets import redact

# (module, group): modules whose register() adds subcommands; group names a parent command
# ("kafka-ops pools ...") shared by several modules, None for top-level commands.
COMMAND_MODULES: list[tuple[str, str | None]] = [
    ("kafka_ops.cli.assign", None),
    ("kafka_ops.cli.pools", "pools"),
    ("kafka_ops.cli.plan_files", "plan"),
    ("kafka_ops.cli.plan_goals", "plan"),
    ("kafka_ops.cli.plan_disks", "plan"),
    ("kafka_ops.cli.execute", None),
    ("kafka_ops.cli.snapshot", None),
]

GROUP_HELP = {
    "pools": "resource pools (isolation groups): validate, show, assign, migrate",
    "plan": "reassignment plans: build, show, diff, validate",
}

#: Exit code of an unexpected failure (sysexits' EX_SOFTWARE): distinct from 1 (moves failed)
#: and 2 (bad input, nothing changed), because we cannot promise that nothing changed.
EXIT_INTERNAL_ERROR = 70
#: Where tracebacks of unexpected failures go (default: the system's temp directory).
CRASH_DIR_ENV = "KAFKA_OPS_CRASH_DIR"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``error: kafka-ops execute: argument --throttle: ...``.

    argparse prints the whole usage before its error; with many options that buries the one
    line that matters, and scripts grepping stderr for ``error:`` see it once.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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


# A value that starts like a negative number ("-1,0,1", "-inf", "-.5", "-1e3") would be taken
# by argparse for an unknown option ("expected one argument"); glued to its option with "=",
# it reaches the option's validator, which names the real problem.
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every long option (in any subcommand) that takes exactly one value."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _value_options(sub)
        elif action.option_strings and action.nargs is None and action.const is None:
            found.update(s for s in action.option_strings if s.startswith("--"))
    return found


def glue_negative_values(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    options = _value_options(parser)
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg in options and i + 1 < len(argv) and _NEGATIVE_VALUE.match(argv[i + 1]):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(glue_negative_values(
                list(sys.argv[1:] if argv is None else argv), parser))
        except SystemExit as e:  # --help (0) or a refused option (2): a code, not an exit
            return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        return int(args.func(args) or 0)
    except KafkaOpsError as e:
        print(f"error: {redact(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`kafka-ops ... | head`): as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return 141
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the last resort: no traceback reaches a user
        where = _write_crash_log(e)
        print(f"error: unexpected {type(e).__name__}: {redact(str(e))[:300]} "
              f"(a kafka-ops bug; traceback in {where})", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def _write_crash_log(exc: BaseException) -> str:
    """The traceback, secrets redacted, in $KAFKA_OPS_CRASH_DIR (or the temp directory)."""
    directory = Path(os.environ.get(CRASH_DIR_ENV) or tempfile.gettempdir())
    text = redact("".join(traceback.format_exception(exc)))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"kafka-ops-crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
        path.write_text(f"kafka-ops {' '.join(redact(a) for a in sys.argv[1:])}\n{text}")
        return str(path)
    except OSError:
        return "(could not be written: " + str(directory) + ")"


if __name__ == "__main__":
    sys.exit(main())
