"""Throttle calculation as Kafka's reassign tool does it, and the diff the executor sends."""

from __future__ import annotations

from kafka_ops.model import TopicPartition as TP
from kafka_ops.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    MAX_CONFIG_VALUE_BYTES,
    PartitionMove,
    ThrottleConfig,
    calculate_broker_rates,
    calculate_follower_throttles,
    calculate_leader_throttles,
    calculate_move,
    calculate_throttle_changes,
    calculate_throttles,
    throttle_entry_fits,
)

# The move map of Kafka's ReassignPartitionsUnitTest (testCalculateProposedMoveMap), without
# the in-flight reassignments: foo-0 [1,2,3]->[1,2,5], foo-1 [4,5,6]->[4,5,7,8] ...
MOVES = {
    TP("foo", 0): calculate_move((1, 2, 3), (1, 2, 5)),
    TP("foo", 1): calculate_move((4, 5, 6), (7, 8, 4)),
    TP("foo", 2): calculate_move((1, 2, 3), (7, 8, 9)),
    TP("bar", 0): calculate_move((2, 3, 4), (1, 2, 3)),
}


def test_move_sources_are_current_replicas_destinations_the_new_ones_in_target_order():
    assert calculate_move((4, 5, 6), (7, 8, 4)) == PartitionMove((4, 5, 6), (7, 8))
    assert calculate_move((1, 2), (2, 1)) == PartitionMove((1, 2), ())


def test_leader_throttles_list_every_source_replica_per_topic():
    assert calculate_leader_throttles(MOVES) == {
        "bar": "0:2,0:3,0:4",
        "foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,2:3",
    }


def test_follower_throttles_list_every_destination_replica_per_topic():
    assert calculate_follower_throttles(MOVES) == {"bar": "0:1", "foo": "0:5,1:7,1:8,2:7,2:8,2:9"}


def test_entries_sort_as_strings_like_kafka():
    moves = {TP("t", 10): calculate_move((1,), (2,)), TP("t", 2): calculate_move((1,), (3,))}
    assert calculate_leader_throttles(moves) == {"t": "10:1,2:1"}
    assert calculate_follower_throttles(moves) == {"t": "10:2,2:3"}


def test_pure_reorder_needs_no_follower_throttle():
    assert calculate_follower_throttles({TP("t", 0): calculate_move((1, 2), (2, 1))}) == {}


def test_broker_rates_on_every_source_and_destination():
    rates = calculate_broker_rates({TP("t", 0): calculate_move((1, 2), (2, 3))}, 1000)
    assert rates == {b: {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"} for b in (1, 2, 3)}


def test_no_rate_means_no_throttle_at_all():
    assert calculate_throttles(MOVES, None) == ThrottleConfig({}, {})


def test_changes_set_new_values_and_delete_what_is_no_longer_in_flight():
    before = calculate_throttles({TP("a", 0): calculate_move((1,), (2,))}, 500)
    after = calculate_throttles({TP("b", 0): calculate_move((1,), (3,))}, 500)
    changes = calculate_throttle_changes(before, after)
    assert changes.set_topics == {"b": {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:3"}}
    assert changes.delete_topics == {"a": [FOLLOWER_REPLICAS, LEADER_REPLICAS]}
    assert changes.set_brokers == {3: {LEADER_RATE: "500", FOLLOWER_RATE: "500"}}
    assert changes.delete_brokers == {2: [FOLLOWER_RATE, LEADER_RATE]}
    assert calculate_throttle_changes(after, after).empty


def test_unknown_values_are_set_again():
    wanted = calculate_throttles({TP("a", 0): calculate_move((1,), (2,))}, 500)
    unknown = ThrottleConfig({"a": {LEADER_REPLICAS: ""}, "z": {FOLLOWER_REPLICAS: ""}}, {})
    changes = calculate_throttle_changes(unknown, wanted)
    assert changes.set_topics["a"] == {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:2"}
    assert changes.delete_topics == {"z": [FOLLOWER_REPLICAS]}


def test_entry_fits_up_to_kafkas_string_limit():
    assert throttle_entry_fits(MAX_CONFIG_VALUE_BYTES - 4, ["1:2"])
    assert not throttle_entry_fits(MAX_CONFIG_VALUE_BYTES - 3, ["1:2"])
