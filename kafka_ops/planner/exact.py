"""The hard goals solved exactly, for the starts the greedy repair cannot untangle.

The greedy hard goals move one replica at a time; when racks, pools and a tight replica
limit per broker interlock, the only way out can be a chain of moves through several
brokers, which a one-step search never finds. Then the planner starts over from the original
assignment and solves placement as a minimum-cost flow:

    source -> partition (RF) -> (partition, rack) (rack limit) -> broker (1, cost 0 if the
    partition is already there, else 1) -> sink (the broker's room under the replica limit)

The flow starts from every replica that may stay where it is (cost 0, so that flow is
already of minimum cost for its size) and then augments along cheapest paths, so the
result keeps as many replicas in place as any plan can. If the flow cannot place every
replica, no plan exists and the error says which rule ran out of room. Disk and network
capacity are left to the greedy capacity goal afterwards (bin packing has no flow model), and
on small starts where that fails, to an exhaustive search (packing.py).
"""

from __future__ import annotations

from collections import deque

from kafka_ops.errors import ValidationError
from kafka_ops.planner.context import Run
from kafka_ops.planner.hard import rack_limit


def solve_hard_goals(run: Run, avoid: frozenset[int] = frozenset()) -> None:
    """Reset the state and place every movable partition by min-cost flow (see module doc).

    Brokers in ``avoid`` (over a disk or network limit) get no movable replicas at all.
    """
    st = run.state
    st.reset()
    limit = run.options.max_replicas_per_broker
    room = [0] * st.nb
    for b in range(st.nb):
        room[b] = limit if limit is not None else st.np  # st.np: more than any broker can hold
        if b in avoid:
            room[b] = 0
    parts = [p for p in range(st.np) if run.partition_movable[p]]
    for p in range(st.np):
        if not run.partition_movable[p]:
            for b in st.replicas[p]:
                room[b] -= 1
    net = _Net()
    sink = net.node()
    source = net.node()
    broker_node = [net.node() for _ in range(st.nb)]
    for b in range(st.nb):
        if st.eligible[b] and room[b] > 0:
            net.edge(broker_node[b], sink, room[b], 0)
    need = 0
    slots: dict[tuple[int, int], int] = {}  # (partition, broker) -> edge index
    part_edge: dict[int, int] = {}
    rack_edge: dict[tuple[int, int], int] = {}  # (partition, rack) -> edge index
    sink_edge = {b: net.out_edge(broker_node[b], sink) for b in range(st.nb)
                 if st.eligible[b] and room[b] > 0}
    for p in parts:
        rf = len(st.replicas[p])
        need += rf
        pn = net.node()
        part_edge[p] = net.edge(source, pn, rf, 0)
        lim = rack_limit(run, p)
        for b in st.groups[st.group_of(p)].brokers:
            here = b in st.replicas[p]
            if b not in sink_edge or not (here or run.dst_ok[b]):
                continue
            r = st.rack[b]
            if (p, r) not in rack_edge:
                rack_edge[p, r] = net.edge(pn, net.node(), lim, 0)
            slots[p, b] = net.edge(net.head[rack_edge[p, r]], broker_node[b], 1, 0 if here else 1)
    # Replicas that may stay: a zero-cost flow, minimum cost for its size.
    flow = 0
    for p in parts:
        for b in st.replicas[p]:
            e = slots.get((p, b))
            if e is None:
                continue
            path = [part_edge[p], rack_edge[p, st.rack[b]], e, sink_edge[b]]
            if all(net.cap[x] > 0 for x in path):
                net.push_path(path)
                flow += 1
    flow += net.augment(source, sink, need - flow)
    if flow < need:
        raise ValidationError(_why(run, need, room))
    for p in parts:
        new = {b for b in st.groups[st.group_of(p)].brokers
               if (p, b) in slots and net.cap[slots[p, b]] == 0}
        old = st.replicas[p]
        gone = [b for b in old if b not in new]
        came = sorted(b for b in new if b not in old)
        for src, dst in zip(gone, came, strict=True):
            st.move(p, src, dst)


def _why(run: Run, need: int, room: list[int]) -> str:
    st = run.state
    limit = run.options.max_replicas_per_broker
    live = sum(max(0, room[b]) for b in range(st.nb) if st.eligible[b])
    if limit is not None and live < need:
        return (f"capacity: max_replicas_per_broker={limit} leaves room for {live} replicas on "
                f"the live brokers, {need} must be placed")
    return ("capacity and rack_awareness together leave no placement: the brokers of the racks "
            f"with room have too little room under max_replicas_per_broker={limit} for the "
            "replicas that must go there")


class _Net:
    """A flow network in flat lists: edge e and its reverse e ^ 1."""

    def __init__(self) -> None:
        self.adj: list[list[int]] = []
        self.head: list[int] = []  # edge -> node it points to
        self.tail: list[int] = []  # edge -> node it leaves
        self.cap: list[int] = []
        self.cost: list[int] = []
        self._out: dict[tuple[int, int], int] = {}

    def node(self) -> int:
        self.adj.append([])
        return len(self.adj) - 1

    def edge(self, u: int, v: int, cap: int, cost: int) -> int:
        e = len(self.head)
        for a, b, c, w in ((u, v, cap, cost), (v, u, 0, -cost)):
            self.adj[a].append(len(self.head))
            self.tail.append(a)
            self.head.append(b)
            self.cap.append(c)
            self.cost.append(w)
        self._out[u, v] = e
        return e

    def out_edge(self, u: int, v: int) -> int:
        return self._out[u, v]

    def push_path(self, edges: list[int]) -> None:
        for e in edges:
            self.cap[e] -= 1
            self.cap[e ^ 1] += 1

    def augment(self, s: int, t: int, want: int) -> int:
        """Up to ``want`` units along successive cheapest paths (SPFA: costs may be negative)."""
        done = 0
        n = len(self.adj)
        while done < want:
            dist: list[int | None] = [None] * n
            via = [-1] * n
            dist[s] = 0
            queue = deque([s])
            queued = [False] * n
            queued[s] = True
            while queue:
                u = queue.popleft()
                queued[u] = False
                du = dist[u]
                assert du is not None  # only reached nodes are queued
                for e in self.adj[u]:
                    if self.cap[e] > 0:
                        v = self.head[e]
                        nd = du + self.cost[e]
                        dv = dist[v]
                        if dv is None or nd < dv:
                            dist[v] = nd
                            via[v] = e
                            if not queued[v]:
                                queued[v] = True
                                queue.append(v)
            if dist[t] is None:
                return done
            v = t
            path = []
            while v != s:
                e = via[v]
                path.append(e)
                v = self.tail[e]
            self.push_path(path)
            done += 1
        return done
