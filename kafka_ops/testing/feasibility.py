"""An exact, independent answer to "can this cluster satisfy the planner's hard goals?".

The planner is greedy; this module is not. It decides feasibility by maximum flow, written
without any planner code, so a test can tell "the planner refused a cluster that can be
balanced" apart from "no plan exists":

    source -> partition (RF) -> (partition, rack) (the rack limit) -> broker (1) -> sink
    (the broker's room under max_replicas_per_broker)

A flow of sum(RF) is an assignment with every replica on a distinct live broker of the
topic's pool, at most the rack limit per rack and no broker above its replica limit; any
such assignment is such a flow. Disk capacity is bin packing (NP-hard), so brokers with a
disk limit get three answers: a relaxation in which a broker may take any replica that fits
its disk limit on its own, beside the replicas of partitions in flight (if even that fails,
no plan exists; a partition that cannot be placed that way even alone is named); a
restriction in which brokers with a disk limit hold nothing (if that succeeds, a plan
exists); in between, every assignment tried, depth first, largest partition first (past a
budget of broker sets, the verdict is "unknown"). The disk limit is capacity x
``disk_threshold`` (the planner's default capacity threshold, 0.8). ``disk_splits_fit`` is a
fourth, for capacity proofs: a linear program in which replicas may split over brokers.

Partitions with a reassignment in flight, or offline (no replica on a live broker, so no
leader a new replica could copy from), stay where they are: they only take room.

The rack rule, restated independently: a partition with RF replicas in a pool whose live
brokers form racks of sizes n_r may hold at most L replicas per rack, L the smallest number
with sum_r min(L, n_r) >= RF (ceil(RF / racks) when the racks are big enough). A broker
without a rack is a rack of its own.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import combinations

from ortools.linear_solver import pywraplp

from kafka_ops.model import ClusterModel, Partition, TopicPartition
from kafka_ops.pools import PoolSet


@dataclass(frozen=True)
class Verdict:
    """feasible: True, False or None (unknown); reason names what is missing when False."""

    feasible: bool | None
    reason: str = ""
    partitions: tuple[TopicPartition, ...] = ()  # those that cannot be placed even alone


def rack_key(cluster: ClusterModel, b: int) -> str:
    rack = cluster.rack_of(b)
    return rack if rack is not None else f"\0broker-{b}"


def pool_members(cluster: ClusterModel, pools: PoolSet | None, topic: str) -> set[int]:
    """The brokers, dead or alive, of the topic's pool, or the unpooled ones."""
    if pools is None:
        return set(cluster.brokers)
    pool = pools.pool_for_topic(topic)
    if pool is not None:
        return set(pool.brokers)
    pooled = {b for p in pools.pools.values() for b in p.brokers}
    return set(cluster.brokers) - pooled or set(cluster.brokers)


def allowed_brokers(cluster: ClusterModel, pools: PoolSet | None, topic: str) -> list[int]:
    """Live brokers the topic's replicas may be on: its pool's, or the unpooled ones."""
    return sorted(b for b in pool_members(cluster, pools, topic) if cluster.brokers[b].alive)


def rack_limit(cluster: ClusterModel, brokers: list[int], rf: int) -> int:
    sizes = Counter(rack_key(cluster, b) for b in brokers).values()
    for limit in range(1, rf + 1):
        if sum(min(limit, n) for n in sizes) >= rf:
            return limit
    return rf


def replicas_of(p: Partition) -> tuple[int, ...]:
    """What the partition will hold: the target of an in-flight reassignment."""
    return p.target_replicas if p.reassignment_in_progress else p.replicas


def offline(cluster: ClusterModel, p: Partition, removed: AbstractSet[int] = frozenset()) -> bool:
    """No replica on a live broker: no leader a new replica could copy from. ``removed``:
    brokers the plan drains, marked dead in ``cluster``, which still serve their replicas."""
    return not any(b in removed or (b in cluster.brokers and cluster.brokers[b].alive) for b in p.replicas)


