"""kafka_ops: plan and execute Kafka partition replica moves safely.

A plain library (no Airflow or Spark imports): the cluster model, Kafka's replica assignment,
resource pools, reassignment plans, the balance planner, the executor and the cluster backends.
"""

from kafka_ops.errors import KafkaOpsError, ValidationError
from kafka_ops.model import Broker, BrokerCapacity, ClusterModel, Partition, TopicPartition
from kafka_ops.plan import ReassignmentPlan

__all__ = [
    "Broker",
    "BrokerCapacity",
    "ClusterModel",
    "KafkaOpsError",
    "Partition",
    "ReassignmentPlan",
    "TopicPartition",
    "ValidationError",
]
