"""Topic leader dispersion on a broker pinned by the leader loads: fix the topic first, then repair
the broker's loads with one more leadership change (or two).

On crowded-xl seed 6 thirteen brokers each lead a partition of a write-heavy RF-2 topic worth
0.43-0.78x a broker's mean leader bytes-in. The leader-load goals leave them at leader bytes-in
1.10 and network out 0.95x the mean: the rest of what they lead must be read-heavy, so they lead
too many of the read-heavy topics and none of some write-heavy ones (up to 101 topics out of
bounds on one broker). Every step that evens one of those topics lowers the broker's network
out or raises its leader bytes-in past its bound, so each is refused on its own, though a linear
program finds a choice of leaderships that evens all of that broker's topics within the bands
(benchmarks/leader_room.py). The way there is two steps: the topic's fix, then a change of
another topic that pays the loads back. Here the fix is searched with the pinned broker's limits
widened (Run.relaxed, Run.relax_slack: one leader more or less, leader loads by _SLACK), then a
repair is sought among all the partitions the broker holds: a leadership it takes or hands on
(one, where the fix changed its leader count; else a pair, one in, one out) that keeps every
topic within bounds on both brokers, each partner within its limits, and brings the broker back
within its own. Without a repair the fix is taken back. Topics over one apart on that cluster:
255 -> 206 (231 before the plan: it no longer ends worse), for 1.5 s more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from kafka_ops.planner.context import Move, Run
from kafka_ops.planner.topic_paths import TOP
from kafka_ops.planner.trades import load_room, vetoing

_PAIRS = 64  # repair pairs: the leaderships handed on weighed against every one taken
_PINNED = 0.01  # x the mean: how near a leader-load limit a broker must be for its limits to widen
# How far the broker's leader loads may pass their limits for the fix, x the mean: repairs of
# bigger excesses nearly all fail (crowded-xl seed 6, limits lifted outright: 2,021 of 2,236;
# failed repairs of leader bytes-in needed 0.0022 x the mean at the median, those made 0.0002).
# Widened by this much: 609 of 813 fail, the goal 8.1 -> 5.7 s, topics over one apart 207 -> 206.
_SLACK = 0.0005
_BUDGET = 20_000  # relaxed fixes tried per run
_BUDGET_KEY = ("topic_leader_relaxed", 0)

Fix = Callable[[], bool]
Apply = Callable[[list[Move]], bool]


def fix_relaxed(run: Run, b: int, pull: bool, fix: Fix, apply: Apply, bounds: tuple[np.ndarray, np.ndarray],
                on_broker: list[list[int]]) -> bool:
    """``fix`` (a leadership of one topic onto or off b) with b's limits widened, then a repair
    through ``apply`` (all vetoes asked) that brings b back within them; without one, the fix
    is taken back. ``bounds``: per topic, the lowest and highest leader count a broker keeps."""
    st = run.state
    budget = run.memo.get(_BUDGET_KEY, _BUDGET)
    if budget <= 0 or run.relaxed >= 0 or not _pinned(run, b, pull):
        return False
    run.memo[_BUDGET_KEY] = budget - 1
    journal: list[tuple[int, int]] = []
    st.journal, run.relaxed, run.relax_slack = journal, b, _slack(run, b)
    try:
        fixed = fix()
    finally:
        st.journal, run.relaxed, run.relax_slack = None, -1, {}
    if not fixed:
        return False
    if _repair(run, b, apply, bounds, on_broker):
        return True
    for p, old in reversed(journal):
        st.make_leader(p, old, undo=True)
    return False


def _slack(run: Run, b: int) -> dict[str, float]:
    """How far b's limits widen for the fix: one leader, and _SLACK x the mean leader loads."""
    st = run.state
    brokers = run.group_brokers(st.broker_group[b])
    slack = {"leaders": 1.0}
    for r in ("network_out", "leader_bytes_in"):
        load = st.load(r)
        slack[r] = _SLACK * sum(load[x] for x in brokers) / max(1, len(brokers))
    return slack


