"""Plain records for the workflow's steps: dataclasses of JSON values with to_dict/from_dict.

Every step of the runbook takes and returns one of these so that an orchestrator can pass them
between tasks as JSON (Airflow XCom) and a person can read them. Fields hold JSON-native values
only (str, int, float, bool, None, lists, dicts with str keys), so ``to_dict`` is a copy and
``from_dict`` checks the keys and nothing more exotic: a record read back equals the original.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from kafka_ops.errors import ValidationError

R = TypeVar("R", bound="Record")


class Record:
    """Mixin for frozen dataclasses whose fields are JSON values."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        name = cls.__name__
        if not isinstance(data, Mapping):
            raise ValidationError(f"{name}: expected a JSON object, got {type(data).__name__}")
        known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValidationError(f"{name}: unknown field(s) {', '.join(map(str, unknown))}")
        missing = [n for n, f in known.items()
                   if n not in data and f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise ValidationError(f"{name}: missing field(s) {', '.join(missing)}")
        return cls(**{k: copy.deepcopy(v) for k, v in data.items()})


class OptionError(ValidationError):
    """An option with a bad value. ``str()`` names it as the API spells it (``max_moves``);
    the CLI re-spells it as its flag (``--max-moves``)."""

    def __init__(self, option: str, problem: str) -> None:
        self.option = option
        self.problem = problem
        super().__init__(f"{option} {problem}")

    def as_flag(self) -> str:
        return f"--{self.option.replace('_', '-')} {self.problem}"
