"""The planner's working copy of a cluster: integer-indexed arrays with incremental load sums.

ClusterModel is immutable and keyed by names; planning a 270,000-replica cluster means millions
of "what if this replica moved" questions, so the planner works on plain lists indexed by
partition and broker position, and every applied action updates the per-broker and per-topic
sums in O(replication factor). The plan is the diff between this state and the original
(Cruise Control's AnalyzerUtils.getDiff), never a log of the actions taken.

Load model (per replica): disk = the partition's size on every replica; network in = the
partition's bytes-in on every replica (producers to the leader, replication fetches to the
followers); network out = bytes-out plus bytes-in x (RF - 1) on the leader only (consumers and
follower fetches are served by the leader); leader bytes-in = bytes-in on the leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Any

import numpy as np

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel, Partition, TopicPartition
from kafka_ops.pools import PoolSet

# Per-broker loads a balance goal can even out, and the WorkingState list holding each.
RESOURCES = {
    "replicas": "count",
    "leaders": "leaders",
    "disk": "disk",
    "network_in": "net_in",
    "network_out": "net_out",
    "leader_bytes_in": "leader_in",
}


@dataclass(frozen=True)
class Group:
    """Brokers that balance against each other and the partitions that live on them.

    A pool with its topics, or (without pools) the whole cluster. ``balance`` is False for a
    group whose partitions may only move when a hard goal forces them (unpooled topics on a
    cluster where every broker is pooled).
    """

    name: str
    brokers: tuple[int, ...]  # broker indexes
    balance: bool = True


class WorkingState:
    """Mutable assignment plus load bookkeeping, built once from a ClusterModel."""

    def __init__(
        self,
        cluster: ClusterModel,
        pools: PoolSet | None = None,
        excluded: Iterable[int] = (),
        demoted: Iterable[int] = (),
    ) -> None:
        self.cluster = cluster
        for bid in (*excluded, *demoted):
            cluster.broker(bid)  # unknown broker -> ValidationError
        # Replicas on brokers the cluster no longer lists (a dead broker leaves ZooKeeper's
        # /brokers/ids) are offline replicas: model those brokers as dead.
        parts = list(cluster.partitions.values())
        gone = sorted(set(chain.from_iterable(p.replicas for p in parts)) - cluster.brokers.keys())
        self.broker_ids: list[int] = [*cluster.brokers, *gone]
        index = {b: i for i, b in enumerate(self.broker_ids)}
        self.index = index
        nb = len(self.broker_ids)
        self.nb = nb
        rack_ids: dict[str, int] = {}
        self.rack: list[int] = []
        for bid in self.broker_ids:
            # A broker without a rack is a rack of its own: rack awareness then means distinct brokers.
            rack = cluster.rack_of(bid)
            key = rack if rack is not None else f"\0broker-{bid}"
            self.rack.append(rack_ids.setdefault(key, len(rack_ids)))
        self.alive = [b in cluster.brokers and cluster.brokers[b].alive for b in self.broker_ids]
        excluded_set = {index[b] for b in excluded}
        self.excluded = [i in excluded_set for i in range(nb)]
        demoted_set = {index[b] for b in demoted}
        self.demoted = [i in demoted_set for i in range(nb)]
        # Brokers that may receive replicas (and leadership): alive and not excluded.
        self.eligible = [self.alive[i] and not self.excluded[i] for i in range(nb)]

        self.tps: list[TopicPartition] = list(cluster.partitions)
        topic_ids: dict[str, int] = {}
        self.topic: list[int] = [topic_ids.setdefault(p.topic, len(topic_ids)) for p in parts]
        self.topics: list[str] = list(topic_ids)
        # Per topic, bumped by every change of its replicas or leaders (and by reset): what a
        # search's memo of the topic (topic_paths.py) is valid for.
        self.topic_version = [0] * len(self.topics)
        self.size: list[int] = [p.size_bytes for p in parts]
        self.bytes_in: list[float] = [p.bytes_in_per_sec for p in parts]
        self.bytes_out: list[float] = [p.bytes_out_per_sec for p in parts]
        # Broker ids to indexes in one pass over all replicas, then cut into the lists.
        raw = [p.replicas for p in parts]
        flat = list(map(index.__getitem__, chain.from_iterable(raw)))
        ends = list(accumulate(map(len, raw)))
        self.replicas: list[list[int]] = [flat[a:e] for a, e in zip([0, *ends[:-1]], ends, strict=True)]
        _check_replica_lists(parts, self.replicas)
        # Partitions with a reassignment in flight are planned from the replicas they will keep
        # (Kafka's target replica set) and never moved: a second reassignment of the same
        # partition would cancel the first one.
        self.in_flight: list[int] = [i for i, p in enumerate(parts)
                                     if p.adding_replicas or p.removing_replicas]
        for i in self.in_flight:
            self.replicas[i] = [index[b] for b in parts[i].target_replicas or parts[i].replicas]
        # Offline partitions (no replica on a live broker) are never moved either: a new
        # replica copies from the leader, and they have none, so their reassignment could
        # never complete; only a broker back (or an unclean election) brings them back.
        dead = {b for b in range(nb) if not self.alive[b]}
        flying = set(self.in_flight)
        self.offline: list[int] = [] if not dead else [
            p for p, reps in enumerate(self.replicas) if dead.issuperset(reps) and p not in flying]
        self.original: list[tuple[int, ...]] = [tuple(r) for r in self.replicas]
        self._original_matrix: np.ndarray | None = None
        self.np = len(self.replicas)
        self.topic_id = topic_ids
        self._build_groups(pools)
        self._build_loads()

    # -- groups --------------------------------------------------------------------------
    def _build_groups(self, pools: PoolSet | None) -> None:
        """Each partition's group: the brokers it may live on and balances against."""
        all_brokers = tuple(range(self.nb))
        if pools is None:
            self.groups = [Group("cluster", all_brokers)]
            self.group_of_topic = [0] * len(self.topics)
        else:
            if self.in_flight:  # the partitions this plan may move, not those in flight
                flying = {self.tps[p] for p in self.in_flight}
                planned = [pt for pt in self.cluster if pt.tp not in flying]
                pools.validate(ClusterModel(self.cluster.brokers.values(), planned))
            else:
                pools.validate(self.cluster)
            names = sorted(pools.pools)
            self.groups = [
                Group(n, tuple(sorted(self.index[b] for b in pools.pools[n].brokers))) for n in names
            ]
            pooled = {self.index[b] for p in pools.pools.values() for b in p.brokers}
            unpooled = tuple(i for i in all_brokers
                             if i not in pooled and self.broker_ids[i] in self.cluster.brokers)
            self.groups.append(Group("(unpooled)", unpooled or all_brokers, balance=bool(unpooled)))
            gid = {n: i for i, n in enumerate(names)}
            self.group_of_topic = []
            for t in self.topics:
                pool = pools.pool_for_topic(t)
                self.group_of_topic.append(gid[pool.name] if pool else len(names))
        self.broker_group = [-1] * self.nb
        for g, group in enumerate(self.groups):
            if group.balance or len(self.groups) == 1:
                for b in group.brokers:
                    self.broker_group[b] = g
        self.in_group = [frozenset(g.brokers) for g in self.groups]

    def group_of(self, p: int) -> int:
        return self.group_of_topic[self.topic[p]]

    # -- loads ---------------------------------------------------------------------------
    def _build_loads(self) -> None:
        """Per-broker and per-(topic, broker) sums of the current assignment.

        With numpy; each broker's sums add its partitions in partition order, as a loop would
        (bincount adds in input order), so the floats are the same to the last bit.
        """
        nb = self.nb
        brokers, parts = self.flat_replicas()
        lens = np.fromiter(map(len, self.replicas), dtype=np.int64, count=self.np)
        lead = brokers[np.cumsum(lens) - lens]  # each list's first replica
        size = np.array(self.size, dtype=np.int64)
        bytes_in = np.array(self.bytes_in, dtype=np.float64)
        self.count = np.bincount(brokers, minlength=nb).tolist()
        self.leaders = np.bincount(lead, minlength=nb).tolist()
        disk = np.zeros(nb, dtype=np.int64)
        np.add.at(disk, brokers, size[parts])
        self.disk = disk.tolist()
        self.net_in = np.bincount(brokers, weights=bytes_in[parts], minlength=nb).tolist()
        self.net_out = np.bincount(lead, weights=self._leader_out_array(), minlength=nb).tolist()
        self.leader_in = np.bincount(lead, weights=bytes_in, minlength=nb).tolist()
        topic = np.array(self.topic, dtype=np.int64) * nb
        keys, counts = np.unique(topic[parts] + brokers, return_counts=True)
        self.topic_count: dict[int, int] = dict(zip(keys.tolist(), counts.tolist(), strict=True))
        keys, counts = np.unique(topic + lead, return_counts=True)
        self.topic_leaders: dict[int, int] = dict(zip(keys.tolist(), counts.tolist(), strict=True))
        self.moved_bytes = 0
        self.moves = 0
        self.leader_changes = 0
        self.journal: list[tuple[int, int]] | None = None  # (partition, old leader) per change, when set

    def _leader_out_array(self) -> np.ndarray:
        """leader_out() of every partition (the same floats)."""
        rf = np.fromiter(map(len, self.replicas), dtype=np.int64, count=self.np)
        return np.array(self.bytes_out, dtype=np.float64) + np.array(self.bytes_in, dtype=np.float64) * (rf - 1)

    def leader_out(self, p: int) -> float:
        return self.bytes_out[p] + self.bytes_in[p] * (len(self.replicas[p]) - 1)

    def load(self, resource: str) -> list[float]:
        """The per-broker list for a resource name of RESOURCES (live, not a copy)."""
        return getattr(self, RESOURCES[resource])

    def reset(self) -> None:
        """Back to the original assignment (a repair that starts over)."""
        self.replicas = [list(r) for r in self.original]
        self.topic_version = [v + 1 for v in self.topic_version]
        self._build_loads()

    # -- actions -------------------------------------------------------------------------
    def movable(self, p: int, b: int) -> bool:
        """A replica moves at most once: only replicas still on an original broker may move."""
        return b in self.original[p]

    def move(self, p: int, src: int, dst: int) -> None:
        """Move the replica of p on src to dst, in the same position of the replica list."""
        reps = self.replicas[p]
        slot = reps.index(src)
        t = self.topic[p] * self.nb
        size, bin_ = self.size[p], self.bytes_in[p]
        self.count[src] -= 1
        self.count[dst] += 1
        self.disk[src] -= size
        self.disk[dst] += size
        self.net_in[src] -= bin_
        self.net_in[dst] += bin_
        self.topic_count[t + src] -= 1
        self.topic_count[t + dst] = self.topic_count.get(t + dst, 0) + 1
        self.topic_version[self.topic[p]] += 1
        if slot == 0:
            self._shift_leader(p, src, dst)
        reps[slot] = dst
        # The plan copies a replica once, to its final broker: count replicas on brokers the
        # partition did not start on (a retarget moves the copy; a move back cancels it).
        orig = self.original[p]
        change = (dst not in orig) - (src not in orig)
        self.moves += change
        self.moved_bytes += change * size

    def undo_move(self, p: int, src: int, dst: int) -> None:
        """Take back move(p, src, dst) made a moment ago (a trial that did not work out)."""
        self.move(p, dst, src)

    def make_leader(self, p: int, b: int, undo: bool = False) -> None:
        """Put b first in p's replica list (the preferred leader), swapping with the old first.

        ``undo`` takes back a change made a moment ago (b is the leader it replaced).
        """
        reps = self.replicas[p]
        slot = reps.index(b)
        old = reps[0]
        if self.journal is not None:
            self.journal.append((p, old))
        self._shift_leader(p, old, b)
        reps[0], reps[slot] = b, old
        self.leader_changes += -1 if undo else 1

    def _shift_leader(self, p: int, old: int, new: int) -> None:
        t = self.topic[p] * self.nb
        out, bin_ = self.leader_out(p), self.bytes_in[p]
        self.leaders[old] -= 1
        self.leaders[new] += 1
        self.net_out[old] -= out
        self.net_out[new] += out
        self.leader_in[old] -= bin_
        self.leader_in[new] += bin_
        self.topic_leaders[t + old] -= 1
        self.topic_leaders[t + new] = self.topic_leaders.get(t + new, 0) + 1
        self.topic_version[self.topic[p]] += 1

    def add_replica(self, p: int, dst: int) -> None:
        """Append a follower (replication factor up); the new replica counts as a move."""
        leader = self.replicas[p][0]
        self.net_out[leader] -= self.leader_out(p)
        self.replicas[p].append(dst)
        self.net_out[leader] += self.leader_out(p)
        self._count_replica(p, dst, +1)
        self.moves += 1
        self.moved_bytes += self.size[p]

    def drop_replica(self, p: int, b: int) -> None:
        """Remove a follower (replication factor down); nothing is copied."""
        reps = self.replicas[p]
        if reps[0] == b:
            raise ValueError("drop the leader only after moving leadership")
        leader = reps[0]
        self.net_out[leader] -= self.leader_out(p)
        reps.remove(b)
        self.net_out[leader] += self.leader_out(p)
        self._count_replica(p, b, -1)

    def _count_replica(self, p: int, b: int, sign: int) -> None:
        key = self.topic[p] * self.nb + b
        self.count[b] += sign
        self.disk[b] += sign * self.size[p]
        self.net_in[b] += sign * self.bytes_in[p]
        self.topic_count[key] = self.topic_count.get(key, 0) + sign
        self.topic_version[self.topic[p]] += 1

    # -- as arrays -----------------------------------------------------------------------
    def replica_matrix(self, width: int = 1) -> np.ndarray:
        """Each partition's current replica list as a row (the leader first), padded with -1
        to the longest list (at least ``width``): a fresh copy."""
        return padded(self.replicas, width)

    def original_matrix(self) -> np.ndarray:
        """padded() of the original replica lists, built once (they never change): read-only."""
        if self._original_matrix is None:
            self._original_matrix = padded(self.original)
            self._original_matrix.flags.writeable = False
        return self._original_matrix

    def flat_replicas(self) -> tuple[np.ndarray, np.ndarray]:
        """(broker, partition) of every current replica, partitions in order, each list in order."""
        lens = np.fromiter(map(len, self.replicas), dtype=np.int64, count=self.np)
        flat = np.fromiter(chain.from_iterable(self.replicas), dtype=np.int64, count=int(lens.sum()))
        return flat, np.repeat(np.arange(self.np, dtype=np.int64), lens)

    # -- the diff ------------------------------------------------------------------------
    def changed(self) -> dict[TopicPartition, tuple[int, ...]]:
        """Target replica lists (broker ids) of every partition whose list changed."""
        ids = self.broker_ids
        return {
            self.tps[p]: tuple(ids[b] for b in reps)
            for p, reps in enumerate(self.replicas)
            if tuple(reps) != self.original[p]
        }