def stays(cluster: ClusterModel, p: Partition, removed: AbstractSet[int] = frozenset()) -> bool:
    """Whether no plan may change p: a reassignment in flight (a second one would cancel it),
    or offline."""
    return p.reassignment_in_progress or offline(cluster, p, removed)


def check_hard_goals(before: ClusterModel, after: ClusterModel, pools: PoolSet | None = None,
                     max_replicas_per_broker: int | None = None,
                     removed: AbstractSet[int] = frozenset()) -> list[str]:
    """Every hard-goal violation of ``after`` (a planned cluster), recomputed from scratch.

    Partitions in flight or offline in ``before`` must be untouched; every other partition
    must keep its replication factor and satisfy every rule. ``removed``: brokers a drain
    empties, marked dead in ``before`` (so that rack limits count them out).
    """
    problems = []
    counts: Counter[int] = Counter()
    for tp, p in after.partitions.items():
        old = before.partitions[tp]
        kept = stays(before, old, removed)
        counts.update(replicas_of(old) if kept else p.replicas)
        if kept:
            if p.replicas != old.replicas:
                problems.append(f"{tp}: changed while in flight or offline")
            continue
        if len(p.replicas) != len(replicas_of(old)):
            problems.append(f"{tp}: replication factor {len(replicas_of(old))} -> {len(p.replicas)}")
        if len(set(p.replicas)) != len(p.replicas):
            problems.append(f"{tp}: duplicate replicas {p.replicas}")
        allowed = allowed_brokers(before, pools, tp.topic)
        outside = [b for b in p.replicas if b not in allowed]
        if outside:
            problems.append(f"{tp}: replicas on {outside}, dead or outside the pool")
        per_rack = Counter(rack_key(before, b) for b in p.replicas)
        limit = rack_limit(before, allowed, len(p.replicas))
        if max(per_rack.values()) > limit:
            problems.append(f"{tp}: {max(per_rack.values())} replicas in one rack, limit {limit}")
    if max_replicas_per_broker is not None:
        # Replicas of in-flight and offline partitions stay where they are, even above the limit.
        fixed = Counter(b for p in before if stays(before, p, removed) for b in replicas_of(p))
        problems.extend(f"broker {b}: {c} replicas, limit {max_replicas_per_broker}"
                        for b, c in counts.items() if c > max(max_replicas_per_broker, fixed[b]))
    return problems


def feasibility(cluster: ClusterModel, pools: PoolSet | None = None,
                max_replicas_per_broker: int | None = None, disk_threshold: float = 0.8) -> Verdict:
    """Whether any assignment meets the hard goals (see the module docstring)."""
    fixed: Counter[int] = Counter()
    movable: list[Partition] = []
    for p in cluster:
        if stays(cluster, p):
            fixed.update(replicas_of(p))
        else:
            movable.append(p)
    # Partitions that cannot be placed even alone: fewer allowed live brokers than replicas.
    alone = [p.tp for p in movable
             if len(allowed_brokers(cluster, pools, p.topic)) < len(p.replicas)]
    if alone:
        return Verdict(False, f"{alone[0]} has more replicas than live brokers in its pool",
                       tuple(alone))
    limit = max_replicas_per_broker if max_replicas_per_broker is not None else 10**9
    room = {b: max(0, limit - fixed[b]) for b in cluster.brokers}
    if not _flow_places_all(cluster, pools, movable, room):
        return Verdict(False, "replica count capacity: the brokers' max_replicas_per_broker "
                              "leaves too little room")
    limited = {b for b, broker in cluster.brokers.items() if broker.capacity.disk_bytes}
    if not limited:
        return Verdict(True)

    held = Counter[int]()  # disk the replicas of partitions that stay take on their targets
    for p in cluster:
        if stays(cluster, p):
            for b in replicas_of(p):
                held[b] += p.size_bytes

    def fits(p: Partition, b: int) -> bool:
        disk = cluster.brokers[b].capacity.disk_bytes
        return not disk or p.size_bytes <= disk * disk_threshold - held[b]

    too_big = [p.tp for p in movable if not _flow_places_all(cluster, pools, [p], room, fits)]
    if too_big:
        return Verdict(False, f"disk capacity: {too_big[0]} does not fit on enough brokers",
                       tuple(too_big))
    if not _flow_places_all(cluster, pools, movable, room, fits):
        return Verdict(False, "disk capacity: too few brokers can hold the largest partitions")
    # Brokers with a disk limit might be unable to take any given replica: without them.
    if _flow_places_all(cluster, pools, movable, {b: 0 if b in limited else r
                                                  for b, r in room.items()}):
        return Verdict(True)
    found = _search(cluster, pools, movable, room, {b: (broker.capacity.disk_bytes * disk_threshold
                                                       if broker.capacity.disk_bytes else float("inf")) - held[b]
                                                   for b, broker in cluster.brokers.items()})
    if found is None:
        return Verdict(None, "disk capacity decides (bin packing), past the search's budget")
    return Verdict(found, "" if found else "disk capacity: no assignment fits (every one tried)")


