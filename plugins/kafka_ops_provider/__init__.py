"""kafka-ops as Airflow sees it, laid out like a provider package.

hooks/ own connections (Kafka, ZooKeeper, Prometheus, the execution-state store); operators/ are
thin calls into ``kafka_ops.workflow``; triggers/ poll an execution's progress on the triggerer so
no worker slot waits for replication; notifications/ tell on-call an approval waits. The DAGs in
``dags/`` chain them like the runbook. Heavy imports (kafka_ops' backends, confluent-kafka) happen
inside ``execute`` so parsing a DAG stays cheap.
"""
