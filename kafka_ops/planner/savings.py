"""Bytes the plan need not copy: after the goals, a copied replica goes home for a smaller one.

The goals pick each trade by how much of a gap it closes, the bytes it copies only weighed
against that; a broker that shed a large replica early often ends with room to have kept it
and shed a smaller one instead (the count goal moves before the disk goal knows which brokers
will need bytes). This pass looks, for each replica the plan copies (largest first), at the
replicas of the broker it left that could go in its place: the copied replica returns home,
so its copy is saved, and the other takes its place on the destination. Both moves form one
count-neutral trade that every goal vetoes as any other, so no goal's bounds break.
"""

from __future__ import annotations

import numpy as np

from kafka_ops.planner.balance import BalanceGoal
from kafka_ops.planner.context import Move, Run
from kafka_ops.planner.topic import TopicGoal
from kafka_ops.planner.trades import BrokerReplicas, can_trade, disk_slack, vetoing

_WINDOW = 32  # replicas of the home broker looked at per copied replica, from the smallest allowed
_SCAN = 4 * _WINDOW  # ... found among this many, before the role and rack filters
_TRY = 8  # of those, the best savings put to the vetoes
_SHARE = 0.6  # of the bytes copied: the largest copied replicas holding it are looked at
_SIZES = BalanceGoal("disk", "disk", 0.0)  # BrokerReplicas sorts by its load: replica size


def save_bytes(run: Run) -> int:
    """Swap copied replicas back home for smaller ones where every goal allows; bytes saved."""
    st = run.state
    if run.leadership_only or not st.moves:
        return 0
    before = st.moved_bytes
    sizes = vetoing(run, "disk") or _SIZES
    spread = next((g for g in run.vetoes if isinstance(g, TopicGoal) and not g.leaders), None)
    topics = _TopicRoom(run, spread) if spread is not None else None
    per_group: dict[int, BrokerReplicas] = {}
    for size, p, dst, homes in _copied(run):
        g = st.group_of(p)
        if g not in per_group:
            per_group[g] = BrokerReplicas(sizes, run, g)
        reps = per_group[g]
        for home in homes:
            if dst not in st.replicas[p] or home in st.replicas[p]:
                break  # an earlier swap took this replica or its home
            q = _stand_in(run, reps, topics, p, size, dst, home)
            if q is not None:
                trade = ((p, dst, home), (q, home, dst))
                for m in trade:
                    st.move(*m)
                reps.moved(trade)
                if topics is not None:
                    topics.moved(trade)
                break
    return before - st.moved_bytes


def _copied(run: Run) -> list[tuple[int, int, int, list[int]]]:
    """(size, partition, broker it was copied to, live brokers it left) of every replica the
    plan copies, largest first."""
    st = run.state
    width = max(st.original_matrix().shape[1], max(map(len, st.replicas), default=1))
    now, was = st.replica_matrix(width), _padded(st.original_matrix(), width)
    out: list[tuple[int, int, int, list[int]]] = []
    for p in np.nonzero((now != was).any(axis=1))[0].tolist():
        if not run.partition_movable[p]:
            continue
        cur, orig = st.replicas[p], st.original[p]
        homes = [a for a in orig if a not in cur and st.eligible[a] and run.dst_ok[a]]
        if homes:
            out.extend((st.size[p], p, b, homes) for b in cur if b not in orig)
    out.sort(key=lambda c: (-c[0], c[1], c[2]))
    # Sizes are heavy-tailed: the largest replicas holding _SHARE of the bytes are a small part
    # of the copies and offer most of the savings (xl seed 0: bytes 1.051 -> 1.030 x bound in
    # 1.5 s; all the copies: 1.028 in twice the time; xxl seed 0: 7 s).
    total, running = sum(c[0] for c in out), 0
    for i, c in enumerate(out):
        running += c[0]
        if running > _SHARE * total:
            return out[:i + 1]
    return out


