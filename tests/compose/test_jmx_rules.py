"""The vendored JMX exporter rules give Kafka's MBeans exactly the metric names kafka-ops reads.

No JVM or Kafka runs here, so the exporter's matching is re-implemented from its source
(prometheus/jmx_exporter collector/.../JmxCollector.java, release line 1.6): each MBean
attribute becomes the string ``domain<k1=v1, k2=v2><>Attribute: value`` (key properties in the
ObjectName's own order, as Kafka registers them: type, name, then tags); every rule's pattern is
compiled as ``^.*(?:PATTERN).*$`` and must match that whole string; the first rule that matches
wins; the name is the rule's template with ``$n`` groups filled in, made safe (characters
outside ``[a-zA-Z0-9:_]`` become ``_``, runs of ``_`` collapse to one) and lower-cased under
``lowercaseOutputName``. The expected names below come from the project's contracts
(/work/wt/briefs/contracts.md: the names these rules are known to produce), not from this code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "docker" / "jmx-exporter"
RULE_FILES = ["kafka-2_0_0.yml", "kafka-kraft-3_0_0.yml"]


def _safe(name: str) -> str:
    out = ["_"] if name[:1].isdigit() else []
    for c in name:
        if c == "_" or not (c == ":" or c.isascii() and c.isalnum()):
            if not out or out[-1] != "_":
                out.append("_")
        else:
            out.append(c)
    return "".join(out)


def _java_template(template: str) -> str:
    """Java's ``$1`` group references as Python's ``\\g<1>``."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", template.replace("\\", "\\\\"))


class Exporter:
    """The rule-matching part of the JMX exporter's collector."""

    def __init__(self, path: Path) -> None:
        config = yaml.safe_load(path.read_text())
        self.lowercase = bool(config.get("lowercaseOutputName"))
        self.lowercase_labels = bool(config.get("lowercaseOutputLabelNames"))
        self.rules = [(re.compile(f"^.*(?:{r['pattern']}).*$"), r) for r in config["rules"]]

    def export(self, mbean: str, attribute: str, value: object = 1) -> tuple[str, dict] | None:
        domain, _, props = mbean.partition(":")
        keys = ", ".join(props.split(","))
        match_name = f"{domain}<{keys}><>{attribute}: {value}"
        for pattern, rule in self.rules:
            m = pattern.match(match_name)
            if not m:
                continue
            if "name" not in rule:
                pytest.fail(f"rule without a name matched {match_name}: default export is "
                            "not modelled here")
            name = _safe(m.expand(_java_template(rule["name"])))
            if self.lowercase:
                name = name.lower()
            labels = {}
            for k, v in (rule.get("labels") or {}).items():
                label = _safe(m.expand(_java_template(str(k))))
                if self.lowercase_labels:
                    label = label.lower()
                val = m.expand(_java_template(str(v)))
                if label and val:
                    labels[label] = val
            return name, labels
        return None


# Kafka's MBeans (as Kafka registers them: type, name, then tags) and the attribute a Prometheus
# user reads, with the metric the contracts name. Yammer meters expose Count (monotonic);
# gauges expose Value.
CONTRACT = [
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders", "Count",
     "kafka_server_brokertopicmetrics_bytesin_total", {"topic": "orders"}),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=orders", "Count",
     "kafka_server_brokertopicmetrics_bytesout_total", {"topic": "orders"}),
    ("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=orders", "Count",
     "kafka_server_brokertopicmetrics_messagesin_total", {"topic": "orders"}),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count",
     "kafka_server_brokertopicmetrics_bytesin_total", {}),
    ("kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec", "Count",
     "kafka_server_brokertopicmetrics_replicationbytesin_total", {}),
    ("kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec", "Count",
     "kafka_server_brokertopicmetrics_replicationbytesout_total", {}),
    ("kafka.log:type=Log,name=Size,topic=orders,partition=7", "Value",
     "kafka_log_log_size", {"topic": "orders", "partition": "7"}),
    ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value",
     "kafka_server_replicamanager_underreplicatedpartitions", {}),
    ("kafka.server:type=ReplicaManager,name=LeaderCount", "Value",
     "kafka_server_replicamanager_leadercount", {}),
    ("kafka.server:type=ReplicaManager,name=PartitionCount", "Value",
     "kafka_server_replicamanager_partitioncount", {}),
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value",
     "kafka_controller_kafkacontroller_offlinepartitionscount", {}),
    ("kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value",
     "kafka_controller_kafkacontroller_activecontrollercount", {}),
    ("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate",
     "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", {}),
    ("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "Count",
     "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count", {}),
]


@pytest.fixture(scope="module", params=RULE_FILES)
def exporter(request: pytest.FixtureRequest) -> Exporter:
    return Exporter(RULES_DIR / request.param)


@pytest.mark.parametrize("mbean,attribute,name,labels", CONTRACT,
                         ids=[f"{c[2]}{sorted(c[3])}" for c in CONTRACT])
def test_rules_give_the_contract_names(exporter: Exporter, mbean: str, attribute: str,
                                       name: str, labels: dict) -> None:
    assert exporter.export(mbean, attribute, 123.0) == (name, labels)


def test_the_engine_is_the_exporters_own_special_cases(exporter: Exporter) -> None:
    """Checks of this re-implementation against behaviour the rules file itself documents:
    rule order (the clientId special case wins over the generic gauge), empty groups dropping
    a label, percentile summaries."""
    fetch = ("kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-1,"
             "topic=orders,partition=0")
    assert exporter.export(fetch, "Value") == (
        "kafka_server_fetcherlagmetrics_consumerlag",
        {"clientId": "ReplicaFetcherThread-0-1", "topic": "orders", "partition": "0"})
    assert exporter.export(
        "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile"
    ) == ("kafka_network_requestmetrics_totaltimems", {"request": "Produce", "quantile": "0.99"})
    assert exporter.export("java.lang:type=Memory", "HeapMemoryUsage") is None


def test_every_metric_the_snapshot_reads_is_produced(exporter: Exporter) -> None:
    """kafka_ops.monitor.names lists each metric the snapshot reads with the MBean it comes
    from: through the vendored rules that MBean must give that name and those labels."""
    from kafka_ops.monitor.names import METRICS

    samples = {"topic": "orders", "partition": "3"}
    for metric in METRICS:
        object_name, attribute = metric.mbean.rsplit(" ", 1)
        domain, _, props = object_name.partition(":")
        filled = ",".join(f"{k}={samples[k] if v == '*' else v}"
                          for k, v in (p.split("=", 1) for p in props.split(",")))
        exported = exporter.export(f"{domain}:{filled}", attribute, 42.0)
        assert exported is not None, f"{metric.key}: no rule matches {metric.mbean}"
        name, labels = exported
        assert name == metric.name, f"{metric.key}: {metric.mbean} exports {name}"
        assert set(labels) == set(metric.labels), f"{metric.key}: labels {labels}"
        assert all(labels[k] == samples[k] for k in labels)
