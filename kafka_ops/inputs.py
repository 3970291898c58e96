"""One validation layer for everything a user hands kafka_ops: files, numbers, output paths.

Why one module: every input reaches the cluster through several commands (CLI, workflow API,
Airflow operators), and a check done in one place only is a check missing in the others. Every
function here either returns a clean value or raises :class:`InputError`, which is both a
:class:`~kafka_ops.errors.ValidationError` (library callers) and an
``argparse.ArgumentTypeError`` (so the functions serve as argparse ``type=`` validators, and a
bad option is refused while parsing, before anything is read from or sent to a cluster).

Files are read as bytes with a size cap, decoded strictly as UTF-8 (binary or Latin-1 data is
named, not a UnicodeDecodeError), and parsed with nesting bounded (no RecursionError). Numbers
are held to Kafka's own ranges: broker ids are non-negative int32, throttles a positive Java
long, intervals finite and positive.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kafka_ops.errors import ValidationError

#: Largest input file read (bytes). The xl snapshot (270,000 replicas) is about 20 MiB; a
#: file 25x that is surely not an input. KAFKA_OPS_MAX_INPUT_BYTES overrides it.
MAX_INPUT_BYTES = int(os.environ.get("KAFKA_OPS_MAX_INPUT_BYTES") or 512 * 1024 * 1024)
#: Deepest nesting accepted in a JSON/YAML input; Kafka's files need 4 levels.
MAX_NESTING = 64
#: Kafka's ranges: broker ids and partitions are int32, throttles (bytes/s) a Java long,
#: replication factors an int16.
INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
INT16_MAX = 2**15 - 1
#: Most partitions one assign call computes: ten times the largest cluster benchmarked (1M);
#: more would exhaust memory rather than fail.
MAX_ASSIGN_PARTITIONS = 10_000_000
#: Longest interval or timeout accepted: a year. Beyond it time.sleep/poll overflow.
MAX_SECONDS = 365 * 24 * 3600.0


class InputError(ValidationError, argparse.ArgumentTypeError):
    """A bad input: a ValidationError for the library, an argparse type error for the CLI."""


def _fail(name: str | None, problem: str) -> InputError:
    return InputError(f"{name}: {problem}" if name else problem)


# -- files ----------------------------------------------------------------------------------
def read_bytes(path: str | Path, what: str, max_bytes: int | None = None) -> bytes:
    """The file's bytes; refuses a missing file, a directory, a device and an oversized file."""
    limit = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{what} {path} is a directory, not a file")
        with open(p, "rb") as f:
            data = f.read(limit + 1)
    except InputError:
        raise
    except OSError as e:
        raise InputError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise InputError(f"{what} {path} is larger than {limit} bytes (the input size limit)")
    return data


def decode_text(data: bytes, what: str, path: str | Path) -> str:
    """Strict UTF-8 (a BOM is dropped); binary and other encodings get a clear error."""
    if b"\x00" in data:
        raise InputError(f"{what} {path} is binary (contains NUL bytes), not a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{what} {path} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "save it as UTF-8"
        ) from None
    return text


def read_text(path: str | Path, what: str, max_bytes: int | None = None) -> str:
    """A text file, size-capped and strictly UTF-8."""
    return decode_text(read_bytes(path, what, max_bytes), what, path)


def parse_json(text: str, what: str, malformed: str = "is not valid JSON") -> Any:
    """JSON with nesting bounded: deep or huge input raises InputError, never RecursionError."""
    _check_nesting(text, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {malformed}: {e}") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{what} is not acceptable JSON: {e}") from None


def read_json(path: str | Path, what: str) -> Any:
    """Read and parse a JSON file; every failure names the file."""
    return parse_json(read_text(path, what), f"{what} {path}")


def read_yaml(path: str | Path, what: str, loader: type | None = None) -> Any:
    """Read and parse a YAML (or JSON) file with a safe loader and bounded nesting."""
    import yaml

    text = read_text(path, what)
    _check_nesting(text, f"{what} {path}")
    try:
        return yaml.load(text, Loader=loader or yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"{what} {path} is not valid YAML{where}: {problem}") from None
    except (RecursionError, ValueError, OverflowError) as e:
        raise InputError(f"{what} {path} is not acceptable YAML: {e}") from None


def _check_nesting(text: str, what: str) -> None:
    """Refuse more than MAX_NESTING open brackets at once (counted outside JSON strings).

    A cheap linear scan: json and yaml parse recursively, so depth must be bounded before
    they run. Brackets inside quoted strings are skipped (JSON's and YAML's double quotes).
    """
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise InputError(f"{what} is nested more than {MAX_NESTING} levels deep")
        elif ch in "]}":
            depth -= 1