class _OutOfBudget(Exception):
    pass


def _search(cluster: ClusterModel, pools: PoolSet | None, movable: list[Partition],
            room: Mapping[int, int], disk_room: Mapping[int, float], budget: int = 2_000_000) -> bool | None:
    """Whether some assignment of ``movable`` keeps every broker within its replica ``room``
    and ``disk_room``: every one tried, largest partition first; None past ``budget`` broker
    sets."""
    disk = dict(disk_room)
    count = dict(room)
    parts = sorted(movable, key=lambda p: -p.size_bytes)
    sets = []
    for p in parts:
        allowed = allowed_brokers(cluster, pools, p.topic)
        limit = rack_limit(cluster, allowed, len(p.replicas))
        sets.append([c for c in combinations(allowed, len(p.replicas))
                     if max(Counter(rack_key(cluster, b) for b in c).values()) <= limit])
    left = [budget]

    def place(i: int) -> bool:
        if i == len(parts):
            return True
        size = parts[i].size_bytes
        for brokers in sets[i]:
            left[0] -= 1
            if left[0] < 0:
                raise _OutOfBudget
            if any(disk[b] < size or count[b] < 1 for b in brokers):
                continue
            for b in brokers:
                disk[b] -= size
                count[b] -= 1
            if place(i + 1):
                return True
            for b in brokers:
                disk[b] += size
                count[b] += 1
        return False

    try:
        return place(0)
    except _OutOfBudget:
        return None


def count_spread_floor(cluster: ClusterModel) -> int:
    """The least max - min of live brokers' replica counts that an assignment meeting the rack
    rule reaches (no pools, no limits): the smallest d for which some lo..lo + d around the
    mean fits (counts_fit). Exact, where a bound by rack totals (a rack must hold at least
    what the others may not, may hold at most one replica per rack_limit of each partition)
    may miss how those interact. Offline partitions stay on their dead brokers."""
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    total = sum(len(p.replicas) for p in cluster if not offline(cluster, p))
    low, high = total // len(live), -(-total // len(live))
    for d in range(high - low, total + 1):
        if any(counts_fit(cluster, lo, lo + d) for lo in range(max(0, high - d), low + 1)):
            return d
    raise ValueError("no assignment meets the rack rule")


def counts_fit(cluster: ClusterModel, lo: int, hi: int) -> bool:
    """Whether an assignment meeting the rack rule gives every live broker lo..hi replicas.

    The flow above with lower bounds on the broker -> sink edges (at least lo each) and on the
    partition edges (all RF placed), decided the textbook way: each lower bound l on an edge
    u -> v becomes a demand (a new source S feeds v by l, u drains to a new sink T by l), the
    old sink returns flow to the old source, and a feasible flow exists iff the maximum S -> T
    flow meets every demand.
    """
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    parts = [p for p in cluster if not offline(cluster, p)]
    total = sum(len(p.replicas) for p in parts)
    graph = _Flow()
    graph.add("t", "s", total)
    demand = 0
    for i, p in enumerate(parts):
        rf = len(p.replicas)
        limit = rack_limit(cluster, live, rf)
        graph.add("S", ("p", i), rf)  # the partition edge s -> p, lower bound = capacity = rf
        graph.add("s", "T", rf)
        demand += rf
        for rack in {rack_key(cluster, b) for b in live}:
            graph.add(("p", i), ("r", i, rack), limit)
        for b in live:
            graph.add(("r", i, rack_key(cluster, b)), ("b", b), 1)
    for b in live:
        graph.add(("b", b), "t", hi - lo)
        graph.add("S", "t", lo)
        graph.add(("b", b), "T", lo)
        demand += lo
    return graph.max_flow("S", "T") == demand


