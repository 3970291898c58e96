"""What the rack rule does to replica counts: the counts it forces, the racks short of movers.

A partition may hold at most rack_limit() replicas per rack, so a rack with fewer brokers than
the others can be forced above the mean, and a crowded rack may have too few replicas that are
allowed to cross to another rack; the goal's bounds and its order of moves must know both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import rack_forced, rack_room
from kafka_ops.planner.state import WorkingState

# A rack above its share of replicas with fewer than this many times the excess in replicas
# that may leave it keeps those for moves to other racks (short_racks; the crowded-medium
# seeds 0-47 have 1.3-2.1x, the medium ones 15x and more) ...
SHORT = 4
# ... and a rack above its share of disk too, with fewer than this many times, whose replicas
# that may leave carry this many times its disk excess (it must shed that in them, and the
# scarcest choice decides whether small or giant ones do)
_SHORT_HEAVY = 1.7
_CARRY = 1.3


def short_racks(st: WorkingState, brokers: Sequence[int], on: Sequence[Sequence[int]]
                ) -> tuple[dict[int, list[int]], set[int], set[int]]:
    """The brokers of each rack; the racks short of replicas that may leave them: above
    their share of replicas, at or below their share of disk, with fewer than SHORT times
    the excess in replicas of partitions with fewer replicas than there are racks (only such
    a partition surely has a rack to go to); and the racks that keep those replicas for moves
    to other racks: the short ones, and those above their share of disk too with fewer than
    _SHORT_HEAVY times the excess.

    Such a rack (a replica of every RF-3 partition, beside few RF-2 giants) sheds its excess
    in what may cross. Moves inside it, to its new brokers, spent that first; the rest left
    in whatever still crossed, however large, and the disk goal copied most of it back:
    crowded-medium seed 43 sent 32 of the rack's 52 giants out (bytes 1.647 x the bound; with
    the rule 1.149, moves 1.053 -> 1.036).

    A rack above its share of disk sheds that excess in them too, so giants crossing there
    are partly what the disk needs: it keeps them only when they are scarcer and carry its
    excess with room to spare (_CARRY). Crowded-medium seed 273: 1.48x the excess, carrying
    3.7x the disk excess; moves inside used the small ones up, and 81 GB replicas crossed
    after the rack had shed its disk excess (bytes 1.112 -> 1.079 x the bound; seed 175 1.135
    -> 1.076). One whose replicas that may cross cannot carry its excess is left alone: the
    disk goal sheds what it can in the small ones that moves inside the rack made free to
    move again (crowded-medium seed 25 with the rule there: disk 1.034); at 1.8x and more the
    rule moved as many bytes on average, some seeds more (73: 1.082 -> 1.104). Chosen on seeds
    0-271; on seeds 288-367, unseen until then: bytes 1.047 -> 1.042 x the bound on average,
    the worst 1.194 -> 1.089 (seed 354; 333: 1.112 -> 1.068).
    """
    racks: dict[int, list[int]] = {}
    for b in brokers:
        racks.setdefault(st.rack[b], []).append(b)
    if len(racks) < 2:
        return racks, set(), set()
    mean = sum(st.count[b] for b in brokers) / len(brokers)
    mean_disk = sum(st.disk[b] for b in brokers) / len(brokers)
    short, keep = set(), set()
    for r, members in racks.items():
        excess = sum(st.count[b] for b in members) - mean * len(members)
        if excess <= 0:
            continue
        disk_excess = sum(st.disk[b] for b in members) - mean_disk * len(members)
        crossing = [p for b in members for p in on[b] if len(st.replicas[p]) < len(racks)]
        if disk_excess <= 0:
            if len(crossing) < SHORT * excess:
                short.add(r)
                keep.add(r)
        elif (len(crossing) < _SHORT_HEAVY * excess
              and sum(st.size[p] for p in crossing) >= _CARRY * disk_excess):
            keep.add(r)
    return racks, short, keep


def forced_range(run: Run, g: int, lo: int, hi: int) -> tuple[int, int, str] | None:
    """(lowest, highest, why) when the rack rule keeps group g's replica counts from lo..hi,
    else None.

    A partition with rf replicas puts at least rf - (what the other racks may hold) in each
    rack (rack_forced) and at most rack_limit (rack_room): with three racks and RF 3, exactly
    one. A rack with fewer brokers than the others (a dead broker's, say) then holds more per
    broker than the mean: crowded-medium seed 337 has 8,798 such replicas on a rack of 7
    brokers, 1,256.9 each against a mean of 1,252.1. Held to the ceiling of the mean, the count
    goal left that rack at 1,260 and brokers it could not fill at 1,236 (max - min 24); from the
    others' mean (1,250) to the rack's ceiling (1,257) it reaches the best there is. A rack with
    more brokers than the others holds less: 13 brokers in racks of 5, 4 and 3 (rack b's fourth
    dead), and rack a may hold 5,000 of 13,907 replicas, 1,000 per broker; held to the floor of
    the others' mean, 1,111, its two new brokers stayed at 834 (max - min 470, where 303 is the
    best). The range is the narrowest L..U where every rack's total fits both (_fits), around
    the mean.
    """
    st = run.state
    brokers = run.group_brokers(g)
    racks = Counter(st.rack[b] for b in brokers)
    need = {r: round(v) for r, v in rack_forced(run, g).items()}
    if not need:
        return None
    room = rack_room(run, g)
    total = sum(st.count[b] for b in brokers)
    mean = total / len(brokers)
    if _fits(racks, need, room, total, lo, hi):
        return None

    def lowest(d: int) -> int | None:
        """The L nearest the mean for which L..L + d fits, if any."""
        return next((low for low in sorted(range(max(0, hi - d), lo + 1), key=lambda x: abs(x + d / 2 - mean))
                     if _fits(racks, need, room, total, low, low + d)), None)

    # The least d by bisection: a range that fits still fits widened (racks of 5, 4 and 3 need
    # d = 303; trying each d in turn took 0.2 s per measure of the bounds).
    a, b = hi - lo + 1, total
    if a > b or lowest(b) is None:  # a dead broker still holds replicas the racks must hold: the
        return None  # hard goals move them first, and the bounds are measured again after
    while a < b:
        m = (a + b) // 2
        if lowest(m) is None:
            a = m + 1
        else:
            b = m
    bottom = lowest(a)
    assert bottom is not None
    top = bottom + a

    def members(r: int) -> str:
        return ", ".join(str(st.broker_ids[b]) for b in brokers if st.rack[b] == r)

    high = [r for r in racks if need[r] > mean * racks[r]]
    short = [r for r in racks if room[r] < mean * racks[r]]
    reasons = [f"the rack of brokers {members(r)} must hold {need[r]:,} replicas ({need[r] / racks[r]:,.1f} per "
               f"broker against a mean of {mean:,.1f}; the other racks may not hold more of those partitions)"
               for r in sorted(high, key=lambda r: -need[r] / racks[r])[:1]]
    reasons += [f"the rack of brokers {members(r)} may hold {room[r]:,} replicas at most ({room[r] / racks[r]:,.1f} "
                f"per broker against a mean of {mean:,.1f}; the rack rule allows it no more of any partition)"
                for r in sorted(short, key=lambda r: room[r] / racks[r])[:1]]
    end = (f"so the other brokers end at {bottom:,} or more" if not short
           else f"so brokers end between {bottom:,} and {top:,}")
    why = f"replica_count: max-min {top - bottom} at best, not 1: {'; '.join(reasons)}, {end}"
    return bottom, top, why


def _fits(racks: Mapping[int, int], need: Mapping[int, int], room: Mapping[int, int], total: int,
          low: int, high: int) -> bool:
    """Whether each rack r may hold a total within need[r]..room[r] and low..high per broker,
    the totals adding up to ``total``."""
    least = [max(need[r], low * n) for r, n in racks.items()]
    most = [min(room[r], high * n) for r, n in racks.items()]
    return all(a <= b for a, b in zip(least, most, strict=True)) and sum(least) <= total <= sum(most)
