"""Every metric a snapshot reads, by the name Prometheus' JMX exporter gives the Kafka MBean.

Names follow ``example_configs/kafka-2_0_0.yml`` of prometheus/jmx_exporter (lowercased; per-second
meters' Count -> ``..._total``; gauges' Value -> the bare name; other meters' Count ->
``..._count``). docs/metrics.md has the same table for people; the compose helper's exporter
rules are tested against ``METRICS``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str  # our short name (snapshot column)
    name: str  # Prometheus metric name
    mbean: str  # Kafka MBean and attribute
    kind: str  # counter | gauge
    labels: tuple[str, ...]  # labels besides job/instance/broker


METRICS: tuple[Metric, ...] = (
    Metric("bytes_in", "kafka_server_brokertopicmetrics_bytesin_total",
           "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=* Count", "counter",
           ("topic",)),
    Metric("bytes_out", "kafka_server_brokertopicmetrics_bytesout_total",
           "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=* Count", "counter",
           ("topic",)),
    Metric("messages_in", "kafka_server_brokertopicmetrics_messagesin_total",
           "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=* Count", "counter",
           ("topic",)),
    Metric("replication_bytes_in", "kafka_server_brokertopicmetrics_replicationbytesin_total",
           "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec Count", "counter",
           ()),
    Metric("replication_bytes_out", "kafka_server_brokertopicmetrics_replicationbytesout_total",
           "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec Count", "counter",
           ()),
    Metric("log_size", "kafka_log_log_size",
           "kafka.log:type=Log,name=Size,topic=*,partition=* Value", "gauge",
           ("topic", "partition")),
    Metric("under_replicated", "kafka_server_replicamanager_underreplicatedpartitions",
           "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions Value", "gauge", ()),
    Metric("leader_count", "kafka_server_replicamanager_leadercount",
           "kafka.server:type=ReplicaManager,name=LeaderCount Value", "gauge", ()),
    Metric("partition_count", "kafka_server_replicamanager_partitioncount",
           "kafka.server:type=ReplicaManager,name=PartitionCount Value", "gauge", ()),
    Metric("offline_partitions", "kafka_controller_kafkacontroller_offlinepartitionscount",
           "kafka.controller:type=KafkaController,name=OfflinePartitionsCount Value", "gauge", ()),
    Metric("active_controller", "kafka_controller_kafkacontroller_activecontrollercount",
           "kafka.controller:type=KafkaController,name=ActiveControllerCount Value", "gauge", ()),
    Metric("idle_ns", "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count",
           "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent Count",
           "counter", ()),
)

BY_KEY = {m.key: m for m in METRICS}
NAMES = tuple(m.name for m in METRICS)
