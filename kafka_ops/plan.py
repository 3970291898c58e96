"""Reassignment plans in Kafka's JSON format, read and written with Kafka's own rules.

A plan is data: ``{"version":1,"partitions":[{"topic","partition","replicas","log_dirs"?}]}``,
the file ``kafka-reassign-partitions --execute`` takes, so anything we plan can also be run by
the stock tool. Parsing follows ReassignPartitionsCommand's checks and messages; validation
against a cluster adds the checks its execute step makes (unknown brokers, unknown partitions).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_ops import inputs
from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel, TopicPartition

ANY_LOG_DIR = "any"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True)
class ReassignmentPlan:
    """Target replica lists per partition, in file order; log_dirs only where given."""

    replicas: dict[TopicPartition, tuple[int, ...]]
    log_dirs: dict[TopicPartition, tuple[str, ...]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.replicas)

    @property
    def partitions(self) -> list[TopicPartition]:
        return list(self.replicas)

    @property
    def topics(self) -> list[str]:
        return sorted({tp.topic for tp in self.replicas})

    @classmethod
    def from_assignment(cls, replicas: Mapping[TopicPartition, Sequence[int]]) -> ReassignmentPlan:
        """A plan from a mapping, sorted by topic and partition as Kafka's tool writes it."""
        return cls({tp: tuple(replicas[tp]) for tp in sorted(replicas)})

    # -- Kafka's JSON --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        parts = []
        for tp, reps in self.replicas.items():
            entry: dict[str, Any] = {"topic": tp.topic, "partition": tp.partition, "replicas": list(reps)}
            if tp in self.log_dirs:
                entry["log_dirs"] = list(self.log_dirs[tp])
            parts.append(entry)
        return {"version": 1, "partitions": parts}

    def to_json(self) -> str:
        """Kafka's format: one partition per line keeps big plans diffable and readable."""
        lines = [json.dumps(p, separators=(",", ":")) for p in self.to_dict()["partitions"]]
        return '{"version":1,"partitions":[\n' + ",\n".join(lines) + "\n]}\n"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def from_json(cls, text: str, what: str = "reassignment JSON") -> ReassignmentPlan:
        """Parse with nesting bounded (no RecursionError) and errors naming ``what``."""
        return cls.from_dict(inputs.parse_json(text, what, malformed="is malformed"))

    @classmethod
    def read(cls, path: str | Path, what: str = "reassignment file") -> ReassignmentPlan:
        """Read through kafka_ops.inputs: size-capped, strict UTF-8, errors naming the file."""
        text = inputs.read_text(path, what)
        try:
            return cls.from_json(text)
        except ValidationError as e:
            if str(path) in str(e):
                raise
            raise ValidationError(f"{what} {path}: {e}") from None

    @classmethod
    def read_base(cls, path: str | Path) -> ReassignmentPlan:
        """A base (or rollback) file: a plan by Kafka's rules, checked as one (no empty list,
        no duplicate replica), errors naming the file."""
        plan = cls.read(path, "base file")
        try:
            plan.validate()
        except ValidationError as e:
            raise ValidationError(f"base file {path}: {e}") from None
        return plan

    @classmethod
    def from_dict(cls, data: Any) -> ReassignmentPlan:
        """Parse with the checks and messages of Kafka's parsePartitionReassignmentData."""
        if not isinstance(data, dict):
            raise ValidationError("reassignment JSON must be an object with a 'partitions' list")
        version = data.get("version", 1)
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValidationError(
                f"`version` must be the integer 1, not {json.dumps(version)[:40]} "
                f"({type(version).__name__})")
        if version != 1:
            raise ValidationError(f"Not supported version field value {version}")
        entries = data.get("partitions", [])
        if not isinstance(entries, list):
            raise ValidationError("Expected `partitions` to be a list of partition objects")
        replicas: dict[TopicPartition, tuple[int, ...]] = {}
        log_dirs: dict[TopicPartition, tuple[str, ...]] = {}
        duplicates: list[TopicPartition] = []
        for entry in entries:
            if not isinstance(entry, dict):
                raise ValidationError(f"Expected a partition object, received {_short(entry)}")
            for key in ("topic", "partition", "replicas"):
                if key not in entry:
                    raise ValidationError(f"No such field exists: `{key}`")
            topic, partition, reps = entry["topic"], entry["partition"], entry["replicas"]
            if not isinstance(topic, str):
                raise ValidationError(f"Expected `String` value, received {_short(topic)}")
            _check_topic_name(topic)
            _expect_int(partition, "partition")
            if not isinstance(reps, list):
                raise ValidationError(f"Expected `Array` value for replicas, received {_short(reps)}")
            for r in reps:
                _expect_int(r, "broker id")
            tp = TopicPartition(topic, partition)
            if tp in replicas:
                duplicates.append(tp)
            replicas[tp] = tuple(reps)
            dirs = entry.get("log_dirs")
            if dirs is not None:
                if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
                    raise ValidationError(f"Expected `log_dirs` to be a list of strings for {tp}")
                if len(dirs) != len(reps):
                    raise ValidationError(
                        f"Size of replicas list {_jlist(reps)} is different from size of log dirs "
                        f"list {_jlist(dirs)} for partition {tp}"
                    )
                if any(d != ANY_LOG_DIR for d in dirs):
                    log_dirs[tp] = tuple(dirs)
        plan = cls(replicas, log_dirs)
        if duplicates:
            raise ValidationError(
                "Partition reassignment contains duplicate topic partitions: "
                + ",".join(str(tp) for tp in duplicates)
            )
        return plan

    # -- validation ----------------------------------------------------------------------
    def validate(self) -> None:
        """Kafka's execute-time checks that need no cluster, in Kafka's order."""
        if not self.replicas:
            raise ValidationError("Partition reassignment list cannot be empty")
        for tp, reps in self.replicas.items():
            if not reps:
                raise ValidationError(f"Partition replica list cannot be empty ({tp})")
        for tp, reps in self.replicas.items():
            dup = [b for b, n in Counter(reps).items() if n > 1]
            if dup:
                raise ValidationError(
                    f"Partition replica lists may not contain duplicate entries: {tp} contains "
                    f"multiple entries for {','.join(map(str, dup))}"
                )

    def validate_against(self, cluster: ClusterModel) -> None:
        """Everything validate() checks, plus unknown partitions and brokers."""
        self.validate()
        missing = [tp for tp in self.replicas if tp not in cluster.partitions]
        if missing:
            topics = sorted({tp.topic for tp in missing if tp.topic not in cluster.topics})
            if topics:
                raise ValidationError(f"Topic {topics[0]} not found.")
            raise ValidationError(
                "The proposed assignment contains non-existent partitions: "
                + ",".join(str(tp) for tp in missing)
            )
        unknown = sorted(
            {b for reps in self.replicas.values() for b in reps if b not in cluster.brokers}
        )
        if unknown:
            raise ValidationError(f"Unknown broker id {unknown[0]}" if len(unknown) == 1 else
                                  "Unknown broker ids " + ",".join(map(str, unknown)))

    # -- relations to a cluster ----------------------------------------------------------
    def rollback(self, cluster: ClusterModel) -> ReassignmentPlan:
        """The plan that puts every partition of this plan back as it is in ``cluster``."""
        return ReassignmentPlan({tp: cluster.partitions[tp].replicas for tp in self.replicas})


def _expect_int(value: Any, what: str) -> None:
    """An int32 >= 0: Kafka's partition ids and broker ids (a negative one is refused here,
    before anything reaches a cluster)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"Expected `Integer` value, received {_short(value)}")
    if not 0 <= value <= inputs.INT32_MAX:
        raise ValidationError(f"Invalid {what} {value}: must be 0..{inputs.INT32_MAX}")


def _check_topic_name(topic: str) -> None:
    """Kafka's Topic.validate: 1..249 characters of [a-zA-Z0-9._-], not "." or ".."."""
    if not topic or topic in (".", "..") or len(topic) > 249 or not _LEGAL_TOPIC.match(topic):
        raise ValidationError(f"Invalid topic name {_short(topic)}: Kafka allows 1-249 "
                              "characters of ASCII letters, digits, '.', '_' and '-'")


def _short(value: Any) -> str:
    """A value for an error message: JSON, cut to 80 characters."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _jlist(values: Iterable[Any]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"
