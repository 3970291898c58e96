"""Replication factor changes (set-rf): new followers placed within every limit, or a reason.

A new follower is a copy on a broker that gains the partition's disk, network-in and one
replica, and its leader sends one more copy of the partition's bytes in (network out). Placed
one at a time on the least loaded broker, a topic of many partitions can fill the one broker a
later partition needed, or push a broker past a limit no veto checks (a new replica is not a
move): on 3,000 tiny tight starts, set-rf left a broker over a limit in 182 and refused 15
whose new replicas fit. So the placement is a depth-first search (backtrack.py) whose first
path is that greedy rule: every partition's options are tried least loaded brokers first, the
leader kept first. When it finds nothing, each partition is checked alone against the loads as
they were, so a partition no broker can take is named, with what the brokers lack.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import combinations

from kafka_ops.errors import ValidationError
from kafka_ops.planner.backtrack import Exhausted, OutOfBudget, first_fit
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import CapacityGoal, rack_limit

_BUDGET = 200_000  # options tried before the search gives up
Option = tuple[tuple[int, ...], int]  # new brokers, the leader after the change


def change_replication_factor(run: Run, parts: list[int], rf: int) -> None:
    """Give every listed partition ``rf`` replicas: drop followers first (which frees room),
    then add the new ones where every limit holds. Raises ValidationError, changing nothing
    that matters (the run is abandoned), when no placement is found."""
    st = run.state
    for p in parts:
        while len(st.replicas[p]) > rf:
            _drop_replica(run, p)
    grow = [p for p in parts if len(st.replicas[p]) < rf]
    if not grow:
        return
    try:
        chosen = _Search(run, rf).place(grow)
    except ValidationError:
        alone = _Search(run, rf)  # the loads as they were: is there a partition no broker takes?
        for p in grow:
            if next(alone.options(p), None) is None:
                raise ValidationError(f"set-rf: no broker can take a new replica of {st.tps[p]}: "
                                      f"{alone.why(p)}") from None
        raise
    adds = sum(len(new) for new, _ in chosen)
    if not run.room_for_move(sum(st.size[p] * len(new) for p, (new, _) in zip(grow, chosen, strict=True)),
                             adds):
        raise ValidationError(f"set-rf: the move caps leave no room for the {adds} new replicas")
    if not run.room_for_leader_change(sum(1 for p, (_, lead) in zip(grow, chosen, strict=True)
                                          if lead != st.replicas[p][0])):
        raise ValidationError("set-rf: the cap on leader changes leaves no room for the leaders "
                              "the new replicas need (their old leaders have no network-out room)")
    for p, (new, lead) in zip(grow, chosen, strict=True):
        for b in new:
            st.add_replica(p, b)
        if lead != st.replicas[p][0]:
            st.make_leader(p, lead)


def _drop_replica(run: Run, p: int) -> None:
    """Drop a follower on a dead or excluded broker, else on the most crowded rack, then on
    the broker with most replicas."""
    st = run.state
    per_rack = Counter(st.rack[b] for b in st.replicas[p])
    victim = max(st.replicas[p][1:],
                 key=lambda b: (not st.eligible[b], per_rack[st.rack[b]], st.count[b], b))
    st.drop_replica(p, victim)


class _Search:
    """Depth first over the growing partitions, on private copies of the brokers' loads."""

    def __init__(self, run: Run, rf: int) -> None:
        st = self.st = run.state
        self.run, self.rf = run, rf
        capacity = CapacityGoal()
        self.limits = [capacity.limits(run, b) for b in range(st.nb)]
        self.disk, self.net_in = list(st.disk), list(st.net_in)
        self.net_out, self.count = list(st.net_out), list(st.count)

    def _fits(self, p: int, b: int) -> bool:
        st, lim = self.st, self.limits[b]
        return (self.disk[b] + st.size[p] <= lim[0] and self.net_in[b] + st.bytes_in[p] <= lim[1]
                and self.count[b] + 1 <= lim[3])

    def _out(self, p: int, b: int, extra: float) -> bool:
        """Whether b can lead p with ``extra`` more bytes out than it sends now (all of p's
        traffic when it does not lead p yet)."""
        return extra <= 0 or self.net_out[b] + extra <= self.limits[b][2]

    def options(self, p: int) -> Iterator[Option]:
        """p's new broker sets, least loaded first, each with its leader: the current one, or
        another live replica that may lead when the current one has no network-out room."""
        st, run = self.st, self.run
        reps = st.replicas[p]
        grown = st.bytes_in[p] * (self.rf - len(reps))
        out = st.leader_out(p) + grown
        for new in self._sets(p):
            if self._out(p, reps[0], grown):
                yield new, reps[0]
            for b in (*reps[1:], *new):
                if st.eligible[b] and not st.demoted[b] and run.dst_ok[b] and self._out(p, b, out):
                    yield new, b

    def _sets(self, p: int) -> Iterator[tuple[int, ...]]:
        """Broker sets with room for p's new replicas, least loaded first, within the rack
        limit (a rack the old replicas crowd already is the rack goal's to repair). One new
        replica (the common case) tries the least loaded broker before sorting the others."""
        st = self.st
        reps = st.replicas[p]
        k, limit = self.rf - len(reps), rack_limit(self.run, p, self.rf)
        others = [b for b in st.groups[st.group_of(p)].brokers if st.eligible[b] and b not in reps]
        per_rack = Counter(st.rack[b] for b in reps)

        def key(b: int) -> tuple[float, float, int]:
            return self.count[b], self.disk[b], b

        if k == 1:
            room = [b for b in others if per_rack[st.rack[b]] < limit]
            first = min(room, key=key, default=None)
            if first is not None and self._fits(p, first):
                yield (first,)
            yield from ((b,) for b in sorted((b for b in room if b != first and self._fits(p, b)), key=key))
            return
        for new in combinations(sorted((b for b in others if self._fits(p, b)), key=key), k):
            racks = per_rack + Counter(st.rack[b] for b in new)
            if all(racks[st.rack[b]] <= limit for b in new):
                yield new

    def _apply(self, p: int, option: Option, sign: int) -> None:
        st = self.st
        new, lead = option
        for b in new:
            self.disk[b] += sign * st.size[p]
            self.net_in[b] += sign * st.bytes_in[p]
            self.count[b] += sign
        old = st.replicas[p][0]
        before, after = st.leader_out(p), st.leader_out(p) + st.bytes_in[p] * len(new)
        self.net_out[old] -= sign * before
        self.net_out[lead] += sign * after

    def place(self, parts: list[int]) -> list[Option]:
        """The first complete placement, in the greedy order; raises when there is none."""
        st = self.st
        try:
            return first_fit(parts, self.options, self._apply, _BUDGET)
        except Exhausted as e:
            raise ValidationError(
                f"set-rf: no placement of the new replicas fits every limit (every one tried); "
                f"most often {st.tps[e.partition]} found no broker with room") from None
        except OutOfBudget as e:
            raise ValidationError(
                f"set-rf: no placement of the new replicas found within {_BUDGET:,} tries, so "
                f"one may still exist; {st.tps[e.partition]} is where it stalled (room on more "
                f"brokers or higher limits gives it a way out)") from None

    def why(self, p: int) -> str:
        """What the live brokers of p's pool lack for p's new replicas, as counts."""
        st, run = self.st, self.run
        group = st.groups[st.group_of(p)]
        live = [b for b in group.brokers if st.eligible[b] and b not in st.replicas[p]]
        k, limit = self.rf - len(st.replicas[p]), rack_limit(run, p, self.rf)
        reasons: Counter[str] = Counter()
        for b in live:
            lim = self.limits[b]
            if self.disk[b] + st.size[p] > lim[0]:
                reasons["disk room"] += 1
            elif self.net_in[b] + st.bytes_in[p] > lim[1]:
                reasons["network-in room"] += 1
            elif self.count[b] + 1 > lim[3]:
                reasons["room under the replica limit"] += 1
        room = [b for b in live if self._fits(p, b)]
        if len(room) < k:
            detail = "".join(f", {n} lack {what}" for what, n in reasons.most_common())
            return (f"it needs {k} more and {len(room)} of the {len(live)} other live brokers of "
                    f"{group.name!r} have room{detail}")
        per_rack = Counter(st.rack[b] for b in st.replicas[p])
        if not any(all((per_rack + Counter(st.rack[b] for b in new))[st.rack[b]] <= limit for b in new)
                   for new in combinations(room, k)):
            return (f"the {len(room)} brokers with room are in racks that would then hold more "
                    f"than {limit} of its replicas")
        return (f"its leader has no network-out room for {k} more copies of its bytes in, and "
                f"no other replica that may lead has room for all of its traffic")
