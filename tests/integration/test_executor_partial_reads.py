"""``describe_partitions``, the executor's poll read, on every backend against the emulator.

It must agree with ``describe_cluster`` on the partitions asked for (replicas, leader, ISR,
size where the backend reads sizes), leave out the rest and unknown partitions, and still
report every broker's liveness (the executor detects a dead broker from it).
"""

from __future__ import annotations

from kafka_ops.model import TopicPartition as TP


def test_describe_partitions_reads_only_what_is_asked(emulated, wait_until) -> None:
    backend = emulated.backend
    whole = backend.describe_cluster()
    asked = [TP("orders", 1), TP("events", 0), TP("orders", 99), TP("nope", 0)]
    part = backend.describe_partitions(asked)
    assert set(part.partitions) == {TP("orders", 1), TP("events", 0)}
    for tp, p in part.partitions.items():
        w = whole.partitions[tp]
        assert (p.replicas, p.leader, p.isr, p.size_bytes) == (w.replicas, w.leader, w.isr, w.size_bytes)
    assert {b: x.alive for b, x in part.brokers.items()} == {b: x.alive for b, x in whole.brokers.items()}
    assert backend.describe_partitions([]).partitions == {}

    emulated.cluster.stop_broker(6)
    emulated.wait_emulator(lambda c: not c.brokers[6].alive, "broker 6 stopped")

    def six_dead() -> bool:
        model = backend.describe_partitions([TP("events", 1)])
        return 6 in model.brokers and not model.brokers[6].alive

    wait_until(six_dead, what="describe_partitions showing broker 6 offline")
