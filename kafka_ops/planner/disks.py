"""Log directories in plans (JBOD): balance inside brokers, place added replicas, repair failed
directories.

Cruise Control's intra-broker goals, on our model: no directory above ``threshold`` of its
capacity (IntraBrokerDiskCapacityGoal) and every directory's usage within ``band`` of its
broker's mean usage (IntraBrokerDiskUsageDistributionGoal). ``rebalance-disks`` moves replicas
only between directories of their own broker, so its plan keeps every replica list as it is and
says the moves in Kafka's ``log_dirs`` field ("any" for replicas that stay); the stock
``kafka-reassign-partitions --execute`` runs it as an AlterReplicaLogDirs per replica.

Usage is a fraction of capacity; a directory of unknown capacity (0) counts its broker's mean
directory capacity, so unknown capacities balance by bytes. Offline directories (KIP-112) are
neither source nor target: their replicas cannot be copied (Kafka answers KAFKA_STORAGE_ERROR);
``plan_fix_failed_dirs`` moves them to another broker.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel, LogDir, Partition, TopicPartition
from kafka_ops.plan import ANY_LOG_DIR, ReassignmentPlan


@dataclass(frozen=True)
class DiskBalance:
    """Per broker, the spread (max - min usage fraction) of its online directories."""

    spread: dict[int, float]
    over_threshold: list[tuple[int, str]]

    @property
    def worst_spread(self) -> float:
        return max(self.spread.values(), default=0.0)

    @property
    def mean_spread(self) -> float:
        return sum(self.spread.values()) / len(self.spread) if self.spread else 0.0


@dataclass(frozen=True)
class DiskPlan:
    plan: ReassignmentPlan
    moves: int
    moved_bytes: int
    before: DiskBalance
    after: DiskBalance


def _capacities(dirs: tuple[LogDir, ...]) -> dict[str, float]:
    known = [d.capacity_bytes for d in dirs if d.capacity_bytes > 0]
    default = sum(known) / len(known) if known else 1.0
    return {d.path: float(d.capacity_bytes or default) for d in dirs}


def dir_usage(cluster: ClusterModel) -> dict[int, dict[str, int]]:
    """Bytes per directory of every broker that has directories (replicas of unknown
    directory are not counted)."""
    used: dict[int, dict[str, int]] = {
        b.id: {d.path: 0 for d in b.log_dirs} for b in cluster.brokers.values() if b.log_dirs}
    for p in cluster:
        if not p.log_dirs:
            continue
        for b, path in zip(p.replicas, p.log_dirs, strict=True):
            if path is not None and b in used and path in used[b]:
                used[b][path] += p.size_bytes
    return used


def measure(cluster: ClusterModel, threshold: float = 1.0) -> DiskBalance:
    used = dir_usage(cluster)
    spread: dict[int, float] = {}
    over: list[tuple[int, str]] = []
    for b, by_dir in used.items():
        broker = cluster.brokers[b]
        cap = _capacities(broker.log_dirs)
        online = [d.path for d in broker.log_dirs if d.online]
        fractions = [by_dir[d] / cap[d] for d in online]
        if fractions:
            spread[b] = max(fractions) - min(fractions)
        over += [(b, d) for d in online
                 if (ld := broker.log_dir(d)) is not None and ld.capacity_bytes
                 and by_dir[d] > threshold * cap[d]]
    return DiskBalance(spread, over)


def plan_rebalance_disks(cluster: ClusterModel, *, threshold: float = 0.8, band: float = 0.05,
                         brokers: list[int] | None = None, max_moves_per_broker: int = 10_000
                         ) -> DiskPlan:
    """Intra-broker moves so no directory is above ``threshold`` and every directory is within
    ``band`` of its broker's mean usage, moving as few bytes as the greedy pass finds."""
    if not 0 < threshold <= 1:
        raise ValidationError(f"disk threshold must be in (0, 1], got {threshold}")
    if not 0 <= band < 1:
        raise ValidationError(f"disk band must be in [0, 1), got {band}")
    for b in brokers or ():
        cluster.broker(b)
    targets: dict[TopicPartition, dict[int, str]] = defaultdict(dict)
    # Replicas per (broker, directory): sorted (size, tp) lists for a closest-size search.
    holds: dict[int, dict[str, list[tuple[int, TopicPartition]]]] = defaultdict(lambda: defaultdict(list))
    moving = {p.tp for p in cluster if p.reassignment_in_progress}
    for p in cluster:
        if not p.log_dirs or p.tp in moving:
            continue
        for b, path in zip(p.replicas, p.log_dirs, strict=True):
            if path is not None:
                holds[b][path].append((p.size_bytes, p.tp))
    used = dir_usage(cluster)
    moved_bytes = 0
    for b in sorted(used if brokers is None else set(brokers) & set(used)):
        broker = cluster.brokers[b]
        online = [d.path for d in broker.log_dirs if d.online]
        if len(online) < 2:
            continue
        cap = _capacities(broker.log_dirs)
        use = {d: float(used[b][d]) for d in online}
        mean = sum(use.values()) / sum(cap[d] for d in online)
        lists = {d: sorted(holds[b][d]) for d in online}
        for _ in range(max_moves_per_broker):
            found = _next_move(online, use, cap, lists, mean, threshold, band)
            if found is None:
                break
            src, dst, pick = found
            size, tp = lists[src].pop(pick)
            bisect.insort(lists[dst], (size, tp))
            use[src] -= size
            use[dst] += size
            moved_bytes += size
            original = cluster.partitions[tp].log_dir_of(b)
            if original == dst:
                targets[tp].pop(b, None)
            else:
                targets[tp][b] = dst
    moves = {tp: m for tp, m in targets.items() if m}
    plan = _log_dir_plan(cluster, moves)
    after = cluster.with_log_dirs(moves)
    return DiskPlan(plan, sum(len(m) for m in moves.values()), moved_bytes,
                    measure(cluster, threshold), measure(after, threshold))