def input_file(what: str) -> Callable[[str], str]:
    """An argparse type: the path of a readable, UTF-8, size-capped file (returned as given)."""
    def check(value: str) -> str:
        read_text(value, what)
        return value
    check.__name__ = what  # argparse names the type in some messages
    return check


# -- numbers --------------------------------------------------------------------------------
def _int(value: str | int, name: str | None) -> int:
    if isinstance(value, bool):
        raise _fail(name, f"{value!r} is not an integer")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        raise _fail(name, f"{value!r} is not an integer") from None


def bounded_int(value: str | int, lo: int, hi: int, name: str | None = None,
                why: str = "") -> int:
    number = _int(value, name)
    if not lo <= number <= hi:
        raise _fail(name, f"{number} is out of range: must be {lo}..{hi}{why}")
    return number


def positive_int(value: str | int, name: str | None = None) -> int:
    """1..int32 max: counts and limits (0 would let nothing move)."""
    return bounded_int(value, 1, INT32_MAX, name)


def non_negative_int(value: str | int, name: str | None = None) -> int:
    """0..Java long max: caps such as --max-moves or --max-bytes."""
    return bounded_int(value, 0, LONG_MAX, name)


def broker_id(value: str | int, name: str | None = None) -> int:
    """A broker id: Kafka's broker.id is a non-negative int32."""
    return bounded_int(value, 0, INT32_MAX, name, " (broker ids are non-negative int32)")


def replication_factor(value: str | int, name: str | None = None) -> int:
    """Kafka's replication factor: a positive int16."""
    return bounded_int(value, 1, INT16_MAX, name, " (a replication factor is a positive int16)")


def throttle_rate(value: str | float, name: str | None = None) -> int:
    """A replication throttle in bytes/s: Kafka's *.replication.throttled.rate is a long > 0."""
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise _fail(name, f"{value!r} is not a whole number of bytes per second")
        value = int(value)
    return bounded_int(value, 1, LONG_MAX, name, " bytes/s (Kafka's throttle is a long)")


def partition_count(value: str | int, name: str | None = None) -> int:
    """A partition count to compute an assignment for (0 and below: Kafka's own message)."""
    number = _int(value, name)
    if number > MAX_ASSIGN_PARTITIONS:
        raise _fail(name, f"{number} partitions is more than {MAX_ASSIGN_PARTITIONS:,} "
                          "(the most one call computes)")
    return number


