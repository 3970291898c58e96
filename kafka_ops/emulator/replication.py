"""Replication in closed form: fetch rates, catch-up moments, throttles and log growth.

Fetch rates are piecewise constant and each fetch's catch-up moment is known in advance (a
heap), so ``tick`` stops exactly there and results do not depend on how often it runs. Rates
are max-min fair over the limits a fetch is subject to: destination network-in and leader
network-out (times ``slow_factor``; capacity 0 = unlimited) and the follower/leader throttled
rates where the topic's throttled-replica lists name the replica. Bandwidth freed by a replica
that caught up is handed out at most ``REDISTRIBUTE_INTERVAL`` later.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass

from kafka_ops.emulator.core import ClusterCore
from kafka_ops.emulator.state import EmulatedPartition
from kafka_ops.kafka_rules import (
    ALL_REPLICAS,
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
    LOG_DIRS_THROTTLED_RATE,
    parse_throttled_replicas,
)
from kafka_ops.model import TopicPartition

# Bandwidth freed by a replica that caught up is handed to the others at most this many
# simulated seconds later (every other change re-rates fetches at once). Without the delay a
# cluster-wide rebalance would re-rate every fetch at every one of thousands of catch-ups.
REDISTRIBUTE_INTERVAL = 5.0


@dataclass
class _Fetch:
    tp: TopicPartition
    dest: int
    leader: int
    lag: float
    growth: float


class ReplicationModel(ClusterCore):
    """Time and replication over the core state: ``tick`` and what it needs."""

    def tick(self) -> None:
        """Advance the simulation to ``clock.now()``. Without a clock move it only settles
        what is due now (a replica with nothing to fetch joins the ISR at once)."""
        with self.lock:
            target = self.clock.now()
            if target > self._time or self._dirty:
                self._advance(max(target, self._time))
            self._copy_log_dirs()
            self._check_dir_capacity()

    def _check_dir_capacity(self) -> None:
        """Directories that outgrew their capacity fail (a write that does not fit is an
        IOException in Kafka: the directory goes offline). Checked at most once per emulated
        second: a check costs O(replicas in directories of known capacity)."""
        if not self.log_dirs.enforced or self._time - self._capacity_checked_at < 1.0:
            return
        self._capacity_checked_at = self._time

        def size(tp: TopicPartition, broker: int) -> float:
            p = self.partitions[tp]
            self._sync(p, self._time)
            return p.replica_bytes.get(broker, 0.0)

        for broker, path in self.log_dirs.full(size):
            self._set_dir_online(broker, path, False, reason="full")

    def _set_dir_online(self, broker_id: int, path: str, online: bool, reason: str) -> None:
        """Supplied by ``brokers.BrokerFaults``."""
        raise NotImplementedError

    def _copy_log_dirs(self) -> None:
        """Future replicas copy up to now at their brokers' alter-log-dirs throttle."""
        dt = self._time - self._log_dirs_at
        self._log_dirs_at = self._time
        if not self.log_dirs.futures:
            return
        rates = {}
        sizes = {}
        for tp, b in self.log_dirs.futures:
            p = self.partitions[tp]
            self._sync(p, self._time)
            sizes[tp, b] = p.replica_bytes.get(b, 0.0)
            rates[b] = self._throttle_rate(b, LOG_DIRS_THROTTLED_RATE)
        for tp, b in self.log_dirs.advance(dt, rates, sizes):
            self._emit("log_dir_swapped", tp, broker=b, path=self.log_dirs.placement[tp, b])

    def _fetches(self) -> list[_Fetch]:
        out = []
        for tp in self._lagging:
            p = self.partitions[tp]
            self._sync(p, self._time)
            for r in p.replicas:
                if r not in p.isr and self._online(r, p.tp):
                    lag = max(p.log_end_bytes - p.replica_bytes.get(r, 0.0), 0.0)
                    out.append(_Fetch(tp, r, p.leader, lag, p.bytes_in_per_sec))
        return out

    def _reallocate(self) -> None:
        """New fetch rates from now on, and the moment each fetch will catch up."""
        fetches = self._fetches()  # syncs every lagging partition under the old rates first
        rates = self._allocate(fetches)
        self._rates = {(f.tp, f.dest): rate for f, rate in zip(fetches, rates, strict=True)}
        self._allocation += 1
        self._allocated_at = self._time
        self._dirty = self._redistribute = False
        self._catchups = []
        for seq, (f, rate) in enumerate(zip(fetches, rates, strict=True)):
            if f.lag <= _tolerance(self.partitions[f.tp]) or math.isinf(rate):
                due = self._time
            elif rate > f.growth:
                due = self._time + f.lag / (rate - f.growth)
            else:
                continue  # never catches up at this rate
            self._catchups.append((due, seq, f.tp, f.dest, f.leader, self._allocation))
        heapq.heapify(self._catchups)

    def _next_catchup(self) -> float:
        while self._catchups and self._catchups[0][5] != self._allocation:
            heapq.heappop(self._catchups)
        return self._catchups[0][0] if self._catchups else math.inf

    def _advance(self, target: float) -> None:
        """Run replication up to ``target``, stopping exactly at each catch-up moment."""
        while True:
            redistribute_at = (self._allocated_at + REDISTRIBUTE_INTERVAL
                               if self._redistribute else math.inf)
            if self._dirty or self._time >= redistribute_at:
                self._reallocate()
                continue
            due = self._next_catchup()
            self._time = max(self._time, min(due, redistribute_at, target))
            if due <= self._time:
                self._catch_up(heapq.heappop(self._catchups))
            elif self._time >= target:
                for tp in self._lagging:  # fetch progress readable between ticks
                    self._sync(self.partitions[tp], self._time)
                return

    def _catch_up(self, entry: tuple) -> None:
        _, _, tp, dest, leader, _ = entry
        p = self.partitions[tp]
        if p.leader != leader or dest in p.isr or not self._online(dest, tp) or dest not in p.replicas:
            return
        self._sync(p, self._time)
        dirty = self._dirty
        self._join_isr(tp, dest)
        # Other rates stay valid (a catch-up only frees bandwidth); the freed share is handed
        # out at the next reallocation, at most REDISTRIBUTE_INTERVAL later.
        self._dirty = dirty
        self._redistribute = True

    def _allocate(self, fetches: list[_Fetch]) -> list[float]:
        """Max-min fair rates under every limit each fetch is subject to.

        Progressive filling: all unfrozen fetches rise together; the limit that saturates
        first freezes its fetches at that level. A heap of saturation levels keeps this
        O(m log m) in the number of (fetch, limit) pairs.
        """
        keys_of: list[list[tuple[str, int]]] = []
        capacity: dict[tuple[str, int], float] = {}
        users: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, f in enumerate(fetches):
            keys = []
            for key, cap in self._limits(f):
                if not math.isinf(cap):
                    capacity[key] = cap
                    keys.append(key)
                    users[key].append(i)
            keys_of.append(keys)
        rates: list[float | None] = [None if keys else math.inf for keys in keys_of]
        active = {k: len(u) for k, u in users.items()}
        frozen_sum = dict.fromkeys(users, 0.0)
        version = dict.fromkeys(users, 0)
        heap = [(capacity[k] / n, 0, k) for k, n in active.items()]
        heapq.heapify(heap)
        while heap:
            level, ver, k = heapq.heappop(heap)
            if ver != version[k] or active[k] == 0:
                continue
            for i in users[k]:
                if rates[i] is not None:
                    continue
                rates[i] = level
                for k2 in keys_of[i]:
                    active[k2] -= 1
                    frozen_sum[k2] += level
                    if k2 != k and active[k2] > 0:
                        version[k2] += 1
                        saturation = (capacity[k2] - frozen_sum[k2]) / active[k2]
                        heapq.heappush(heap, (max(saturation, level), version[k2], k2))
        return [math.inf if r is None else r for r in rates]

    def _limits(self, f: _Fetch) -> list[tuple[tuple[str, int], float]]:
        dest, leader = self.brokers[f.dest], self.brokers[f.leader]
        limits = [
            (("in", dest.id), _bandwidth(dest.network_in_bytes_per_sec, dest.slow_factor)),
            (("out", leader.id), _bandwidth(leader.network_out_bytes_per_sec, leader.slow_factor)),
        ]
        if self._throttled(f.tp, FOLLOWER_THROTTLED_REPLICAS, dest.id):
            limits.append((("follower-throttle", dest.id),
                           self._throttle_rate(dest.id, FOLLOWER_THROTTLED_RATE)))
        if self._throttled(f.tp, LEADER_THROTTLED_REPLICAS, leader.id):
            limits.append((("leader-throttle", leader.id),
                           self._throttle_rate(leader.id, LEADER_THROTTLED_RATE)))
        return limits

    def _throttled(self, tp: TopicPartition, key: str, broker_id: int) -> bool:
        cache_key = (tp.topic, key)
        if cache_key not in self._throttle_cache:
            value = self._topic_configs.get(tp.topic, {}).get(key, "")
            try:
                self._throttle_cache[cache_key] = parse_throttled_replicas(value)
            except ValueError:
                self._throttle_cache[cache_key] = frozenset()
        replicas = self._throttle_cache[cache_key]
        return replicas == ALL_REPLICAS or (tp.partition, broker_id) in replicas

    def _throttle_rate(self, broker_id: int, key: str) -> float:
        """The broker's own dynamic config, else the cluster default; unset = unlimited."""
        value = self._broker_configs.get(broker_id, {}).get(key)
        if value is None:
            value = self._broker_configs.get(None, {}).get(key)
        try:
            return float(int(value)) if value is not None else math.inf
        except ValueError:
            return math.inf

    def _join_isr(self, tp: TopicPartition, broker_id: int) -> None:
        """The follower reached the log end: the leader expands the ISR (AlterPartition)."""
        p = self.partitions[tp]
        p.replica_bytes[broker_id] = p.log_end_bytes
        self._emit("replica_caught_up", tp, broker=broker_id)
        self._change(p, isr=[*p.isr, broker_id])
        self._maybe_complete(tp)


def _bandwidth(capacity: float, slow_factor: float) -> float:
    return math.inf if capacity <= 0 else capacity * slow_factor


def _tolerance(p: EmulatedPartition) -> float:
    """Lag that counts as caught up: float rounding over terabyte logs, never a real gap."""
    return max(1e-6, p.log_end_bytes * 1e-12)