def _pinned(run: Run, b: int, pull: bool) -> bool:
    """b's leader count sits at a bound, or its network out or leader bytes-in within _PINNED x
    the mean of a limit, on the side a leadership taken (``pull``) or handed on moves it to."""
    st = run.state
    g = st.broker_group[b]
    top: Mapping[str, float] = run.memo[TOP]
    if (lc := vetoing(run, "leaders")) is not None:
        llo, lhi = lc.bounds(run, g)
        if (st.leaders[b] >= lhi) if pull else (st.leaders[b] <= llo):
            return True
    for r in ("network_out", "leader_bytes_in"):
        goal = vetoing(run, r)
        if goal is None:
            continue
        lo, hi = goal.bounds(run, g)
        mean = (lo + hi) / 2
        x = st.load(r)[b]
        if (min(hi, top[r]) - x < _PINNED * mean) if pull else (x - lo < _PINNED * mean):
            return True
    return False


def _repair(run: Run, b: int, apply: Apply, bounds: tuple[np.ndarray, np.ndarray],
            on_broker: list[list[int]]) -> bool:
    """One leadership change onto or off b (or a pair, one each way) that brings b's leader count
    and leader loads back within their limits; True if applied."""
    st = run.state
    g = st.broker_group[b]
    lc = vetoing(run, "leaders")
    llo, lhi = lc.bounds(run, g) if lc is not None else (-math.inf, math.inf)
    fall, rise = _leader_room(run, g)
    window = np.array([[fall[k][b], rise[k][b]] for k in range(2)])  # b's load change allowed
    need = 1 if st.leaders[b] < llo else -1 if st.leaders[b] > lhi else 0
    if not need and (window[:, 0] <= 0).all() and (window[:, 1] >= 0).all():
        return True
    held = _Held(run, b, bounds, on_broker)
    found: list[tuple[int, list[Move]]] = []
    if need:
        gain, q, x, _ = _side(run, held, need > 0, llo, lhi, fall, rise, window)
        found = [(-g_, [(p, x_, b) if need > 0 else (p, b, x_)])
                 for g_, p, x_ in zip(gain.tolist(), q.tolist(), x.tolist(), strict=True)]
    else:
        t_gain, t_q, t_x, t_load = _side(run, held, True, llo, lhi, fall, rise)
        g_gain, g_q, g_x, g_load = _side(run, held, False, llo, lhi, fall, rise)
        if len(t_q) and len(g_q):
            # A pair: the leaderships handed on, spread over their range of leader bytes-in,
            # each weighed against every one taken.
            pick = np.argsort(g_load[:, 1], kind="stable")
            pick = pick[np.linspace(0, len(pick) - 1, min(_PAIRS, len(pick))).astype(np.int64)]
            net = t_load[:, None, :] + g_load[pick][None, :, :]
            ok = ((net >= window[:, 0]) & (net <= window[:, 1])).all(axis=2)
            found = [(-int(t_gain[i] + g_gain[pick[j]]),
                      [(int(t_q[i]), int(t_x[i]), b), (int(g_q[pick[j]]), b, int(g_x[pick[j]]))])
                     for i, j in np.argwhere(ok).tolist()]
    found.sort(key=lambda f: f[0])
    return any(apply(changes) for _, changes in found[:8])


class _Held:
    """The partitions b holds a replica of, their topics, leaders and topic bounds, and b's
    leaders of each one's topic: what both sides of a repair weigh."""

    def __init__(self, run: Run, b: int, bounds: tuple[np.ndarray, np.ndarray],
                 on_broker: list[list[int]]) -> None:
        st = run.state
        t_lo, t_hi = bounds
        self.b = b
        self.qs = np.asarray(on_broker[b], dtype=np.int64)
        self.u = _arrays(run)[2][self.qs]
        self.lead = np.array([st.replicas[q][0] for q in on_broker[b]], dtype=np.int64)
        self.mine = self.lead == b
        self.ub = np.bincount(self.u[self.mine], minlength=len(t_lo))[self.u]
        self.lo, self.hi = t_lo[self.u], t_hi[self.u]


