"""Topic leader dispersion: one leadership of a topic off a broker (or onto one) along a path
of the topic's own partitions, and the broker leader counts kept by leaderships of other topics
handed back along the path's two ends.

A topic's leaders alone are a bipartite b-matching (partitions to the brokers of their
replicas), so a broker over the topic's bound sheds one along an alternating path: it passes a
partition to a follower at the bound, which passes another of the topic's partitions on, until
a follower with room takes one. Only the path's ends change their count of the topic, and only
they change their leader counts: the far end hands the near end a partition of another topic
(directly or through one third broker) where the leader count goal leaves no room. The general
augmenting path search (TopicGoal._augment) finds these too, but it expands the other topics'
nodes breadth first and spends its node cap on them before the topic's own path is long
enough: xl seed 0 left 191 topics over one apart, 113 of which leadership alone could even;
with these paths first, 91 and 13 (crowded-xl seed 6: 261 and 166 -> 194 and 99, where the
leader loads sit at their bounds and refuse most paths).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Protocol

from kafka_ops.planner.context import Move, Run

TOP = ("topic_leader_top", 0)  # run.memo key: the leader loads' highest at the goal's start
# run.memo key: per (topic, pull, limits), the topic's version and the brokers a search found
# no path end from (see topic_path); cleared when the goal starts over
DEAD_ENDS = ("topic_leader_dead_ends", 0)
_ENDS = 8  # path ends tried per search
_HANDS = 8  # partitions weighed per broker pair for the hand back
_THIRDS = 8  # third brokers weighed for a hand back through one
# Leadership change sets weighed per run: where leader loads sit at their bounds nearly all are
# refused (crowded-xl seed 6 weighed 1.1 million uncapped, 17 s).
_BUDGET = 60_000
_BUDGET_KEY = ("topic_leader_path_changes", 0)


class _Goal(Protocol):
    def bounds(self, run: Run, t: int) -> tuple[int, int]: ...

    def _apply_changes(self, run: Run, changes: list[Move],
                       trades: dict[tuple[int, int], list[int]]) -> bool: ...


def topic_path(goal: _Goal, run: Run, t: int, s: int, limits: tuple[int, int],
               on: Mapping[int, list[int]], trades: dict[tuple[int, int], list[int]],
               pull: bool = False) -> bool:
    """One leadership of topic t off s (``pull``: onto s) along t's partitions, within
    ``limits`` for t; True if applied."""
    st = run.state
    nb, counts, reps = st.nb, st.topic_leaders, st.replicas
    lo, hi = limits
    if pull and not (run.dst_ok[s] and st.eligible[s]) or run.memo.get(_BUDGET_KEY, _BUDGET) <= 0:
        return False
    dead = run.memo.setdefault(DEAD_ENDS, {})
    key, version = (t, pull, lo, hi), st.topic_version[t]
    known = dead.get(key)
    if known is not None and known[0] == version and s in known[1]:
        return False  # s was inside a search of t that found no end, and t has not changed
    parent: dict[int, Move | None] = {s: None}  # broker -> the change that reached it
    queue: deque[int] = deque([s])
    expanded = []
    ends = 0
    while queue and ends < _ENDS:
        y = queue.popleft()
        expanded.append(y)
        for q in on.get(t * nb + y, ()):
            rq = reps[q]
            if pull:  # y follows q: its leader z hands it over
                if rq[0] == y:
                    continue
                nxt: list[tuple[int, Move]] = [(rq[0], (q, rq[0], y))]
            elif rq[0] != y:
                continue
            else:  # y leads q: a follower z takes it
                nxt = [(z, (q, y, z)) for z in rq[1:] if run.dst_ok[z] and st.eligible[z]]
            for z, change in nxt:
                if z in parent:
                    continue
                parent[z] = change
                n = counts.get(t * nb + z, 0)
                if not (n - 1 >= lo if pull else n + 1 <= hi):
                    if not pull or (run.dst_ok[z] and st.eligible[z]):  # pulling, z takes one next
                        queue.append(z)
                    continue
                ends += 1
                if _close(goal, run, t, s, z, _chain(parent, z, pull), trades, pull):
                    return True
                if ends >= _ENDS or run.memo.get(_BUDGET_KEY, _BUDGET) <= 0:
                    return False
    n = counts.get(t * nb + s, 0)
    if not ends and not (n - 1 >= lo if pull else n + 1 <= hi):
        # No broker reachable from s can end a path, and every one reached was searched on:
        # a search from any of them reaches only these, so fails too until t changes. (s
        # itself, never weighed as an end here, would be weighed by theirs: hence "not an end".)
        if known is None or known[0] != version:
            dead[key] = (version, set(expanded))
        else:
            known[1].update(expanded)
    return False


def _chain(parent: Mapping[int, Move | None], end: int, pull: bool) -> list[Move]:
    """The changes from the path's start to ``end`` (each broker was reached by one)."""
    changes = []
    b = end
    while (change := parent[b]) is not None:
        changes.append(change)
        b = change[2] if pull else change[1]
    return changes


