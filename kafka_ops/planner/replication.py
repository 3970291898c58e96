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
from kafka_ops.planner.state import WorkingState

_BUDGET = 200_000  # options tried before the search gives up
Option = tuple[int, int]  # the new replica's broker, the leader after it is added


def change_replication_factor(run: Run, parts: list[int], rf: int) -> None:
    """Give every listed partition ``rf`` replicas: drop followers first (which frees room),
    then add the new ones where every limit holds. Replicas on dead brokers go first, the
    leader's included, and the partition grows back to ``rf`` on live ones: a reassignment
    completes only once every target replica is in sync, and the mode's rack repair may change
    any listed partition. Raises ValidationError, changing nothing that matters (the run is
    abandoned), when no placement is found."""
    st = run.state
    for p in parts:
        _drop_dead(st, p)
        while len(st.replicas[p]) > rf:
            _drop_replica(run, p)
    # One step per new replica, a partition's steps in a row: as the greedy added them.
    steps = [p for p in parts for _ in range(rf - len(st.replicas[p]))]
    if not steps:
        return
    try:
        chosen = _Search(run, rf).place(steps)
    except ValidationError:
        for p in dict.fromkeys(steps):  # alone, on the loads as they were: can p grow at all?
            alone = _Search(run, rf)
            try:
                first_fit([p] * (rf - len(st.replicas[p])), alone.options, alone.apply, _BUDGET)
            except Exhausted:
                raise ValidationError(f"set-rf: no broker can take a new replica of {st.tps[p]}: "
                                      f"{alone.why(p)}") from None
            except OutOfBudget:
                pass
        raise
    if not run.room_for_move(sum(st.size[p] for p in steps), len(steps)):
        raise ValidationError(f"set-rf: the move caps leave no room for the {len(steps)} new replicas")
    leader = {p: lead for p, (_, lead) in zip(steps, chosen, strict=True)}  # each one's last
    if not run.room_for_leader_change(sum(1 for p, lead in leader.items() if lead != st.replicas[p][0])):
        raise ValidationError("set-rf: the cap on leader changes leaves no room for the leaders "
                              "the new replicas need (their old leaders have no network-out room)")
    for p, (b, _) in zip(steps, chosen, strict=True):
        st.add_replica(p, b)
    for p, lead in leader.items():
        if lead != st.replicas[p][0]:
            st.make_leader(p, lead)


def _drop_dead(st: WorkingState, p: int) -> None:
    """Drop p's replicas on dead brokers, leadership first passing to its first live replica
    (p has one: offline partitions are never listed)."""
    reps = st.replicas[p]
    if all(st.eligible[b] for b in reps):
        return
    if not st.eligible[reps[0]]:
        st.make_leader(p, next(b for b in reps if st.eligible[b]))
    for b in [b for b in reps if not st.eligible[b]]:
        st.drop_replica(p, b)


def _drop_replica(run: Run, p: int) -> None:
    """Drop a follower on a dead or excluded broker, else on the most crowded rack, then on
    the broker with most replicas."""
    st = run.state
    per_rack = Counter(st.rack[b] for b in st.replicas[p])
    victim = max(st.replicas[p][1:],
                 key=lambda b: (not st.eligible[b], per_rack[st.rack[b]], st.count[b], b))
    st.drop_replica(p, victim)


class _Search:
    """Depth first over the new replicas, on private copies of the loads and replica lists."""

    def __init__(self, run: Run, rf: int) -> None:
        st = self.st = run.state
        self.run, self.rf = run, rf
        capacity = CapacityGoal()
        self.limits = [capacity.limits(run, b) for b in range(st.nb)]
        self.disk, self.net_in = list(st.disk), list(st.net_in)
        self.net_out, self.count = list(st.net_out), list(st.count)
        self.replicas: dict[int, list[int]] = {}
        self.undo: list[list[int]] = []  # the replica lists the steps changed, last first

    def _replicas(self, p: int) -> list[int]:
        if p not in self.replicas:
            self.replicas[p] = list(self.st.replicas[p])
        return self.replicas[p]

    def _leader_out(self, p: int, rf: int) -> float:
        return self.st.bytes_out[p] + self.st.bytes_in[p] * (rf - 1)

    def _fits(self, p: int, b: int) -> bool:
        st, lim = self.st, self.limits[b]
        return (self.disk[b] + st.size[p] <= lim[0] and self.net_in[b] + st.bytes_in[p] <= lim[1]
                and self.count[b] + 1 <= lim[3])

    def options(self, p: int) -> Iterator[Option]:
        """p's next new replica, least loaded broker first, each with its leader: the current
        one, or another live replica that may lead when the current one has no network-out
        room for one more copy."""
        st, run = self.st, self.run
        reps = self._replicas(p)
        out = self._leader_out(p, len(reps) + 1)
        lead = reps[0]
        for b in self._brokers(p, reps):
            if st.bytes_in[p] <= 0 or self.net_out[lead] + st.bytes_in[p] <= self.limits[lead][2]:
                yield b, lead
            for other in (*reps[1:], b):
                if (st.eligible[other] and not st.demoted[other] and run.dst_ok[other]
                        and self.net_out[other] + out <= self.limits[other][2]):
                    yield b, other

    def _brokers(self, p: int, reps: list[int]) -> Iterator[int]:
        """Brokers with room for a new replica of p within the rack limit (a rack the old
        replicas crowd already is the rack goal's to repair), least loaded first. Racks within
        the limit of the factor this step makes come first: RF 2 to 4 over three racks then
        puts the third replica in the empty rack, not beside one of the first two (a, c, b, a,
        not a, c, a, c). The least loaded is tried before the others are sorted."""
        st = self.st
        limit, step = rack_limit(self.run, p, self.rf), rack_limit(self.run, p, len(reps) + 1)
        per_rack = Counter(st.rack[b] for b in reps)
        room = [b for b in st.groups[st.group_of(p)].brokers
                if st.eligible[b] and b not in reps and per_rack[st.rack[b]] < limit]

        def key(b: int) -> tuple[bool, float, float, int]:
            return per_rack[st.rack[b]] >= step, self.count[b], self.disk[b], b

        first = min(room, key=key, default=None)
        if first is not None and self._fits(p, first):
            yield first
        yield from sorted((b for b in room if b != first and self._fits(p, b)), key=key)

    def apply(self, p: int, option: Option, sign: int) -> None:
        st = self.st
        b, lead = option
        reps = self._replicas(p)
        self.disk[b] += sign * st.size[p]
        self.net_in[b] += sign * st.bytes_in[p]
        self.count[b] += sign
        if sign > 0:
            self.undo.append(list(reps))
            self.net_out[reps[0]] -= self._leader_out(p, len(reps))
            reps.append(b)
            if lead != reps[0]:
                slot = reps.index(lead)
                reps[0], reps[slot] = lead, reps[0]
            self.net_out[lead] += self._leader_out(p, len(reps))
        else:
            self.net_out[reps[0]] -= self._leader_out(p, len(reps))
            reps[:] = self.undo.pop()
            self.net_out[reps[0]] += self._leader_out(p, len(reps))

    def place(self, parts: list[int]) -> list[Option]:
        """The first complete placement, in the greedy order; raises when there is none."""
        st = self.st
        try:
            return first_fit(parts, self.options, self.apply, _BUDGET)
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
