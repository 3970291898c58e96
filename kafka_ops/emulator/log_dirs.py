"""Log directories of the emulated brokers (JBOD): where each replica lives, and moves between
directories as Kafka's ReplicaManager.alterReplicaLogDirs runs them.

Kafka's semantics kept here:

* A replica lives in one directory of its broker. A broker places a new replica in the
  directory a previous AlterReplicaLogDirs named for it (the "preferred" directory), else in
  the online directory holding the fewest partitions (LogManager.nextLogDirs).
* AlterReplicaLogDirs to another directory creates a *future* replica there that copies the
  current one (ReplicaAlterLogDirsThread); when it has caught up it replaces the current one
  (the swap). DescribeLogDirs lists the future replica with ``is_future_key``. The copy of
  all futures on a broker shares ``replica.alter.log.dirs.io.max.bytes.per.second``
  (unset: unthrottled, done at the next tick; 0: nothing copies).
* A request for a replica the broker does not host yet records the preferred directory and
  answers NOT_LEADER_OR_FOLLOWER (the reassign tool retries until the replica exists);
  an unknown directory is LOG_DIR_NOT_FOUND, an offline one KAFKA_STORAGE_ERROR.
* A failed directory (KIP-112) is offline: its replicas are offline on that broker.
* A directory of known capacity that fills up fails like a disk that cannot take a write
  (Kafka's log append raises an IOException, LogDirFailureChannel takes the directory offline:
  KafkaStorageException from then on). Only directories the cluster was given explicitly are
  enforced; a broker's synthesized single directory is not (its size is the broker's disk,
  which other faults model).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from kafka_ops.model import LogDir, TopicPartition

NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
KAFKA_STORAGE_ERROR = 56
LOG_DIR_NOT_FOUND = 57

Replica = tuple[TopicPartition, int]


@dataclass
class Directory:
    path: str
    capacity_bytes: int  # 0 = unknown
    online: bool = True
    enforced: bool = False  # fails when its replicas outgrow capacity_bytes


@dataclass
class Future:
    target: str
    copied: float = 0.0


class LogDirs:
    """Directories per broker, the directory of every replica, and the moves in flight."""

    def __init__(self) -> None:
        self.dirs: dict[int, dict[str, Directory]] = {}
        self.placement: dict[Replica, str] = {}
        self.futures: dict[Replica, Future] = {}
        self.preferred: dict[Replica, str] = {}
        self._members: dict[tuple[int, str], set[TopicPartition]] = defaultdict(set)
        self.enforced = False  # any directory enforces its capacity

    def add_broker(self, broker_id: int, dirs: tuple[LogDir, ...], enforce: bool = False) -> None:
        self.dirs[broker_id] = {d.path: Directory(d.path, d.capacity_bytes, d.online,
                                                  enforce and d.capacity_bytes > 0) for d in dirs}
        self.enforced = self.enforced or any(
            d.enforced for d in self.dirs[broker_id].values())

    def full(self, replica_bytes: Callable[[TopicPartition, int], float]) -> list[tuple[int, str]]:
        """Online enforced directories whose replicas (and future replicas copying into them)
        hold more than their capacity: each fails as a disk that cannot take a write."""
        if not self.enforced:
            return []
        copying: dict[tuple[int, str], float] = defaultdict(float)
        for (_, b), f in self.futures.items():
            copying[b, f.target] += f.copied
        out = []
        for b, dirs in self.dirs.items():
            for d in dirs.values():
                if not (d.enforced and d.online):
                    continue
                used = copying[b, d.path] + sum(replica_bytes(tp, b) for tp in self._members.get((b, d.path), ()))
                if used > d.capacity_bytes:
                    out.append((b, d.path))
        return out

    def place(self, tp: TopicPartition, broker: int, path: str | None = None) -> None:
        """A replica appears on the broker: in ``path`` if given, else where Kafka puts it."""
        key = (tp, broker)
        if key in self.placement:
            return
        dirs = self.dirs.get(broker)
        if not dirs:
            return
        path = path if path in dirs else self.preferred.pop(key, None)
        if path not in dirs:
            online = [d for d in dirs.values() if d.online] or list(dirs.values())
            path = min(online, key=lambda d: (len(self._members[broker, d.path]), d.path)).path
        self.placement[key] = path
        self._members[broker, path].add(tp)

    def remove(self, tp: TopicPartition, broker: int) -> None:
        key = (tp, broker)
        path = self.placement.pop(key, None)
        if path is not None:
            self._members[broker, path].discard(tp)
        self.futures.pop(key, None)

    def online(self, tp: TopicPartition, broker: int) -> bool:
        path = self.placement.get((tp, broker))
        return path is None or self.dirs[broker][path].online

    def replicas_in(self, broker: int, path: str) -> list[TopicPartition]:
        return sorted(self._members.get((broker, path), ()))

    def alter(self, tp: TopicPartition, broker: int, path: str) -> int:
        """One replica of an AlterReplicaLogDirs request; returns Kafka's error code."""
        dirs = self.dirs.get(broker, {})
        if path not in dirs:
            return LOG_DIR_NOT_FOUND
        if not dirs[path].online:
            return KAFKA_STORAGE_ERROR
        key = (tp, broker)
        current = self.placement.get(key)
        if current is None:
            self.preferred[key] = path
            return NOT_LEADER_OR_FOLLOWER
        if not dirs[current].online:
            return KAFKA_STORAGE_ERROR
        if current == path:
            self.futures.pop(key, None)
        elif key not in self.futures or self.futures[key].target != path:
            self.futures[key] = Future(path)
        return NONE

    def advance(self, dt: float, rate: dict[int, float], size: dict[Replica, float]) -> list[Replica]:
        """Copy for ``dt`` seconds: futures on a broker share its rate equally (a finished one
        hands its share to the rest). Returns the replicas swapped into their new directory."""
        by_broker: dict[int, list[Replica]] = defaultdict(list)
        for key in self.futures:
            by_broker[key[1]].append(key)
        swapped: list[Replica] = []
        for broker, keys in by_broker.items():
            limit = rate.get(broker, 0.0)
            left = dt
            pending = sorted(keys, key=lambda k: (size.get(k, 0.0) - self.futures[k].copied, k))
            while pending:
                if limit <= 0:  # a quota of 0: nothing copies
                    break
                if math.isinf(limit):
                    done, pending = pending, []
                else:
                    share = limit / len(pending)
                    need = min(size.get(k, 0.0) - self.futures[k].copied for k in pending)
                    step = min(left, max(need, 0.0) / share)
                    for k in pending:
                        self.futures[k].copied += share * step
                    left -= step
                    done = [k for k in pending if self.futures[k].copied >= size.get(k, 0.0) - 1e-6]
                    pending = [k for k in pending if k not in done]
                    if not done and left <= 1e-12:
                        break
                for k in done:
                    swapped.append(k)
                    self._swap(k)
        return swapped

    def _swap(self, key: Replica) -> None:
        future = self.futures.pop(key)
        old = self.placement[key]
        self._members[key[1], old].discard(key[0])
        self._members[key[1], future.target].add(key[0])
        self.placement[key] = future.target

    def set_online(self, broker: int, path: str, online: bool) -> list[TopicPartition]:
        """A directory fails or comes back; returns the replicas in it. Futures copying into a
        failed directory are dropped (Kafka stops them with the directory)."""
        self.dirs[broker][path].online = online
        if not online:
            for key in [k for k, f in self.futures.items() if k[1] == broker and f.target == path]:
                del self.futures[key]
        return self.replicas_in(broker, path)

    def describe(self, broker: int, size: dict[TopicPartition, int]
                 ) -> list[tuple[str, int, int, list[tuple[TopicPartition, int, bool]]]]:
        """Per directory: path, error code, capacity, and (partition, size, is_future)."""
        out: list[tuple[str, int, int, list[tuple[TopicPartition, int, bool]]]] = []
        for d in self.dirs.get(broker, {}).values():
            if not d.online:
                out.append((d.path, KAFKA_STORAGE_ERROR, d.capacity_bytes, []))
                continue
            entries = [(tp, size.get(tp, 0), False) for tp in self.replicas_in(broker, d.path)]
            entries += [(tp, int(f.copied), True) for (tp, b), f in sorted(self.futures.items())
                        if b == broker and f.target == d.path]
            out.append((d.path, NONE, d.capacity_bytes, entries))
        return out
