"""Capacity solved exactly, on the small starts where bin packing binds.

The capacity goal relieves a broker one replica at a time, largest first, onto the roomiest
broker: the greedy rule of bin packing. When a few large partitions fill brokers of a few
GiB, that can paint it into a corner another order avoids (a 2 GiB replica sent to one of the
three brokers with room for a 3 GiB one, and then a partition of two 3 GiB replicas has only
one broker left in another rack), and the planner refused about one in 200 of the tiny tight
clusters that have a plan. Then every assignment is tried, depth first, the partition with
the fewest broker sets left that fit next, each partition's sets in the order that keeps
most replicas in place: the first that completes is taken. Where a broker has a network-out
limit, each set is tried with each of its members leading. A budget of sets tried keeps this
to small starts; past it the greedy error stands, saying that a plan may still exist. When
the search ends without one, no plan exists, and the error names the partition that most
often found no room. The repair modes (remove-brokers, fix-offline) search only the replicas
that must leave, and pool migration the replicas outside their pool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import combinations
from math import comb

from kafka_ops.errors import ValidationError
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import CapacityGoal, rack_limit

_MOST_PARTITIONS = 1000  # beyond, even listing the candidate sets costs more than it can save
Loads = list[list[float]]  # per broker: disk, network in, network out, replica count


class _Budget(Exception):
    """The search tried more broker sets than its budget allows."""


def pack_exactly(run: Run, capacity: CapacityGoal, budget: int = 1_000_000,
                 leave: Callable[[int, int], bool] | None = None) -> bool | None:
    """Reset the state and place every movable partition within all limits, or raise.

    True when a placement was found (the state holds it); None when the start is too large
    to try every assignment or the budget ran out first, False when the cap on leader changes
    did: then the state is reset and the caller's greedy error stands. Raises
    ValidationError when every assignment was tried and none fits.

    With ``leave`` (the repair modes: move only what must leave) only the replicas of p on a
    broker b with ``leave(p, b)`` move (dead or excluded brokers, or outside the pool), every
    other replica stays, and a search that finds nothing returns False: the rules there only
    veto, and a start that breaks one already (a rack over its limit) may leave a plan the
    strict search does not see.
    """
    st = run.state
    st.reset()
    limits = [capacity.limits(run, b) for b in range(st.nb)]
    loads: Loads = [[0.0, 0.0, 0.0, 0.0] for _ in range(st.nb)]
    parts = []
    for p in range(st.np):
        if run.partition_movable[p] and (leave is None or any(leave(p, b) for b in st.replicas[p])):
            parts.append(p)
            continue
        for i, b in enumerate(st.replicas[p]):
            loads[b] = [v + n for v, n in zip(loads[b], replica_need(run, p, i == 0), strict=True)]
    if len(parts) > _MOST_PARTITIONS:
        return None
    parts.sort(key=lambda p: (-st.size[p], -st.bytes_in[p], p))
    kept = [[b for b in st.replicas[p] if not leave(p, b)] if leave is not None else [] for p in parts]
    for p, keep in zip(parts, kept, strict=True):
        for b in keep:  # staying: its load is there already (a leadership it gains: _needs)
            lead = st.replicas[p][0] == b
            loads[b] = [v + n for v, n in zip(loads[b], replica_need(run, p, lead), strict=True)]
    usable = [[b for b in usable_brokers(run, p, limits) if b not in keep] for p, keep in zip(parts, kept, strict=True)]
    sets = sum(comb(len(ok), len(st.replicas[p]) - len(keep))
               for p, ok, keep in zip(parts, usable, kept, strict=True))
    if sets > budget:
        return None
    leaders = any(lim[2] != float("inf") for lim in limits)  # network out: who leads matters
    choices = [[(brokers, _needs(run, p, brokers, keep)) for brokers in _candidates(run, p, ok, keep, leaders)]
               for p, ok, keep in zip(parts, usable, kept, strict=True)]
    search = _Search(loads, limits, choices, budget)
    try:
        found = search.place()
    except _Budget:
        return None
    if not found:
        if leave is not None:
            return False
        stuck = search.stuck.most_common(1)[0][0]
        raise ValidationError(_why(run, parts[stuck], len(parts)))
    for i, p in enumerate(parts):
        old = st.replicas[p]
        brokers = search.chosen[i]
        gone = [b for b in old if b not in brokers]
        came = [b for b in brokers if b not in old]
        for src, dst in zip(gone, came, strict=True):
            st.move(p, src, dst)
        if st.replicas[p][0] != brokers[0]:
            if not run.room_for_leader_change():
                st.reset()
                return False
            st.make_leader(p, brokers[0])
    return True


Choice = tuple[tuple[int, ...], list[tuple[float, float, float, float]]]  # brokers, their needs


class _Search:
    """Depth first, the partition with the fewest broker sets that still fit next (fail first:
    a partition left without any ends the branch at once), within a budget of sets tried."""

    def __init__(self, loads: Loads, limits: Sequence[tuple[float, ...]],
                 choices: list[list[Choice]], budget: int) -> None:
        self.loads = loads
        self.limits = limits
        self.choices = choices
        self.left = budget
        self.chosen: dict[int, tuple[int, ...]] = {}
        self.stuck: Counter[int] = Counter()  # partition -> branches it ended without room

    def _fits(self, choice: Choice) -> bool:
        self.left -= 1
        if self.left < 0:
            raise _Budget
        # A replica that stays (no count to add) adds nothing where its broker is over a
        # limit already; one that arrives must fit, even at no size.
        return all(v + n <= lim or (n <= 0 and need[3] == 0) for b, need in zip(*choice, strict=True)
                   for v, n, lim in zip(self.loads[b], need, self.limits[b], strict=True))

    def _add(self, choice: Choice, sign: int) -> None:
        for b, need in zip(*choice, strict=True):
            load = self.loads[b]
            for k, n in enumerate(need):
                load[k] += sign * n

    def place(self) -> bool:
        best, options = -1, list[Choice]()
        for i, choices in enumerate(self.choices):
            if i in self.chosen:
                continue
            fit = []
            for choice in choices:
                if self._fits(choice):
                    fit.append(choice)
                    if best >= 0 and len(fit) >= len(options):
                        break  # not the most constrained: its other sets do not matter
            if not fit:
                self.stuck[i] += 1
                return False
            if best < 0 or len(fit) < len(options):
                best, options = i, fit
        if best < 0:
            return True
        for choice in options:
            self._add(choice, 1)
            self.chosen[best] = choice[0]
            if self.place():
                return True
            del self.chosen[best]
            self._add(choice, -1)
        return False


def usable_brokers(run: Run, p: int, limits: Sequence[tuple[float, ...]]) -> list[int]:
    """The brokers of p's pool that may hold one of its replicas, each on its own: where it
    is, then the roomiest."""
    st = run.state
    old = st.replicas[p]
    need = replica_need(run, p, False)
    ok = [b for b in st.groups[st.group_of(p)].brokers
          if st.eligible[b] and (run.dst_ok[b] or b in old)
          and all(n <= lim for n, lim in zip(need, limits[b], strict=True))]
    return sorted(ok, key=lambda b: (b not in old, -limits[b][0], b))


def _candidates(run: Run, p: int, ok: Sequence[int], keep: Sequence[int],
                leaders: bool) -> list[tuple[int, ...]]:
    """The sets of ``keep`` and ``ok`` brokers within the rack limit that may hold p's
    replicas, as the replica list they make (kept replicas in their places, arrivals in the
    vacated ones: the leader is whoever ends up first), most replicas kept first. With
    ``leaders``, each set once per broker of it that may lead (first in the list), the one it
    makes first."""
    st = run.state
    old = st.replicas[p]
    cap = rack_limit(run, p)
    sets = []
    for more in combinations(ok, len(old) - len(keep)):
        brokers = (*keep, *more)
        if max(Counter(st.rack[b] for b in brokers).values()) > cap:
            continue
        came = iter(b for b in brokers if b not in old)
        made = tuple(b if b in brokers else next(came) for b in old)
        sets.append(made)
        if leaders:  # a leadership goes where the mode lets it (add-brokers: new brokers only)
            sets.extend((b, *(x for x in made if x != b)) for b in made[1:]
                        if st.eligible[b] and not st.demoted[b] and (run.dst_ok[b] or b == old[0]))
    sets.sort(key=lambda s: sum(b not in old for b in s))  # stable: roomiest first within
    return sets


def _needs(run: Run, p: int, brokers: Sequence[int], keep: Sequence[int]
           ) -> list[tuple[float, float, float, float]]:
    """What each broker of the replica list ``brokers`` takes on: all of a replica's load
    where it arrives, only a leadership where it stays (its load counted already)."""
    st = run.state
    out = []
    for k, b in enumerate(brokers):
        need = replica_need(run, p, k == 0)
        if b in keep:
            need = (0.0, 0.0, need[2] if st.replicas[p][0] != b else 0.0, 0.0)
        out.append(need)
    return out


def replica_need(run: Run, p: int, leads: bool) -> tuple[float, float, float, float]:
    st = run.state
    return (st.size[p], st.bytes_in[p], st.leader_out(p) if leads else 0.0, 1.0)


def _why(run: Run, p: int, parts: int) -> str:
    st = run.state
    gib = 1024**3
    rf = len(st.replicas[p])
    need = "broker" if rf == 1 else f"{rf} brokers"
    return (f"capacity: no assignment of the {parts} movable partitions fits the live brokers' "
            f"limits (disk, network in and out, replicas per broker) within rack_awareness and the pools "
            f"(every one tried); most often {st.tps[p]} ({st.size[p] / gib:.1f} GiB, "
            f"{st.bytes_in[p]:.0f} B/s in) found no {need} with room "
            f"(limits are capacity x capacity_threshold); add brokers or raise the limits")
