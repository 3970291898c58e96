"""A private ZooKeeper for tests: the emulator's own (``kafka_ops.emulator.zookeeper_server``).

It lives with the emulator because ``kafka-ops-emulator run --embedded-zookeeper`` starts one;
tests and harnesses import it from here.
"""

from kafka_ops.emulator.zookeeper_server import ZooKeeperServer, free_port

__all__ = ["ZooKeeperServer", "free_port"]
