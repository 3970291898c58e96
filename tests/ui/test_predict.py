"""The predicted timeline against answers worked out by hand from the throttle arithmetic.

Each case is small enough that the exact completion time follows from bytes / throttle and the
executor's poll interval (a move is seen done at the first poll after it caught up), so the
expected numbers are decided independently of the emulator's allocation code.
"""

from __future__ import annotations

import math

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.executor import ExecutionLimits, ExecutionOptions
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition
from kafka_ops.model import TopicPartition as TP
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.predict import Prediction, predict

MB = 1_000_000
CAP = BrokerCapacity(10**13, 1000 * MB, 1000 * MB)


def cluster(sizes: list[int], brokers: int = 4, traffic: float = 0.0) -> ClusterModel:
    """Partitions t-i on brokers (1, 2), sizes as given; brokers 3.. empty."""
    bs = [Broker(i, rack=None, capacity=CAP) for i in range(1, brokers + 1)]
    ps = [Partition("t", i, (1, 2), 1, (1, 2), size_bytes=s, bytes_in_per_sec=traffic)
          for i, s in enumerate(sizes)]
    return ClusterModel(bs, ps)


def opts(throttle: int = 10 * MB, poll: float = 1.0, incoming: int = 1) -> ExecutionOptions:
    return ExecutionOptions(throttle=throttle, poll_interval=poll, elect_leaders=False,
                            limits=ExecutionLimits(incoming_per_broker=incoming,
                                                   outgoing_per_broker=10, in_flight=100))


def test_one_move_takes_size_over_throttle_rounded_up_to_the_poll():
    model = cluster([100 * MB])
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3)})
    p = predict(model, plan, opts(throttle=10 * MB, poll=1.0))
    assert p.status == "completed"
    assert p.duration == pytest.approx(10.0, abs=1.0)  # 100 MB / 10 MB/s, seen at a poll
    assert p.peak_in == {3: pytest.approx(10 * MB)}
    assert p.peak_out == {1: pytest.approx(10 * MB)}
    assert p.bytes_total == 100 * MB
    assert p.samples[-1].bytes_done == 100 * MB and p.samples[-1].pending == 0


def test_incoming_limit_serialises_moves_into_one_broker():
    model = cluster([50 * MB] * 4)
    plan = ReassignmentPlan.from_assignment({TP("t", i): (1, 3) for i in range(4)})
    one = predict(model, plan, opts(incoming=1, poll=0.5))
    four = predict(model, plan, opts(incoming=4, poll=0.5))
    # One at a time: 4 x 5 s. Four at once share broker 3's 10 MB/s: 200 MB / 10 MB/s too,
    # but the follower throttle is per broker, so the total is the same; what differs is how
    # many are in flight at once.
    assert one.duration == pytest.approx(20.0, abs=2.0)
    assert four.duration == pytest.approx(20.0, abs=2.0)
    assert max(s.in_flight for s in one.samples) == 1
    assert max(s.in_flight for s in four.samples) == 4


def test_leader_throttle_is_shared_and_separate_leaders_run_in_parallel():
    model = cluster([100 * MB, 100 * MB], brokers=5)
    # Both partitions are led by broker 1: its 10 MB/s leader throttle is shared, 20 s.
    same = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3), TP("t", 1): (1, 4)})
    p = predict(model, same, opts(throttle=10 * MB, poll=1.0))
    assert p.duration == pytest.approx(20.0, abs=1.0)
    assert p.peak_out == {1: pytest.approx(10 * MB)}
    # Led by 1 and by 2 (partition 1 re-led by 2 first), each move has its own 10 MB/s: 10 s.
    model = ClusterModel(model.brokers.values(), [
        model.partitions[TP("t", 0)],
        Partition("t", 1, (2, 1), 2, (2, 1), size_bytes=100 * MB)])
    apart = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3), TP("t", 1): (2, 4)})
    p = predict(model, apart, opts(throttle=10 * MB, poll=1.0))
    assert p.duration == pytest.approx(10.0, abs=1.0)
    assert p.peak_in == {3: pytest.approx(10 * MB), 4: pytest.approx(10 * MB)}


def test_produce_traffic_lengthens_a_move():
    # The log grows at 5 MB/s while the new replica fetches at 10 MB/s: it catches up at
    # 100 MB / (10 - 5) MB/s = 20 s, not 10.
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3)})
    p = predict(cluster([100 * MB], traffic=5 * MB), plan, opts(poll=1.0))
    assert p.duration == pytest.approx(20.0, abs=1.0)


def test_a_plan_that_can_never_finish_is_refused_with_the_reason():
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3)})
    with pytest.raises(ValidationError, match="still be running"):
        predict(cluster([100 * MB], traffic=20 * MB), plan, opts(poll=60.0), horizon=3600)


def test_plan_against_another_cluster_is_refused():
    plan = ReassignmentPlan.from_assignment({TP("other", 0): (1, 3)})
    with pytest.raises(ValidationError):
        predict(cluster([MB]), plan, opts())


def test_round_trips_through_json_for_the_view():
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3)})
    p = predict(cluster([100 * MB]), plan, opts())
    back = Prediction.from_dict(p.to_dict())
    assert back.duration == p.duration and back.samples == p.samples
    assert back.peak_in == p.peak_in
    assert math.isclose(back.fraction_done_at(p.duration), 1.0)


def test_polls_that_would_see_nothing_are_skipped_without_changing_the_answer():
    # Both moves leave broker 1, whose 10 MB/s leader throttle they share: the 50 MB move is
    # done at 10 s (5 MB/s each), then the 100 GB move has the 10 MB/s to itself for its
    # remaining 99,950 MB: 10 + 9,995 = 10,005 s. About 10,000 polls of 1 s, of which only the
    # ones after a catch-up see anything: the answer is what polling every second gives.
    model = cluster([100_000 * MB, 50 * MB])
    plan = ReassignmentPlan.from_assignment({TP("t", 0): (1, 3), TP("t", 1): (2, 4)})
    p = predict(model, plan, opts(throttle=10 * MB, poll=1.0))
    assert p.status == "completed"
    assert p.duration == pytest.approx(10_005.0, abs=1.0)
    assert p.polls < 20  # not 10,000
    # The small move is seen done at its own poll, not at the big one's.
    assert any(s.completed == 1 and s.t <= 11.0 for s in p.samples)
    assert p.samples[-1].bytes_done == p.bytes_total == 100_050 * MB