def _next_move(online: list[str], use: dict[str, float], cap: dict[str, float],
               lists: dict[str, list[tuple[int, TopicPartition]]], mean: float,
               threshold: float, band: float) -> tuple[str, str, int] | None:
    """The move that narrows the widest gap it can: fullest source first, emptiest target
    first, trying the next pair when no replica of the right size exists. Only a directory
    over the threshold or outside the band is worth a move."""
    frac = {d: use[d] / cap[d] for d in online}
    sources = sorted(online, key=lambda d: (-frac[d], d))
    targets = sorted(online, key=lambda d: (frac[d], d))
    for src in sources:
        for dst in targets:
            if frac[dst] >= frac[src]:
                break
            if not (frac[src] > threshold or frac[src] - mean > band or mean - frac[dst] > band):
                continue
            # Bytes that would equalise src and dst; any size in (0, 2*even) narrows the gap.
            even = (frac[src] - frac[dst]) / (1 / cap[src] + 1 / cap[dst])
            room = threshold * cap[dst] - use[dst]
            pick = _closest(lists[src], min(even, room), limit=min(2 * even, room))
            if pick is not None:
                return src, dst, pick
    return None


def _closest(items: list[tuple[int, TopicPartition]], want: float, limit: float) -> int | None:
    """Index of the replica whose size is closest to ``want``, strictly between 0 and limit."""
    i = bisect.bisect_left(items, (want,))
    best = None
    for j in (i - 1, i):
        if 0 <= j < len(items) and 0 < items[j][0] < limit:
            if best is None or abs(items[j][0] - want) < abs(items[best][0] - want):
                best = j
    return best


def _log_dir_plan(cluster: ClusterModel, moves: dict[TopicPartition, dict[int, str]]
                  ) -> ReassignmentPlan:
    replicas = {}
    dirs = {}
    for tp in sorted(moves):
        p = cluster.partitions[tp]
        replicas[tp] = p.target_replicas
        dirs[tp] = tuple(moves[tp].get(b, ANY_LOG_DIR) for b in p.target_replicas)
    return ReassignmentPlan(replicas, dirs)


def least_used_dir(cluster: ClusterModel, broker: int, used: dict[int, dict[str, int]]) -> str | None:
    """The online directory of the broker with the lowest usage fraction (None without dirs)."""
    b = cluster.brokers.get(broker)
    if b is None or not b.log_dirs:
        return None
    cap = _capacities(b.log_dirs)
    online = [d.path for d in b.log_dirs if d.online]
    return min(online, key=lambda d: (used[broker][d] / cap[d], d)) if online else None