def _side(run: Run, held: _Held, take: bool, llo: float, lhi: float, fall: list[np.ndarray],
          rise: list[np.ndarray], window: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The single leadership changes b could take (``take``: from a partition's leader) or hand
    on (to a follower) that keep the topic within bounds on both brokers and the partner within
    its leader count and loads (and b's change of loads within ``window``, if given): as arrays
    of gain (the topic ends of the two brokers it evens), partition, partner and b's change of
    network out and leader bytes-in. In numpy, the cheap tests first and the (topic, broker)
    counts, looked up one by one, last: a pinned broker holds 1,350 replicas on crowded-xl,
    weighed 2,200 times a run."""
    st = run.state
    nb, reps = st.nb, st.replicas
    out_arr, in_arr, _, usable = _arrays(run)
    leaders = np.asarray(st.leaders, dtype=np.int64)
    qs, u, lead, mine, ub, lo, hi = held.qs, held.u, held.lead, held.mine, held.ub, held.lo, held.hi
    sign = 1.0 if take else -1.0
    if take:  # from a leader that keeps u within bounds, its leader count and loads within limits
        i = np.flatnonzero(~mine & (ub + 1 <= hi) & (leaders[lead] - 1 >= llo)
                           & (-out_arr[qs] >= fall[0][lead]) & (-in_arr[qs] >= fall[1][lead]))
        x = lead[i]
    else:  # to a follower that keeps u within bounds, its leader count and loads within limits
        k = np.flatnonzero(mine & (ub - 1 >= lo))
        pairs = [(j, f) for j, q in zip(k.tolist(), qs[k].tolist(), strict=True) for f in reps[q][1:]]
        i = np.array([j for j, _ in pairs], dtype=np.int64)
        x = np.array([f for _, f in pairs], dtype=np.int64)
        q = qs[i]
        ok = (leaders[x] + 1 <= lhi) & usable[x] & (out_arr[q] <= rise[0][x]) & (in_arr[q] <= rise[1][x])
        i, x = i[ok], x[ok]
    q = qs[i]
    load = sign * np.stack([out_arr[q], in_arr[q]], axis=1)
    if window is not None:
        ok = ((load >= window[:, 0]) & (load <= window[:, 1])).all(axis=1)
        i, x, q, load = i[ok], x[ok], q[ok], load[ok]
    ux = _counts(st.topic_leaders, u[i] * nb + x)
    ok = (ux - 1 >= lo[i]) if take else (ux + 1 <= hi[i])
    i, x, q, load, ux = i[ok], x[ok], q[ok], load[ok], ux[ok]
    gain = ((ub[i] < lo[i]).astype(np.int64) + (ux > hi[i]) if take
            else (ub[i] > hi[i]).astype(np.int64) + (ux < lo[i]))
    return gain, q, x, load


def _counts(counts: Mapping[int, int], keys: np.ndarray) -> np.ndarray:
    """Leader counts per (topic, broker) key, 0 where none."""
    get = counts.get
    return np.array([get(k, 0) for k in keys.tolist()], dtype=np.int64)


def _leader_room(run: Run, g: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per broker, how far network out and leader bytes-in may fall and rise: the leader-load
    goals' limits (load_room), and no rise past the highest at the topic goal's start."""
    st = run.state
    top: Mapping[str, float] = run.memo[TOP]
    fall: list[np.ndarray] = []
    rise: list[np.ndarray] = []
    for r in ("network_out", "leader_bytes_in"):
        now = np.asarray(st.load(r), float)
        f, up = np.full(st.nb, -np.inf), top[r] - now
        if (slack := load_room(run, r, g, "")) is not None:
            f, up = slack[0], np.minimum(up, slack[1])
        fall.append(f)
        rise.append(up)
    return fall, rise


def _arrays(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per partition, the network out and leader bytes-in its leadership carries and its topic;
    per broker, whether it may lead (the topic leader goal moves no replica, so these hold for
    its whole run)."""
    key = ("topic_relax_arrays", 0)
    if key not in run.memo:
        st = run.state
        rf = np.fromiter(map(len, st.replicas), dtype=np.float64, count=st.np)
        b_in = np.asarray(st.bytes_in, float)
        run.memo[key] = (np.asarray(st.bytes_out, float) + b_in * (rf - 1), b_in,
                         np.asarray(st.topic, dtype=np.int64),
                         np.asarray(run.dst_ok, bool) & np.asarray(st.eligible, bool))
    return run.memo[key]
