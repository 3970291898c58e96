"""Which moves start: per-broker and cluster-wide limits, pipelining, throttle value size."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from kafka_ops.errors import ValidationError
from kafka_ops.executor.scheduler import ExecutionLimits, select_moves
from kafka_ops.executor.tasks import ExecutionTask
from kafka_ops.model import TopicPartition as TP
from kafka_ops.throttle import MAX_CONFIG_VALUE_BYTES


def move(p, source, target, topic="t"):
    return ExecutionTask(TP(topic, p), tuple(source), tuple(target))


def test_per_broker_incoming_limit_passes_over_busy_brokers():
    pending = [move(0, [1], [4]), move(1, [2], [4]), move(2, [3], [5])]
    chosen = select_moves(pending, [], ExecutionLimits(incoming_per_broker=1, outgoing_per_broker=5))
    assert [t.tp.partition for t in chosen] == [0, 2]


def test_in_flight_moves_hold_their_slots():
    in_flight = [move(9, [1], [4])]
    pending = [move(0, [2], [4]), move(1, [1], [5])]
    limits = ExecutionLimits(incoming_per_broker=1, outgoing_per_broker=1)
    assert select_moves(pending, in_flight, limits) == []
    assert select_moves(pending, [], limits) == pending


def test_cluster_wide_limit():
    pending = [move(p, [1], [2 + p]) for p in range(5)]
    limits = ExecutionLimits(incoming_per_broker=9, outgoing_per_broker=9, in_flight=3)
    assert len(select_moves(pending, [move(9, [7], [8])], limits)) == 2


def test_limits_must_be_positive():
    with pytest.raises(ValidationError, match="limit in-flight must be at least 1"):
        ExecutionLimits(in_flight=0)


def test_throttle_lists_stay_under_kafkas_value_limit():
    # 5,000 moves of one topic would make a ~40 KB leader list: only part may run at once.
    pending = [move(p, [1, 2], [3, 4]) for p in range(5000)]
    limits = ExecutionLimits(incoming_per_broker=10**6, outgoing_per_broker=10**6, in_flight=10**6)
    chosen = select_moves(pending, [], limits, throttled=True)
    assert 0 < len(chosen) < 5000
    leader = ",".join(sorted(f"{t.tp.partition}:{b}" for t in chosen for b in t.source))
    assert len(leader) <= MAX_CONFIG_VALUE_BYTES
    assert len(select_moves(pending, [], limits, throttled=False)) == 5000


@settings(max_examples=60)
@given(
    hs.lists(
        hs.tuples(hs.lists(hs.integers(0, 5), min_size=1, max_size=3, unique=True),
                  hs.lists(hs.integers(0, 5), min_size=1, max_size=3, unique=True)),
        max_size=30,
    ),
    hs.integers(1, 3), hs.integers(1, 3), hs.integers(1, 10),
)
def test_selection_never_exceeds_any_limit(pairs, incoming, outgoing, total):
    tasks = [move(i, s, t) for i, (s, t) in enumerate(pairs)]
    limits = ExecutionLimits(incoming_per_broker=incoming, outgoing_per_broker=outgoing, in_flight=total)
    chosen = select_moves(tasks, [], limits)
    assert len(chosen) <= total
    assert max(Counter(b for t in chosen for b in t.incoming).values(), default=0) <= incoming
    assert max(Counter(b for t in chosen for b in t.outgoing).values(), default=0) <= outgoing
    # greedy and maximal: every task left out would break a limit
    for t in tasks:
        if t not in chosen and len(chosen) < total:
            assert select_moves([t], chosen, limits) == []