class _TopicRoom:
    """The replica-spread goal's bounds as arrays: which stand-ins it lets trade places with p.

    A stand-in of another topic shifts one replica of each topic between the two brokers; the
    goal refuses most of them, and asking it one by one cost more than the rest of the pass.
    The goal still vetoes every trade: this only skips the ones it would refuse.
    """

    def __init__(self, run: Run, goal: TopicGoal) -> None:
        st = run.state
        _, _, self.lo, self.hi, _ = goal.arrays(run)
        self.count = np.zeros((len(st.topics), st.nb), dtype=np.int64)
        keys = np.fromiter(st.topic_count.keys(), dtype=np.int64, count=len(st.topic_count))
        vals = np.fromiter(st.topic_count.values(), dtype=np.int64, count=len(st.topic_count))
        self.count.reshape(-1)[keys] = vals
        self.topic = np.array(st.topic, dtype=np.int64)

    def allows(self, p: int, qs: np.ndarray, dst: int, home: int) -> np.ndarray:
        """Mask of the stand-ins qs (on home) whose trade with p's replica (on dst) keeps both
        topics' counts on both brokers within the goal's bounds."""
        c, lo, hi = self.count, self.lo, self.hi
        tp, tq = self.topic[p], self.topic[qs]
        p_ok = c[tp, home] + 1 <= hi[tp] and c[tp, dst] - 1 >= lo[tp]
        q_ok = (c[tq, dst] + 1 <= hi[tq]) & (c[tq, home] - 1 >= lo[tq])
        return (tq == tp) | (q_ok & p_ok)

    def moved(self, moves: tuple[Move, ...]) -> None:
        for p, src, dst in moves:
            t = self.topic[p]
            self.count[t, src] -= 1
            self.count[t, dst] += 1


def _padded(matrix: np.ndarray, width: int) -> np.ndarray:
    if matrix.shape[1] >= width:
        return matrix
    pad = np.full((matrix.shape[0], width - matrix.shape[1]), -1, dtype=matrix.dtype)
    return np.concatenate([matrix, pad], axis=1)


def _stand_in(run: Run, reps: BrokerReplicas, topics: _TopicRoom | None, p: int, size: int,
              dst: int, home: int) -> int | None:
    """The replica on ``home`` that saves the most bytes going to dst in place of p's, if any
    the vetoes accept. It may be smaller by at most what the disk bounds let home gain."""
    st = run.state
    racks = reps.racks
    if racks is not None and (back := racks.may_cross(np.array([p]), dst, home)) is not None \
            and not back[0]:
        return None
    slack = disk_slack(run, dst, home)  # range of size(p) - size(stand-in)
    lo, hi = (-np.inf, np.inf) if slack is None else slack
    if hi <= 0:
        return None  # home may not gain a byte: only a stand-in as large or larger would fit
    pd, _, sd, ld, od = reps.arrays(home)
    start = int(np.searchsorted(sd, size - hi - 1))
    end = min(int(np.searchsorted(sd, size - lo + 1, side="right")), start + _SCAN)
    pd, sd, ld, od = pd[start:end], sd[start:end], ld[start:end], od[start:end]
    # The same role keeps both brokers' leader counts (the leader goal's bounds are tight).
    ok = ld == (st.replicas[p][0] == dst)
    if racks is not None and (cross := racks.may_cross(pd, home, dst)) is not None:
        ok &= cross
    if topics is not None:
        ok &= topics.allows(p, pd, dst, home)
    qs, qsize, qorig = pd[ok][:_WINDOW], sd[ok][:_WINDOW], od[ok][:_WINDOW]
    # What the stand-in copies: its size if it leaves an original broker for a new one,
    # nothing if it was copied to home (re-targeted), minus its size if dst is its home too.
    copies = (~(reps.original[qs] == dst).any(axis=1)).astype(np.int64) - (~qorig).astype(np.int64)
    saved = size - qsize * copies
    for i in np.argsort(-saved, kind="stable")[:_TRY].tolist():
        if saved[i] <= 0:
            break
        q = int(qs[i])
        if can_trade(run, (p, dst, home), (q, home, dst)):
            return q
    return None
