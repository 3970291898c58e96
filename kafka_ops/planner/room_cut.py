"""The brokers of a pool that the rules force more onto than their limits hold, found by max flow.

A pool's disk can be short without the pool or any one rack being short. Pooled fuzz seed 8
(benchmarks/fuzz_grown.py --pools): a pool of seven brokers on racks of 3, 2, 1 and 1 at 80%
of its disk limits. A partition of RF 3 may put one replica per rack, so the two racks of
one broker each must hold a replica of every partition that the other five brokers, two racks,
cannot hold all of: 1.02 x their limits together, while each of the two alone is within its
own. CP-SAT searched 60 deterministic seconds without deciding it.

The rules a replica placement keeps, weighed fractionally (a partition's bytes may split over
brokers as long as no broker holds more than one replica of it and no rack more than the rack
limit), are a flow:

    source -> class c (RF x W) -> (c, rack) (L x W) -> (c, broker) (W) -> broker (its room) -> sink

with the movable partitions grouped in classes c of equal RF and rack limit L, W their summed
size (or bytes-in), and a broker's room its limit less what the plan leaves on it. Any placement
is such a flow, so a maximum flow short of the sum of RF x W proves that no plan exists. Its
minimum cut names the brokers S: the classes must put on S, at least, what the brokers outside
S may not take (per partition RF less one per broker outside S, at most L per rack), and that is
more than S's room. Splitting a class's flow in proportion to its partitions' sizes makes a
fractional placement per partition, so the flow decides exactly this relaxation; a pool or a
rack that is short (hard.CapacityGoal._fills) is the cut of all the pool's brokers or of one
rack's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
from ortools.graph.python import max_flow

_GRAIN = 2**40  # the summed need in the flow's integer units: fine enough, far below overflow


def short_brokers(rack: Mapping[int, int], room: Mapping[int, float],
                  classes: Mapping[tuple[int, int], float], fill: float = 1.0
                  ) -> tuple[list[int], float] | None:
    """Brokers (keys of ``rack`` and ``room``, the pool's live brokers) that must hold more than
    ``fill`` x their room, and what they must hold; None if no such set exists.

    ``classes``: (replication factor, most replicas per rack) -> the summed size of the movable
    partitions of that kind; a class whose RF the brokers cannot hold by count (more than one
    per broker, the limit per rack) is another check's error, and gives None here. The flow
    runs in integer units rounded in favour of a placement (needs down, room up); the set it
    names is then checked in floats, so what it returns is a proof, whatever the rounding."""
    brokers = sorted(room)
    total = sum(rf * w for (rf, _), w in classes.items())
    if not brokers or total <= 0:
        return None
    unit = total / _GRAIN
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []

    def arc(u: int, v: int, cap: int) -> None:
        tails.append(u)
        heads.append(v)
        caps.append(cap)

    source, sink = 0, 1
    node = {b: 2 + i for i, b in enumerate(brokers)}
    nodes = 2 + len(brokers)
    for b in brokers:
        # No broker takes more than the whole need: a larger room (a tiny need) would overflow.
        arc(node[b], sink, min(2 * _GRAIN, math.ceil(max(0.0, fill * room[b]) / unit)))
    racks: dict[int, list[int]] = defaultdict(list)
    for b in brokers:
        racks[rack[b]].append(b)
    for (rf, limit), w in classes.items():
        c, nodes = nodes, nodes + 1
        arc(source, c, math.floor(rf * w / unit))
        for members in racks.values():
            r, nodes = nodes, nodes + 1
            arc(c, r, math.floor(min(limit, len(members)) * w / unit))
            for b in members:
                arc(r, node[b], math.floor(w / unit))
    flow = max_flow.SimpleMaxFlow()
    flow.add_arcs_with_capacity(np.asarray(tails, dtype=np.int32), np.asarray(heads, dtype=np.int32),
                                np.asarray(caps, dtype=np.int64))
    if flow.solve(source, sink) != flow.OPTIMAL:
        return None
    if flow.optimal_flow() >= sum(caps[i] for i, t in enumerate(tails) if t == source):
        return None
    side = set(flow.get_source_side_min_cut())
    short = [b for b in brokers if node[b] in side]
    must = must_hold(short, rack, classes)
    return (short, must) if short and must > fill * sum(room[b] for b in short) else None


def must_hold(short: Sequence[int], rack: Mapping[int, int],
              classes: Mapping[tuple[int, int], float]) -> float:
    """What the brokers ``short`` must hold of the pool's movable partitions: per partition,
    its replicas beyond what the other brokers (keys of ``rack``) may hold, one per broker
    and at most the rack limit per rack."""
    inside = set(short)
    outside: dict[int, int] = defaultdict(int)
    for b in rack:
        if b not in inside:
            outside[rack[b]] += 1
    return sum(w * max(0, rf - sum(min(limit, n) for n in outside.values()))
               for (rf, limit), w in classes.items())