def _close(goal: _Goal, run: Run, t: int, s: int, e: int, chain: list[Move],
           trades: dict[tuple[int, int], list[int]], pull: bool) -> bool:
    """Apply the chain, with a hand back of another topic where the leader counts need it:
    pushing, e gained a leader and s lost one, so e hands s one; pulling, the reverse. Hand
    backs whose loads could not fit are not weighed."""
    st = run.state
    room = _room(run, chain, (s, e))
    if room is None:  # a broker inside the path over the loads' highest: no hand back helps
        return False
    giver, taker = (s, e) if pull else (e, s)
    if all(r[giver][0] <= 0 <= r[taker][1] for r in room.values()) and _apply(goal, run, chain, trades):
        return True  # where the leader count goal leaves room

    def fits(q: int, a: int, b: int) -> bool:
        """q passing a -> b: a's loads fall by q's and b's rise by it, each within the ends'
        room (a third broker's loads are left to the full check of the change set)."""
        for name, r in room.items():
            x = st.leader_out(q) if name == "network_out" else st.bytes_in[q]
            if (a in r and x < r[a][0]) or (b in r and x > r[b][1]):
                return False
        return True

    ok = _hand_ok(goal, run, t)
    for q in _hands(run, trades, giver, taker, ok, _HANDS):
        if fits(q, giver, taker) and _apply(goal, run, [*chain, (q, giver, taker)], trades):
            return True
    thirds = 0
    for x in range(st.nb):  # through a third broker: giver -> x -> taker
        if x in (giver, taker) or not trades.get((giver, x)) or not trades.get((x, taker)):
            continue
        thirds += 1
        onward = _hands(run, trades, x, taker, ok, 2)  # once: nothing changes until one applies
        for q in _hands(run, trades, giver, x, ok, 2) if onward else ():
            for r in onward:
                if (st.topic[q] != st.topic[r] and fits(q, giver, x) and fits(r, x, taker)
                        and _apply(goal, run, [*chain, (q, giver, x), (r, x, taker)], trades)):
                    return True
        if thirds >= _THIRDS:
            break
    return False


def _apply(goal: _Goal, run: Run, changes: list[Move], trades: dict[tuple[int, int], list[int]]) -> bool:
    """The change set, all or none, if every goal agrees; each try counts against _BUDGET."""
    run.memo[_BUDGET_KEY] = run.memo.get(_BUDGET_KEY, _BUDGET) - 1
    return goal._apply_changes(run, changes, trades)


def _room(run: Run, chain: list[Move], ends: tuple[int, int]
          ) -> dict[str, dict[int, tuple[float, float]]] | None:
    """Per leader load, the window of a hand back's load at the two ends: (least it must carry
    away, most it may bring) so that the broker stays at or under the loads' highest at the
    goal's start; None when a broker inside the path goes over it."""
    st = run.state
    top = run.memo[TOP]
    out: dict[str, dict[int, tuple[float, float]]] = {}
    for name in ("network_out", "leader_bytes_in"):
        load = st.load(name)
        delta: dict[int, float] = {}
        for p, old, new in chain:
            x = st.leader_out(p) if name == "network_out" else st.bytes_in[p]
            delta[old] = delta.get(old, 0.0) - x
            delta[new] = delta.get(new, 0.0) + x
        if any(d > 0 and load[b] + d > top[name] for b, d in delta.items() if b not in ends):
            return None
        slack = {b: run.relax_slack[name] if b == run.relaxed else 0.0 for b in ends}
        out[name] = {b: (load[b] + delta.get(b, 0.0) - top[name] - slack[b],
                         top[name] - load[b] - delta.get(b, 0.0) + slack[b]) for b in ends}
    return out


def _hand_ok(goal: _Goal, run: Run, t: int) -> Callable[[int, int, int], bool]:
    """Whether q's leadership may go old -> new as a hand back: another topic, kept within its
    bounds on both brokers."""
    st = run.state
    nb, counts = st.nb, st.topic_leaders

    def ok(q: int, old: int, new: int) -> bool:
        u = st.topic[q]
        if u == t:
            return False
        u_lo, u_hi = goal.bounds(run, u)
        return counts.get(u * nb + new, 0) + 1 <= u_hi and counts.get(u * nb + old, 0) - 1 >= u_lo

    return ok


def _hands(run: Run, trades: dict[tuple[int, int], list[int]], giver: int, taker: int,
           ok: Callable[[int, int, int], bool], limit: int) -> list[int]:
    """Up to ``limit`` partitions giver leads and taker follows that may pass giver -> taker
    (the trade index may hold stale entries: each is checked)."""
    st = run.state
    found = []
    for q in trades.get((giver, taker), ())[:_HANDS]:
        rq = st.replicas[q]
        if rq[0] == giver and taker in rq and run.partition_movable[q] and ok(q, giver, taker):
            found.append(q)
            if len(found) >= limit:
                break
    return found