def _check_replica_lists(parts: Sequence[Partition], replicas: Sequence[Sequence[int]]) -> None:
    """Raise for the first partition listing no replica or a broker twice (broker indexes,
    so never negative: one numpy sweep)."""
    if not replicas:
        return
    mat = padded(replicas)  # -1 past each list's end
    mat.sort(axis=1)
    empty = mat[:, -1] < 0
    twice = ((mat[:, 1:] == mat[:, :-1]) & (mat[:, :-1] >= 0)).any(axis=1)
    bad = np.flatnonzero(twice | empty)
    if len(bad):
        p = parts[int(bad[0])]
        if p.replicas:
            raise ValidationError(f"{p.tp} lists a broker twice in its replicas {list(p.replicas)}")
        raise ValidationError(f"{p.tp} has no replicas")


def padded(rows: Sequence[Sequence[int]], width: int = 1) -> np.ndarray:
    """Lists of broker indexes as the rows of a matrix, padded with -1 to the longest one (at
    least ``width`` columns)."""
    n = len(rows)
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    width = max(width, int(lens.max(initial=0)))
    out = np.full((n, width), -1, dtype=np.int64)
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lens.sum()))
    out[np.arange(width)[None, :] < lens[:, None]] = flat
    return out



class Grouped(Mapping[int, list[int]]):
    """key -> its values in input order, read-only: one stable sort by key, and each key's
    list sliced out only when asked for (most of a million (topic, broker) keys never are)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        self._flat: list[int] = values[order].tolist()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) \
            else np.zeros(0, dtype=np.int64)
        self._pos = dict(zip(keys[starts].tolist(), range(len(starts)), strict=True))
        self._starts: list[int] = [*starts.tolist(), len(self._flat)]

    def __getitem__(self, key: int) -> list[int]:
        i = self._pos[key]
        return self._flat[self._starts[i]:self._starts[i + 1]]

    def get(self, key: int, default: Any = None) -> Any:
        i = self._pos.get(key)
        if i is None:
            return default
        return self._flat[self._starts[i]:self._starts[i + 1]]

    def __iter__(self) -> Iterator[int]:
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, key: object) -> bool:
        return key in self._pos
