"""Topics: CreateTopics and CreatePartitions as Kafka's controller validates and runs them."""

from __future__ import annotations

import uuid

from kafka_ops.emulator.configs import validate_config
from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.replication import ReplicationModel
from kafka_ops.emulator.state import EmulatedPartition, partition_states
from kafka_ops.kafka_rules import topic_name_problem
from kafka_ops.model import NO_LEADER


class Topics(ReplicationModel):
    """Create topics and partitions with explicit assignments."""

    def _new_partition(self, topic: str, partition: int, replicas: list[int]) -> EmulatedPartition:
        """A partition as onNewPartitionCreation leaves it: leader = first live replica,
        ISR = live replicas."""
        live = [r for r in replicas if self._online(r)]
        p = EmulatedPartition(
            topic=topic, partition=partition, replicas=list(replicas), adding=[], removing=[],
            leader=live[0] if live else NO_LEADER, leader_epoch=0, partition_epoch=0, isr=live,
            log_end_bytes=0.0, replica_bytes={r: 0.0 for r in replicas}, bytes_in_per_sec=0.0,
            bytes_out_per_sec=0.0, synced_at=self._time,
        )
        self.partitions[p.tp] = p
        for r in replicas:
            self._by_broker[r].add(p.tp)
            self.log_dirs.place(p.tp, r)
        return p

    def create_topic(self, name: str, assignment: dict[int, list[int]],
                     configs: dict[str, str] | None = None, *,
                     topic_id: str | None = None) -> None:
        """Create a topic with an explicit assignment; ``topic_id`` keeps an id already chosen
        (a topic znode that carries one), otherwise a new random id is drawn, as Kafka does."""
        with self.lock:
            self.tick()
            if topic_name_problem(name) is not None:
                raise KafkaError("INVALID_TOPIC_EXCEPTION",
                                 f"Topic name {name!r} is illegal: it must be 1-249 characters "
                                 "of ASCII alphanumerics, '.', '_' and '-'.")
            if self._topic_exists(name):
                raise KafkaError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
            if not assignment:
                raise KafkaError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
            if sorted(assignment) != list(range(len(assignment))):
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 "partitions should be a consecutive 0-based integer sequence")
            for replicas in assignment.values():
                self._check_assignment(list(replicas))
            if len({len(r) for r in assignment.values()}) != 1:
                raise KafkaError("INVALID_REPLICA_ASSIGNMENT",
                                 "All partitions should have the same number of replicas")
            for key, value in (configs or {}).items():
                validate_config(key, value)
            self.topic_ids[name] = topic_id or str(uuid.uuid4())
            if configs:
                self._topic_configs[name] = dict(configs)
                self._invalidate_throttles(name)
            created = [self._new_partition(name, i, list(assignment[i]))
                       for i in sorted(assignment)]
            self._emit("topic_created", topic=name, topic_id=self.topic_ids[name],
                       configs=dict(configs or {}), partitions=partition_states(created))

    def create_partitions(self, topic: str, new_assignment: dict[int, list[int]]) -> None:
        with self.lock:
            self.tick()
            if not self._topic_exists(topic):
                raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION",
                                 f"The topic '{topic}' does not exist.")
            if any(tp.topic == topic and (p.adding or p.removing)
                   for tp, p in self.partitions.items()):
                raise KafkaError("REASSIGNMENT_IN_PROGRESS",
                                 f"A partition reassignment is in progress for the topic '{topic}'.")
            count = sum(1 for tp in self.partitions if tp.topic == topic)
            if not new_assignment or sorted(new_assignment) != list(
                    range(count, count + len(new_assignment))):
                raise KafkaError("INVALID_PARTITIONS",
                                 f"New partitions of topic '{topic}' must be numbered from "
                                 f"{count} without gaps, got {sorted(new_assignment)}.")
            for replicas in new_assignment.values():
                self._check_assignment(list(replicas))
            created = [self._new_partition(topic, i, list(new_assignment[i]))
                       for i in sorted(new_assignment)]
            self._emit("partitions_created", topic=topic, partitions=partition_states(created))
