"""Manual assignments in kafka-topics' --replica-assignment syntax: parse, validate, format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ops.assignment import format_replica_assignment, parse_replica_assignment
from kafka_ops.errors import (
    AdminOperationError,
    InvalidReplicaAssignmentError,
    ValidationError,
)


def test_parses_the_seed_000_example_shape():
    assert parse_replica_assignment("0:1:2,3:4:5,6:7:8") == {
        0: [0, 1, 2], 1: [3, 4, 5], 2: [6, 7, 8],
    }  # fmt: skip


def test_trims_whitespace_like_kafka_and_keeps_replica_order():
    assert parse_replica_assignment(" 2 : 0 ,1: 2") == {0: [2, 0], 1: [1, 2]}


def test_known_brokers_accepts_a_valid_assignment():
    assert parse_replica_assignment("0:1,1:2", known_brokers=[0, 1, 2]) == {0: [0, 1], 1: [1, 2]}


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("", ValidationError, "replica assignment is empty"),
        ("   ", ValidationError, "replica assignment is empty"),
        ("0:1,,2:3", ValidationError,
         r"^Cannot have replication factor of 0 for partition id 1\.$"),
        ("0:1,", ValidationError,
         r"^Cannot have replication factor of 0 for partition id 1\.$"),
        ("0:a", ValidationError,
         r"^invalid broker id 'a' in the replica list of partition 0: expected a non-negative"),
        ("0:1,2::3", ValidationError, r"invalid broker id '' in the replica list of partition 1"),
        ("0:-1", ValidationError, r"invalid broker id '-1' in the replica list of partition 0"),
        ("0:1.5", ValidationError, r"invalid broker id '1.5'"),
        ("0:\u00b2", ValidationError, r"invalid broker id '\u00b2'"),
        ("0:1:0", InvalidReplicaAssignmentError,
         r"^Partition replica lists may not contain duplicate entries: partition 0 contains "
         r"multiple entries for 0$"),
        ("0:1,2:2:3:3", InvalidReplicaAssignmentError,
         r"partition 1 contains multiple entries for 2,3$"),
        ("0:1,2:3,4", AdminOperationError,
         r"^Partition 2 has different replication factor: \[4\]$"),
        ("0:1,2:3:4", AdminOperationError,
         r"^Partition 1 has different replication factor: \[2, 3, 4\]$"),
    ],
)  # fmt: skip
def test_rejects_malformed_assignments(text, error, message):
    with pytest.raises(error, match=message):
        parse_replica_assignment(text)


def test_unknown_broker_is_named_with_its_partition():
    with pytest.raises(InvalidReplicaAssignmentError) as e:
        parse_replica_assignment("0:1,1:7", known_brokers={0, 1, 2})
    assert str(e.value) == (
        "Partition 1: the manual partition assignment includes broker 7, but no such broker "
        "is registered."
    )


def test_unknown_broker_is_not_checked_without_known_brokers():
    assert parse_replica_assignment("0:7") == {0: [0, 7]}


def test_errors_are_reported_in_partition_order():
    """A malformed partition 1 is reported before an unknown broker in partition 0."""
    with pytest.raises(InvalidReplicaAssignmentError, match="partition 1 contains"):
        parse_replica_assignment("0:9,1:1", known_brokers={0, 1})


def test_format_writes_partitions_in_order():
    assert format_replica_assignment({1: [3, 4, 5], 0: [0, 1, 2]}) == "0:1:2,3:4:5"


@pytest.mark.parametrize("assignment", [{1: [0]}, {0: [0], 2: [1]}])
def test_format_rejects_gaps_in_partition_ids(assignment):
    with pytest.raises(ValidationError, match="lists partitions 0..n-1 by position"):
        format_replica_assignment(assignment)


@given(
    st.integers(1, 6).flatmap(
        lambda rf: st.lists(
            st.lists(st.integers(0, 500), min_size=rf, max_size=rf, unique=True),
            min_size=1,
            max_size=30,
        )
    )
)
def test_format_then_parse_round_trips(replica_lists):
    assignment = dict(enumerate(replica_lists))
    text = format_replica_assignment(assignment)
    assert parse_replica_assignment(text) == assignment