def place_added_replicas(cluster: ClusterModel, plan: ReassignmentPlan) -> ReassignmentPlan:
    """A cross-broker plan with a directory chosen for each replica it adds to a broker (the
    least used one, counting what the plan already put there); others stay "any"."""
    used = dir_usage(cluster)
    dirs = dict(plan.log_dirs)
    for tp, reps in plan.replicas.items():
        p = cluster.partitions.get(tp)
        if p is None:
            continue
        chosen = list(dirs.get(tp, (ANY_LOG_DIR,) * len(reps)))
        for i, b in enumerate(reps):
            if b in p.replicas or chosen[i] != ANY_LOG_DIR:
                continue
            d = least_used_dir(cluster, b, used)
            if d is not None:
                chosen[i] = d
                used[b][d] += p.size_bytes
        if any(c != ANY_LOG_DIR for c in chosen):
            dirs[tp] = tuple(chosen)
    return ReassignmentPlan(dict(plan.replicas), dirs)


def failed_replicas(cluster: ClusterModel) -> list[tuple[Partition, int]]:
    """Replicas in an offline directory of a live broker: in an offline directory, or of
    unknown directory out of the ISR on a broker with an offline directory (DescribeLogDirs
    lists nothing for an offline directory)."""
    out = []
    for p in cluster:
        for i, b in enumerate(p.replicas):
            broker = cluster.brokers.get(b)
            if broker is None or not broker.alive or all(d.online for d in broker.log_dirs):
                continue
            path = p.log_dirs[i] if p.log_dirs else None
            d = broker.log_dir(path) if path else None
            if (d is not None and not d.online) or (path is None and b not in p.isr):
                out.append((p, b))
    return out


def plan_fix_failed_dirs(cluster: ClusterModel) -> ReassignmentPlan:
    """Move every replica of a failed directory to another live broker (same rack first, then
    the fewest replicas), into that broker's least used online directory. Kafka cannot copy a
    replica out of a failed directory within its broker: the data is unreadable."""
    used = dir_usage(cluster)
    count = {b: len(cluster.partitions_on(b)) for b in cluster.brokers}
    replicas: dict[TopicPartition, list[int]] = {}
    dirs: dict[TopicPartition, list[str]] = {}
    for p, bad in failed_replicas(cluster):
        reps = replicas.setdefault(p.tp, list(p.target_replicas))
        rack = cluster.rack_of(bad)
        candidates = [b for b in cluster.alive_broker_ids
                      if b not in reps and (not cluster.brokers[b].log_dirs
                                            or any(d.online for d in cluster.brokers[b].log_dirs))]
        if not candidates:
            raise ValidationError(f"no live broker can take the replica of {p.tp} in the failed "
                                  f"directory of broker {bad}")
        new = min(candidates, key=lambda b: (cluster.rack_of(b) != rack, count[b], b))
        count[new] += 1
        reps[reps.index(bad)] = new
        d = least_used_dir(cluster, new, used) if cluster.brokers[new].log_dirs else None
        if d is not None:
            used[new][d] += p.size_bytes
        chosen = dirs.setdefault(p.tp, [ANY_LOG_DIR] * len(reps))
        chosen[reps.index(new)] = d or ANY_LOG_DIR
    return ReassignmentPlan({tp: tuple(r) for tp, r in sorted(replicas.items())},
                            {tp: tuple(d) for tp, d in dirs.items() if any(x != ANY_LOG_DIR for x in d)})


def rollback_with_dirs(plan: ReassignmentPlan, cluster: ClusterModel) -> ReassignmentPlan:
    """The plan that puts the plan's partitions back as they are in ``cluster``: their replicas
    and, for each replica the plan moves to another directory of its broker, that directory."""
    back = plan.rollback(cluster)
    dirs = {}
    for tp, wanted in plan.log_dirs.items():
        p = cluster.partitions.get(tp)
        if p is None:
            continue
        target = dict(zip(plan.replicas[tp], wanted, strict=True))
        chosen = tuple(
            current if (current := p.log_dir_of(b)) and target.get(b, ANY_LOG_DIR) not in (ANY_LOG_DIR, current)
            else ANY_LOG_DIR
            for b in p.replicas)
        if any(d != ANY_LOG_DIR for d in chosen):
            dirs[tp] = chosen
    return ReassignmentPlan(dict(back.replicas), dirs)


def log_dir_changes(plan: ReassignmentPlan, cluster: ClusterModel) -> tuple[int, int]:
    """(replicas the plan moves between directories of their broker, bytes copied for them)."""
    moves = size = 0
    for tp, wanted in plan.log_dirs.items():
        p = cluster.partitions.get(tp)
        if p is None:
            continue
        for b, d in zip(plan.replicas[tp], wanted, strict=True):
            if d != ANY_LOG_DIR and b in p.replicas and p.log_dir_of(b) != d:
                moves += 1
                size += p.size_bytes
    return moves, size
