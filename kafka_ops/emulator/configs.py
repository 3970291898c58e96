"""Topic and broker configs as a broker keeps them: replace, incremental alter, validation.

Throttle keys are validated with Kafka's rules (``kafka_ops.kafka_rules``, shared with the
backends) and refused with the broker's INVALID_CONFIG message; a change re-rates replication.
"""

from __future__ import annotations

from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.replication import ReplicationModel
from kafka_ops.kafka_rules import (
    THROTTLE_RATE_KEYS,
    THROTTLED_REPLICA_KEYS,
    THROTTLED_REPLICAS_FORMAT,
    is_throttle_rate,
    is_throttled_replica_list,
)


class ClusterConfigs(ReplicationModel):
    """Topic override maps and broker dynamic configs (None = the cluster-wide default)."""

    def topic_config(self, topic: str) -> dict[str, str]:
        with self.lock:
            return dict(self._topic_configs.get(topic, {}))

    def broker_config(self, broker_id: int | None) -> dict[str, str]:
        with self.lock:
            return dict(self._broker_configs.get(broker_id, {}))

    def set_topic_config(self, topic: str, config: dict[str, str]) -> None:
        """Replace the topic's override map (ZooKeeper face: /config/topics/<t> was re-read).
        Accepted before the topic exists: AdminZkClient writes the config first."""
        with self.lock:
            self.tick()
            for key, value in config.items():
                validate_config(key, value)
            self._topic_configs[topic] = dict(config)
            self._invalidate_throttles(topic)
            self._dirty = True
            self._emit("config_changed", topic=topic, entity_type="topics", entity_name=topic,
                       config=dict(config))

    def set_broker_config(self, broker: int | None, config: dict[str, str]) -> None:
        """Replace a broker's dynamic config map; None = the cluster default (<default>)."""
        with self.lock:
            self.tick()
            for key, value in config.items():
                validate_config(key, value)
            self._broker_configs[broker] = dict(config)
            self._dirty = True
            self._emit("config_changed", broker=broker, entity_type="brokers",
                       entity_name="<default>" if broker is None else str(broker),
                       config=dict(config))

    def incremental_alter_configs(self, resource_type: str, name: str,
                                  ops: list[tuple[str, int, str | None]]) -> None:
        """IncrementalAlterConfigs on a "topic" or "broker" ("" = default): SET=0, DELETE=1,
        APPEND=2, SUBTRACT=3 (list values are comma-separated). All or nothing."""
        with self.lock:
            self.tick()
            if resource_type == "topic":
                if not self._topic_exists(name):
                    raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION",
                                     f"The topic '{name}' does not exist.")
                config = self.topic_config(name)
            elif resource_type == "broker":
                try:
                    broker = None if name == "" else int(name)
                except ValueError:
                    raise KafkaError("INVALID_REQUEST", f"Invalid broker id {name!r}") from None
                config = self.broker_config(broker)
            else:
                raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {resource_type!r}")
            for key, op, value in ops:
                config = apply_op(config, key, op, value)
            if resource_type == "topic":
                self.set_topic_config(name, config)
            else:
                self.set_broker_config(broker, config)


def validate_config(key: str, value: str | None) -> None:
    """Refuse what a broker refuses for the throttle keys (kafka_ops.kafka_rules), in the
    broker's words; other keys are taken as given."""
    if value is None:
        return
    if key in THROTTLED_REPLICA_KEYS:
        if not is_throttled_replica_list(value):
            raise KafkaError(
                "INVALID_CONFIG",
                f"Invalid value {value} for configuration {key}: {key} {THROTTLED_REPLICAS_FORMAT}",
            )
    elif key in THROTTLE_RATE_KEYS and not is_throttle_rate(value):
        raise KafkaError(
            "INVALID_CONFIG",
            f"Invalid value {value} for configuration {key}: Not a number of type LONG",
        )


def apply_op(config: dict[str, str], key: str, op: int, value: str | None) -> dict[str, str]:
    config = dict(config)
    if op == 1:
        config.pop(key, None)
        return config
    if value is None:
        raise KafkaError("INVALID_REQUEST", f"Null value not supported for : {key}")
    if op == 0:
        config[key] = value
    elif op in (2, 3):
        items = [i for i in config.get(key, "").split(",") if i]
        given = [i for i in value.split(",") if i]
        if op == 2:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        config[key] = ",".join(items)
    else:
        raise KafkaError("INVALID_REQUEST", f"Unknown config operation {op} for {key}")
    validate_config(key, config[key])
    return config
