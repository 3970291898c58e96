"""A Kafka cluster emulator, reached only through Kafka's interfaces (znodes, wire protocol).

A test harness and demo cluster, not part of the library: ``kafka_ops`` and its CLI never import
it (import contracts in pyproject.toml). See docs/module-map.md for its modules.
"""