def _flow_places_all(cluster: ClusterModel, pools: PoolSet | None, parts: list[Partition],
                     room: Mapping[int, int],
                     fits: Callable[[Partition, int], bool] | None = None) -> bool:
    graph = _Flow()
    graph.add("s", "t", 0)
    need = 0
    for i, p in enumerate(parts):
        rf = len(p.replicas)
        need += rf
        allowed = allowed_brokers(cluster, pools, p.topic)
        limit = rack_limit(cluster, allowed, rf)
        graph.add("s", ("p", i), rf)
        for rack in {rack_key(cluster, b) for b in allowed}:
            graph.add(("p", i), ("r", i, rack), limit)
        for b in allowed:
            if fits is None or fits(p, b):
                graph.add(("r", i, rack_key(cluster, b)), ("b", b), 1)
    for b, r in room.items():
        graph.add(("b", b), "t", r)
    return graph.max_flow("s", "t") == need


class _Flow:
    """Edmonds-Karp maximum flow on a dict graph (test-sized clusters: a few hundred nodes)."""

    def __init__(self) -> None:
        self.cap: dict[object, dict[object, int]] = {}

    def add(self, u: object, v: object, c: int) -> None:
        self.cap.setdefault(u, {})
        self.cap.setdefault(v, {})
        self.cap[u][v] = self.cap[u].get(v, 0) + c
        self.cap[v].setdefault(u, 0)

    def max_flow(self, s: object, t: object) -> int:
        total = 0
        while True:
            parent: dict[object, object] = {s: None}
            queue = deque([s])
            while queue and t not in parent:
                u = queue.popleft()
                for v, c in self.cap[u].items():
                    if c > 0 and v not in parent:
                        parent[v] = u
                        queue.append(v)
            if t not in parent:
                return total
            path = []
            v = t
            while parent[v] is not None:
                path.append((parent[v], v))
                v = parent[v]
            f = min(self.cap[u][v] for u, v in path)
            for u, v in path:
                self.cap[u][v] -= f
                self.cap[v][u] += f
            total += f


def fits_every_limit(cluster: ClusterModel, pools: PoolSet | None, max_replicas: int | None,
                     limit: float = 0.8,
                     allowed: Callable[[Partition, tuple[int, ...], int], bool] | None = None) -> bool:
    """Whether some assignment puts every partition on distinct live brokers within the rack
    rule, the pools, the replica limit and every broker's disk and network limits: every
    assignment and every leader tried (backtracking, on clusters of a few brokers), each
    partition's broker set checked by the same rules as the plan. A leader sends its bytes
    out and a copy of its bytes in to each follower. Exact where the max-flow oracle says
    "bin packing decides". ``allowed(partition, brokers, leader)``: what a mode lets an
    assignment be (add-brokers: only the new brokers receive). Offline partitions stay."""
    inf = float("inf")
    live = sorted(b for b, broker in cluster.brokers.items() if broker.alive)
    room = {}
    for b in live:
        cap = cluster.brokers[b].capacity
        room[b] = [cap.disk_bytes * limit or inf, cap.network_in_bytes_per_sec * limit or inf,
                   cap.network_out_bytes_per_sec * limit or inf,
                   max_replicas if max_replicas is not None else inf]
    # Offline partitions stay on their dead brokers: they take no room on live ones.
    parts = sorted((p for p in cluster if not offline(cluster, p)), key=lambda p: (-p.size_bytes, -p.bytes_in_per_sec))

    def place(i: int) -> bool:
        if i == len(parts):
            return True
        p = parts[i]
        out = p.bytes_out_per_sec + p.bytes_in_per_sec * (len(p.replicas) - 1)
        for brokers in combinations(live, len(p.replicas)):
            trial = cluster.with_assignment({p.tp: brokers})
            if any(str(p.tp) in problem for problem in check_hard_goals(cluster, trial, pools)):
                continue
            for leader in brokers:
                if allowed is not None and not allowed(p, brokers, leader):
                    continue
                need = {b: (p.size_bytes, p.bytes_in_per_sec, out if b == leader else 0, 1) for b in brokers}
                if any(r < n for b in brokers for r, n in zip(room[b], need[b], strict=True)):
                    continue
                for b in brokers:
                    room[b] = [r - n for r, n in zip(room[b], need[b], strict=True)]
                if place(i + 1):
                    return True
                for b in brokers:
                    room[b] = [r + n for r, n in zip(room[b], need[b], strict=True)]
        return False

    return place(0)


