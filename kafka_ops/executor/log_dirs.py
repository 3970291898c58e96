"""Moves between log directories of a broker (AlterReplicaLogDirs) inside a stateful execution,
in Kafka's order for mixed plans.

Kafka's reassign tool names the directory of every replica the reassignment will create first
(the broker remembers it and creates the replica there, answering NOT_LEADER_OR_FOLLOWER or
REPLICA_NOT_AVAILABLE meanwhile), runs the inter-broker reassignment, then sends
AlterReplicaLogDirs for every replica of the plan's ``log_dirs``, retrying those whose replica
the broker does not host yet. The executor does the same: ``prepare_dir_moves`` at the start,
the inter-broker tasks, then ``advance_dir_moves`` once per step until every move is final.

Every move is recorded in the execution state (``DirMove``): pending -> moving -> completed,
or cancelled / failed. A move is done when the broker lists no future replica for the
partition and its current replica is in the target directory (DescribeLogDirs). The copy is
throttled per broker by ``replica.alter.log.dirs.io.max.bytes.per.second``: the brokers are
recorded in the state *before* it is set, and it is deleted when the run ends (completed,
cancelled, paused or failed), so no throttle is left behind. Future replicas keep copying if
the process dies; a resumed run reads where they are. Cancelling asks for each moving replica
to go "back" to its current directory, which is how Kafka drops a future replica.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_ops.backends.base import ConfigResource
from kafka_ops.errors import KafkaOpsError, ValidationError
from kafka_ops.model import ClusterModel, TopicPartition
from kafka_ops.plan import ANY_LOG_DIR, ReassignmentPlan
from kafka_ops.throttle import LOG_DIRS_RATE

log = logging.getLogger(__name__)

Replica = tuple[TopicPartition, int]
#: The broker does not host the replica yet (an inter-broker move is still creating it).
RETRY = {"NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollowerError", "REPLICA_NOT_AVAILABLE",
         "ReplicaNotAvailableError"}

PENDING, MOVING, COMPLETED, CANCELLED, FAILED = "pending", "moving", "completed", "cancelled", "failed"
DIR_STATES = (PENDING, MOVING, COMPLETED, CANCELLED, FAILED)


@dataclass
class DirMove:
    """One replica to move into ``target`` on its broker. ``source``: the directory it was in
    when first seen (None while the broker does not host it); ``sent`` once accepted."""

    tp: TopicPartition
    broker: int
    target: str
    state: str = PENDING
    source: str | None = None
    error: str | None = None
    first_try: float | None = None
    finished_at: float | None = None

    @property
    def key(self) -> Replica:
        return self.tp, self.broker

    @property
    def final(self) -> bool:
        return self.state in (COMPLETED, CANCELLED, FAILED)

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.tp.topic, "partition": self.tp.partition, "broker": self.broker,
                "target": self.target, "state": self.state, "source": self.source,
                "error": self.error, "first_try": self.first_try, "finished_at": self.finished_at}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DirMove:
        if d["state"] not in DIR_STATES:
            raise ValidationError(f"unknown log-dir move state {d['state']!r}")
        return cls(TopicPartition(d["topic"], d["partition"]), int(d["broker"]), d["target"],
                   d["state"], d.get("source"), d.get("error"), d.get("first_try"),
                   d.get("finished_at"))


def log_dir_moves(plan: ReassignmentPlan) -> dict[Replica, str]:
    """Every replica the plan names a directory for ("any" asks for none)."""
    moves = {}
    for tp, dirs in plan.log_dirs.items():
        for b, d in zip(plan.replicas[tp], dirs, strict=True):
            if d != ANY_LOG_DIR:
                moves[tp, b] = d
    return moves


def dir_moves_of(plan: ReassignmentPlan) -> list[DirMove]:
    return [DirMove(tp, b, d) for (tp, b), d in sorted(log_dir_moves(plan).items())]


def check_log_dir_paths(plan: ReassignmentPlan) -> None:
    """Kafka's rules for ``log_dirs`` beyond the JSON shape: each entry is "any" or an absolute
    path (a broker resolves a relative one against its working directory, never a log dir)."""
    for (tp, b), d in sorted(log_dir_moves(plan).items()):
        if not d.startswith("/"):
            raise ValidationError(f"log_dirs of {tp}: {d!r} for broker {b} is neither \"any\" nor "
                                  "an absolute path")


def prepare_dir_moves(backend: Any, plan: ReassignmentPlan, cluster: ClusterModel) -> None:
    """Before anything is sent: refuse a plan whose directories a broker does not have (or has
    offline), then name the directory of each replica the reassignment will create, as Kafka's
    tool does, so the broker creates it there instead of copying it afterwards."""
    moves = log_dir_moves(plan)
    if not moves:
        return
    check_log_dir_paths(plan)
    if not hasattr(backend, "alter_replica_log_dirs"):
        raise ValidationError(f"this plan moves replicas between log directories (e.g. "
                              f"{_name(next(iter(moves)))}) and {type(backend).__name__} cannot")
    brokers = sorted({b for _, b in moves if b in cluster.brokers and cluster.brokers[b].alive})
    described = backend.describe_log_dirs(brokers) if brokers else {}
    for (tp, b), target in sorted(moves.items()):
        known = described.get(b)
        if known is None:
            continue  # a dead broker: the executor refuses or pauses on it like any move
        d = next((x for x in known.dirs if x.path == target), None)
        if d is None:
            raise ValidationError(f"broker {b} has no log directory {target!r} (for {tp}); its "
                                  f"directories: {', '.join(x.path for x in known.dirs)}")
        if not d.online:
            raise ValidationError(f"log directory {target!r} of broker {b} is offline (for {tp})")
    new = {(tp, b): d for (tp, b), d in moves.items()
           if tp in cluster.partitions and b not in cluster.partitions[tp].replicas}
    if new:
        backend.alter_replica_log_dirs(new)


def advance_dir_moves(backend: Any, moves: list[DirMove], throttled: set[int],
                      reassigned: set[TopicPartition], *, throttle: int | None, now: float,
                      retry_grace: float, save: Callable[[], None]) -> bool:
    """One step of the log-dir phase of a running execution: observe, throttle, send.
    ``reassigned``: the partitions whose replicas are where the plan wants them (a move of
    another one is cancelled); ``throttled``: the state's brokers that may have the throttle.
    Returns True once every move is final."""
    for m in moves:
        if m.state == PENDING and m.tp not in reassigned:
            _finish(m, CANCELLED, now, "its partition's reassignment did not complete")
    active = [m for m in moves if not m.final]
    if not active:
        return True
    described = backend.describe_log_dirs(sorted({m.broker for m in active}))
    for m in active:
        d = described.get(m.broker)
        if d is None:
            continue
        current, future = d.replicas.get(m.tp), d.futures.get(m.tp)
        if m.source is None:
            m.source = current
        if current == m.target and future is None:
            _finish(m, COMPLETED, now)
        elif m.state == MOVING and future != m.target:
            m.state = PENDING  # the future replica is gone (restart, failed dir): send again
    active = [m for m in active if not m.final]
    unsent = [m for m in active if m.state == PENDING]
    wanted = sorted({m.broker for m in active})
    if throttle is not None and not set(wanted) <= throttled:
        throttled.update(wanted)
        save()  # recorded before it is set: a crash leaves a state naming it
        for b in wanted:
            backend.alter_configs(ConfigResource.broker(b), {LOG_DIRS_RATE: str(throttle)})
    if unsent:
        answers = backend.alter_replica_log_dirs({m.key: m.target for m in unsent})
        for m in unsent:
            error = answers.get(m.key)
            if m.first_try is None:
                m.first_try = now
            if error is None:
                m.state = MOVING
            elif error not in RETRY:
                _finish(m, FAILED, now, error)
            elif now - m.first_try > retry_grace:
                _finish(m, FAILED, now, f"{error}: broker {m.broker} never hosted the replica")
    return all(m.final for m in moves)


def stop_dir_moves(backend: Any, moves: list[DirMove], now: float, *, then: str) -> None:
    """Drop the future replicas of moving replicas (each sent "back" to its current
    directory); ``then`` is the moves' next state: CANCELLED, or PENDING for a pause (the
    next run sends them again). Pending moves are cancelled on a cancel, kept on a pause."""
    moving = [m for m in moves if m.state == MOVING]
    if moving:
        described = {}
        for b in sorted({m.broker for m in moving}):
            try:
                described.update(backend.describe_log_dirs([b]))
            except KafkaOpsError as e:  # a dead broker: its moves are sent again on resume
                log.warning("cannot reach broker %d to stop its log-dir moves: %s", b, e)
        back = {m.key: described[m.broker].replicas[m.tp] for m in moving
                if m.broker in described and m.tp in described[m.broker].replicas}
        answers = backend.alter_replica_log_dirs(back) if back else {}
        bad = {k: e for k, e in answers.items() if e is not None}
        if bad:
            key, error = next(iter(bad.items()))
            raise KafkaOpsError(f"stopping the log-dir move of {_name(key)} failed: {error}")
        for m in moving:
            if then == PENDING:
                m.state = PENDING
            else:
                _finish(m, then, now, "cancelled: the future replica was dropped")
    if then == CANCELLED:
        for m in moves:
            if m.state == PENDING:
                _finish(m, CANCELLED, now, "cancelled before it was sent")


def clear_dir_throttle(backend: Any, throttled: set[int]) -> None:
    """Delete the alter-log-dirs throttle from every broker named; a broker that cannot take
    it now stays named (a later run or ``verify`` removes it)."""
    for b in sorted(throttled):
        try:
            backend.alter_configs(ConfigResource.broker(b), delete_configs=[LOG_DIRS_RATE])
        except KafkaOpsError as e:
            log.warning("could not remove %s from broker %d: %s", LOG_DIRS_RATE, b, e)
            continue
        throttled.discard(b)


def dir_counts(moves: list[DirMove]) -> dict[str, int]:
    counts = dict.fromkeys(DIR_STATES, 0)
    for m in moves:
        counts[m.state] += 1
    return counts


def dir_report(moves: list[DirMove]) -> dict[str, Any]:
    """What the report says about the log-dir moves (JSON)."""
    return {
        "counts": dir_counts(moves),
        "already": sum(m.state == COMPLETED and m.source == m.target for m in moves),
        "moves": [m.to_dict() for m in moves],
    }


def dir_rollback(moves: list[DirMove], replicas: Mapping[TopicPartition, tuple[int, ...]]
                 ) -> dict[TopicPartition, tuple[str, ...]]:
    """``log_dirs`` that put every moved replica back in its directory (for replicas lists
    ``replicas``; "any" elsewhere)."""
    back: dict[TopicPartition, dict[int, str]] = {}
    for m in moves:
        if m.state == COMPLETED and m.source and m.source != m.target:
            back.setdefault(m.tp, {})[m.broker] = m.source
    return {tp: tuple(by_broker.get(b, ANY_LOG_DIR) for b in replicas[tp])
            for tp, by_broker in back.items() if tp in replicas}


def _finish(m: DirMove, state: str, now: float, error: str | None = None) -> None:
    m.state = state
    m.finished_at = now
    if state != COMPLETED:
        m.error = error


def _name(key: Replica) -> str:
    return f"{key[0]} on broker {key[1]}"


def verify_dir_moves(backend: Any, plan: ReassignmentPlan) -> list[tuple[Replica, str, str]]:
    """Kafka's verify of the plan's log_dirs: per replica ``completed``, ``in_progress`` or
    ``failed`` (not being moved there, or not found) with the tool's message, and ``offline``
    for a replica whose broker is down: only live brokers are asked (a down broker cannot answer
    DescribeLogDirs, and one of them must not fail the verify of all the others, e.g. when a run
    paused because a broker died is made safe)."""
    moves = log_dir_moves(plan)
    if not moves:
        return []
    alive = set(backend.describe_partitions([]).alive_broker_ids)
    described = backend.describe_log_dirs(sorted({b for _, b in moves} & alive))
    out = []
    for (tp, b), target in sorted(moves.items()):
        replica = f"{tp.topic}-{tp.partition}-{b}"
        if b not in alive:
            out.append(((tp, b), "offline", f"Broker {b} is offline: the log dir of replica "
                                            f"{replica} cannot be checked."))
            continue
        d = described.get(b)
        current = d.replicas.get(tp) if d else None
        future = d.futures.get(tp) if d else None
        if current == target and future is None:
            out.append(((tp, b), "completed", f"Reassignment of replica {replica} completed successfully."))
        elif future == target:
            out.append(((tp, b), "in_progress", f"Reassignment of replica {replica} is still in progress."))
        elif current is None:
            out.append(((tp, b), "failed", f"Partition {tp} cannot be found in any live log dir on "
                                           f"broker {b}."))
        elif future is not None:
            out.append(((tp, b), "failed", f"Partition {tp} on broker {b} is being moved to log dir "
                                           f"{future} instead of {target}."))
        else:
            out.append(((tp, b), "failed", f"Partition {tp} on broker {b} is not being moved from log "
                                           f"dir {current} to {target}."))
    return out