def short_repr(value: object, limit: int = 80) -> str:
    """repr() for an error message, bounded in time and length (a YAML alias bomb is a small
    file whose repr is gigabytes)."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 3, 6, 6, limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def broker_ids(value: str, name: str | None = None) -> list[int]:
    """'0,1,2' -> [0, 1, 2]; each a broker id (duplicates are the caller's rule)."""
    return [broker_id(item.strip(), name) for item in str(value).split(",")]


def broker_id_list(value: str) -> str:
    """An argparse type: checks a broker id list and returns it as given (parsed later)."""
    broker_ids(value)
    return value


def seconds(value: str | float, name: str | None = None, allow_zero: bool = False) -> float:
    """A finite interval or timeout in seconds: positive (or zero) and at most a year."""
    try:
        number = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        raise _fail(name, f"{value!r} is not a number of seconds") from None
    if not math.isfinite(number):
        raise _fail(name, f"{value!r} is not a finite number of seconds")
    if number < 0 or (number == 0 and not allow_zero):
        raise _fail(name, f"{number:g} s: must be {'>= 0' if allow_zero else 'positive'}")
    if number > MAX_SECONDS:
        raise _fail(name, f"{number:g} s is more than a year")
    return number


def fraction(value: str | float, name: str | None = None) -> float:
    """A finite, non-negative number (a balance threshold such as disk=0.05)."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise _fail(name, f"{value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise _fail(name, f"{value!r} must be a finite number >= 0")
    return number


def positive_rate(value: str | float, name: str | None = None) -> float:
    """A finite, positive rate in bytes/s (used for estimates, not set on the cluster)."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise _fail(name, f"{value!r} is not a number") from None
    if not math.isfinite(number) or not 0 < number <= LONG_MAX:
        raise _fail(name, f"{value!r} must be a finite number of bytes/s in 1..{LONG_MAX}")
    return number


# -- output paths ---------------------------------------------------------------------------
def check_output_file(value: str | Path, what: str = "output file") -> Path:
    """A file we may write: its directory exists and is writable, and it is not a directory."""
    p = Path(value)
    if not str(value).strip():
        raise InputError(f"{what}: empty path")
    if p.is_dir():
        raise InputError(f"{what} {value} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{what} {value}: directory {parent} does not exist")
    if not parent.is_dir():
        raise InputError(f"{what} {value}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{what} {value}: directory {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{what} {value} exists and is not writable")
    return p


def output_file(value: str) -> str:
    """argparse type for --output: see check_output_file."""
    check_output_file(value)
    return value


def chart_formats() -> set[str]:
    """The file extensions matplotlib's Agg canvas can write (png, svg, pdf, ...)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return set(FigureCanvasAgg.get_supported_filetypes())


def check_chart_file(value: str | Path) -> Path:
    p = check_output_file(value, "chart file")
    ext = p.suffix[1:].lower()
    formats = chart_formats()
    if ext not in formats:
        raise InputError(
            f"chart file {value}: unknown image format {p.suffix or '(no extension)'}; "
            f"use one of {', '.join('.' + f for f in sorted(formats))}"
        )
    return p


def chart_file(value: str) -> str:
    """argparse type for --chart: a writable path whose extension matplotlib can write."""
    check_chart_file(value)
    return value


def check_state_dir(value: str | Path) -> Path:
    """The execution-state directory: a directory, or creatable (an ancestor is writable),
    and its state file, when present, readable JSON (its fields are the executor's to check)."""
    p = Path(value)
    if not str(value).strip():
        raise InputError("state directory: empty path")
    if p.exists() and not p.is_dir():
        raise InputError(f"state directory {value} is a file, not a directory")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError(f"state directory {value} is not writable")
        state = p / "execution.json"
        if state.exists():
            data = read_json(state, "execution state")
            if not isinstance(data, dict):
                raise InputError(f"execution state {state} is corrupt: not a JSON object")
        return p
    ancestor = p.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"state directory {value}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"state directory {value} cannot be created: {ancestor} is not writable")
    return p


def check_output_dir(value: str | Path, what: str = "output directory") -> Path:
    """A directory we may write into: it exists, or its parent does (it is created then)."""
    p = Path(value)
    if not str(value).strip():
        raise InputError(f"{what}: empty path")
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {value} is a file; give a directory")
    target = p if p.exists() else p.parent if str(p.parent) else Path(".")
    if not target.is_dir():
        raise InputError(f"{what} {value}: directory {target} does not exist")
    if not os.access(target, os.W_OK | os.X_OK):
        raise InputError(f"{what} {value}: directory {target} is not writable")
    return p


def output_dir(value: str) -> str:
    """argparse type for a dataset or artifacts directory: see check_output_dir."""
    check_output_dir(value)
    return value


def http_url(value: str) -> str:
    """An http(s) base URL with a host (Prometheus' HTTP API); credentials never in it."""
    parsed = urlsplit(value.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InputError(f"{short_repr(value)} is not an http(s)://HOST[:PORT] URL")
    if parsed.username or parsed.password:
        raise InputError("credentials do not belong in the URL: put them in the config file")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise InputError(f"{short_repr(value)}: the port is not a number in 0..65535") from None
    return value.strip()


def state_dir(value: str) -> str:
    """argparse type for --state-dir: see check_state_dir."""
    check_state_dir(value)
    return value


# -- client properties ----------------------------------------------------------------------
def read_properties(path: str | Path, what: str = "--command-config") -> dict[str, str]:
    """A Java properties file (key=value or key: value, # and ! comments), as Kafka's tools
    read --command-config. Strict UTF-8 (a password mangled by a wrong decoding would only
    show up later as an authentication failure)."""
    props: dict[str, str] = {}
    for number, raw in enumerate(read_text(path, what).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            raise InputError(f"{what} {path} line {number}: expected key=value")
        key, value = line[:cut].strip(), line[cut + 1:].strip()
        if not key:
            raise InputError(f"{what} {path} line {number}: empty key")
        props[key] = value
    return props


# argparse type= callables (named, so argparse's own messages read well)
def _named(fn: Callable[..., Any], name: str) -> Callable[[str], Any]:
    wrapped = partial(fn)
    wrapped.__name__ = name  # type: ignore[attr-defined]
    return wrapped


positive_seconds = _named(seconds, "seconds")
non_negative_seconds = _named(partial(seconds, allow_zero=True), "seconds")