def broker_loads(cluster: ClusterModel) -> dict[int, list[float]]:
    """Per broker: disk, network in, network out and replica count, recomputed from the replica
    lists (no planner code): a leader sends its bytes out plus one copy of its bytes in to each
    follower."""
    loads = {b: [0.0, 0.0, 0.0, 0.0] for b in cluster.brokers}
    for p in cluster:
        for i, b in enumerate(p.replicas):
            load = loads[b]
            load[0] += p.size_bytes
            load[1] += p.bytes_in_per_sec
            load[3] += 1
            if i == 0:
                load[2] += p.bytes_out_per_sec + p.bytes_in_per_sec * (len(p.replicas) - 1)
    return loads


def broker_limits(cluster: ClusterModel, b: int, max_replicas: int | None,
                  threshold: float = 0.8) -> list[float]:
    """Broker b's limits in broker_loads' order: capacity x threshold (the planner's default),
    unknown capacity (0) as no limit."""
    inf = float("inf")
    cap = cluster.brokers[b].capacity
    return [cap.disk_bytes * threshold or inf, cap.network_in_bytes_per_sec * threshold or inf,
            cap.network_out_bytes_per_sec * threshold or inf, inf if max_replicas is None else max_replicas]


def disk_splits_fit(cluster: ClusterModel, pools: PoolSet | None = None, threshold: float = 0.8) -> bool:
    """Whether the disk fits if replicas could be split: a linear program per pool (GLOP), each
    partition's RF replicas spread as fractions over its pool's live brokers, at most one per
    broker and the rack limit per rack, no broker's bytes above its limit. False proves that
    no plan exists (every plan is such a split); True proves nothing. For rebalances without
    reassignments in flight: every partition may move."""
    by_brokers: dict[tuple[int, ...], list[Partition]] = {}
    for p in cluster:
        by_brokers.setdefault(tuple(allowed_brokers(cluster, pools, p.topic)), []).append(p)
    for brokers, parts in by_brokers.items():
        lp = pywraplp.Solver.CreateSolver("GLOP")
        share = {(i, b): lp.NumVar(0, 1, f"x{i}_{b}") for i in range(len(parts)) for b in brokers}
        for i, p in enumerate(parts):
            rf = len(p.replicas)
            lp.Add(sum(share[i, b] for b in brokers) == rf)
            limit = rack_limit(cluster, list(brokers), rf)
            for rack in {rack_key(cluster, b) for b in brokers}:
                lp.Add(sum(share[i, b] for b in brokers if rack_key(cluster, b) == rack) <= limit)
        for b in brokers:
            disk = broker_limits(cluster, b, None, threshold)[0]
            if disk != float("inf"):
                lp.Add(sum(p.size_bytes / 2**30 * share[i, b] for i, p in enumerate(parts)) <= disk / 2**30)
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return False
    return True
