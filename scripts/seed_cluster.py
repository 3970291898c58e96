#!/usr/bin/env python3
"""Seed a Kafka cluster with unbalanced topics (and, where the cluster accepts Produce, traffic)
so kafka-ops has something to rebalance: the docker-compose stack's first step.

Kafka spreads a new topic's replicas evenly, so an unbalanced cluster has to be made on
purpose: most partitions are created with an explicit replica assignment on a few "hot"
brokers, the first hot broker leading them all, and a few topics get most of the traffic.
Everything goes through the Admin API (and the producer), as any client of a real cluster::

    python scripts/seed_cluster.py --bootstrap-server 127.0.0.1:19092 --traffic-mb 200

Topics that exist already are left exactly as they are (re-running is safe). The summary at the
end is read back from the cluster: replicas and leaders per broker of the seeded topics.
Secrets for SASL/TLS clusters come from --command-config (Kafka tools' properties format) and
never appear in the output.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ops.cli.common import read_client_properties
from kafka_ops.errors import ValidationError

_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,200}$")  # Kafka's legal topic names (minus length)
MB = 1_000_000


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    rack: str | None


def hot_brokers(brokers: list[BrokerInfo], count: int) -> list[int]:
    """``count`` brokers in id order, taking one per rack before a second on any rack, so the
    hot partitions stay rack-aware (Kafka's own rule) while the load piles up on them."""
    chosen: list[int] = []
    remaining = sorted(brokers, key=lambda b: b.id)
    while remaining and len(chosen) < count:
        racks_used: set[str | None] = set()
        for b in list(remaining):
            if len(chosen) == count:
                break
            if b.rack is not None and b.rack in racks_used:
                continue
            chosen.append(b.id)
            racks_used.add(b.rack)
            remaining.remove(b)
    return chosen


def skewed_assignment(
    broker_ids: list[int], hot: list[int], partitions: int, rf: int, skew: float, offset: int
) -> list[list[int]]:
    """Replica lists for one topic: a ``skew`` fraction of the partitions on the hot brokers,
    all led by the first hot broker; the rest round-robin over every broker (Kafka-like)."""
    ids = sorted(broker_ids)
    hot_count = round(partitions * skew)
    assignment = []
    for p in range(partitions):
        if p < hot_count:
            followers = hot[1:]
            shift = p % len(followers) if followers else 0
            replicas = [hot[0]] + (followers[shift:] + followers[:shift])[: rf - 1]
        else:
            start = (offset + p) % len(ids)
            replicas = [ids[(start + i) % len(ids)] for i in range(rf)]
        assignment.append(replicas)
    return assignment


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties (security.protocol, sasl.*, ssl.*) as for Kafka's tools")
    p.add_argument("--prefix", default="seed.", help="topic name prefix (default %(default)s)")
    p.add_argument("--topics", type=int, default=6, help="topics to create (default %(default)s)")
    p.add_argument("--partitions", type=int, default=12, help="per topic (default %(default)s)")
    p.add_argument("--replication-factor", type=int, default=2, help="(default %(default)s)")
    p.add_argument("--hot-brokers", metavar="IDS",
                   help="comma-separated broker ids that get the skewed partitions "
                        "(default: as many as the replication factor, one per rack first)")
    p.add_argument("--skew", type=float, default=0.75,
                   help="fraction of each topic's partitions on the hot brokers (default %(default)s)")
    p.add_argument("--traffic-mb", type=float, default=0.0,
                   help="megabytes to produce after creating the topics; most of it to the first "
                        "third of the topics (default %(default)s: none)")
    p.add_argument("--traffic-timeout", type=float, default=120.0,
                   help="seconds to wait for the traffic to be acknowledged (default %(default)s)")
    p.add_argument("--timeout", type=float, default=30.0, help="Admin API request timeout, s")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p.parse_args(argv)


def validate(args: argparse.Namespace) -> None:
    if args.topics < 1 or args.partitions < 1 or args.replication_factor < 1:
        raise ValidationError("--topics, --partitions and --replication-factor must be >= 1")
    if not 0.0 <= args.skew <= 1.0:
        raise ValidationError(f"--skew must be between 0 and 1, not {args.skew}")
    if args.traffic_mb < 0 or args.traffic_timeout <= 0:
        raise ValidationError("--traffic-mb must be >= 0 and --traffic-timeout > 0")
    last = f"{args.prefix}{args.topics - 1}"
    if not _TOPIC_NAME.match(last) or last.strip(".") == "":
        raise ValidationError(f"--prefix {args.prefix!r} makes illegal topic names such as {last!r}")


def client_config(args: argparse.Namespace) -> dict[str, str]:
    config = read_client_properties(args.command_config) if args.command_config else {}
    config["bootstrap.servers"] = args.bootstrap_server
    config.setdefault("log_level", "5")  # librdkafka: notices and worse; no info chatter
    return config


def describe_brokers(admin: AdminClient, timeout: float) -> list[BrokerInfo]:
    cluster = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 5)
    return [BrokerInfo(n.id, n.rack) for n in cluster.nodes]


def create_topics(
    admin: AdminClient, plans: dict[str, list[list[int]]], timeout: float
) -> tuple[list[str], list[str]]:
    """Creates the topics that do not exist yet; returns (created, already there)."""
    existing = set(admin.list_topics(timeout=timeout).topics)
    todo = {t: a for t, a in plans.items() if t not in existing}
    created: list[str] = []
    if todo:
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=len(a), replica_assignment=a) for t, a in todo.items()],
            request_timeout=timeout)
        errors = []
        for topic, future in futures.items():
            try:
                future.result(timeout=timeout + 5)
                created.append(topic)
            except KafkaException as e:
                errors.append(f"{topic}: {e.args[0].str() if e.args else e}")
        if errors:
            raise RuntimeError("the cluster refused to create topics (the others were created; "
                               "a re-run leaves them and retries these): " + "; ".join(errors))
    return sorted(created), sorted(set(plans) - set(todo))


class _ClientLog(logging.Handler):
    """librdkafka's log: remembers a broker refusing every Produce version (a cluster that
    does not serve Produce) so seeding stops at once instead of timing out; passes warnings
    and errors on to stderr once each."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.no_produce: str | None = None
        self._seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "No viable ProduceRequest" in message:
            self.no_produce = self.no_produce or message.split(": ", 2)[-1]
        elif record.levelno >= logging.WARNING and message not in self._seen:
            self._seen.add(message)
            print(f"seed: kafka client: {message}", file=sys.stderr)


def _client_logger() -> tuple[logging.Logger, _ClientLog]:
    handler = _ClientLog()
    logger = logging.getLogger(f"seed.rdkafka.{id(handler)}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger, handler


def produce(config: dict[str, str], topics: list[str], total_mb: float, timeout: float) -> dict:
    """Sends ``total_mb`` of 1 KB records: half to the first third of the topics (hot
    topics), the rest spread over all. Raises when the cluster acknowledges none of it, and at
    once when its brokers do not serve Produce at all."""
    hot = topics[: max(1, len(topics) // 3)]
    record = os.urandom(1024)  # incompressible, so the bytes land on disk as sent
    count = int(total_mb * MB / len(record))
    logger, log = _client_logger()
    producer = Producer({**config, "linger.ms": 20, "acks": "all", "logger": logger,
                         "message.timeout.ms": int(timeout * 1000)})

    def refuse_if_no_produce() -> None:
        if log.no_produce:
            producer.purge()
            raise RuntimeError(
                f"the cluster does not serve Produce ({log.no_produce}); the topics and their "
                "assignments are seeded, traffic is not (the kafka-ops emulator has no data "
                "path: traffic needs a real Kafka)")
    delivered, failed = Counter(), Counter()
    first_error: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is None:
            delivered[msg.topic()] += 1
        else:
            failed[msg.topic()] += 1
            if not first_error:
                first_error.append(err.str())

    started = time.monotonic()
    for i in range(count):
        turn = i // 2  # even records go round the hot topics, odd ones round all topics
        topic = hot[turn % len(hot)] if i % 2 == 0 else topics[turn % len(topics)]
        while True:
            try:
                producer.produce(topic, record, key=str(i).encode(), on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: let deliveries drain
                producer.poll(0.5)
                refuse_if_no_produce()
        if i % 1000 == 0:
            producer.poll(0)
            refuse_if_no_produce()
            if sys.stderr.isatty():
                print(f"\rseed: produced {i * len(record) / MB:.1f} / {total_mb:g} MB",
                      end="", file=sys.stderr)
    deadline = time.monotonic() + timeout + 5
    left = len(producer)
    while left and time.monotonic() < deadline:
        left = producer.flush(0.5)
        refuse_if_no_produce()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    sent = sum(delivered.values())
    if count and sent == 0:
        why = first_error[0] if first_error else f"{left} records still unacknowledged"
        raise RuntimeError(f"the cluster acknowledged none of {count} records within "
                           f"{timeout:g}s ({why}); it may not serve Produce")
    return {"records": count, "delivered": sent, "failed": sum(failed.values()),
            "undelivered": left, "megabytes": round(sent * len(record) / MB, 3),
            "per_topic": dict(sorted(delivered.items())),
            "seconds": round(time.monotonic() - started, 2),
            "first_error": first_error[0] if first_error else None}


def placement(admin: AdminClient, topics: list[str], timeout: float) -> dict:
    """Replicas and leaders per broker of ``topics``, read back from the cluster."""
    from confluent_kafka import TopicCollection

    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=timeout)
    for future in futures.values():
        for p in future.result(timeout=timeout + 5).partitions:
            replicas.update(r.id for r in p.replicas)
            if p.leader is not None:
                leaders[p.leader.id] += 1
    return {"replicas": dict(sorted(replicas.items())), "leaders": dict(sorted(leaders.items()))}


def seed(args: argparse.Namespace) -> dict:
    validate(args)
    config = client_config(args)
    admin = AdminClient(config)
    brokers = describe_brokers(admin, args.timeout)
    ids = sorted(b.id for b in brokers)
    rf = args.replication_factor
    if rf > len(ids):
        raise ValidationError(f"--replication-factor {rf} is more than the {len(ids)} brokers")
    if args.hot_brokers:
        hot = [int(x) for x in args.hot_brokers.split(",") if x.strip()]
        unknown = sorted(set(hot) - set(ids))
        if unknown:
            raise ValidationError(f"--hot-brokers {unknown} are not brokers of this cluster {ids}")
        if len(set(hot)) < rf:
            raise ValidationError(f"--hot-brokers needs at least {rf} distinct brokers (the RF)")
        hot = list(dict.fromkeys(hot))
    else:
        hot = hot_brokers(brokers, rf)
    names = [f"{args.prefix}{i}" for i in range(args.topics)]
    plans = {t: skewed_assignment(ids, hot, args.partitions, rf, args.skew, offset=i)
             for i, t in enumerate(names)}
    created, existing = create_topics(admin, plans, args.timeout)
    summary: dict = {"brokers": ids, "hot_brokers": hot, "created": created,
                     "already_existed": existing}
    # Fresh topics need a moment before their leaders are known everywhere; placement is read
    # back from metadata, so wait (bounded) until every created partition has a leader.
    deadline = time.monotonic() + args.timeout
    while True:
        summary.update(placement(admin, names, args.timeout))
        if sum(summary["leaders"].values()) == args.topics * args.partitions:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("topics created, but not every partition has a leader after "
                               f"{args.timeout:g}s: {summary['leaders']}")
        time.sleep(0.2)
    if args.traffic_mb > 0:
        summary["traffic"] = produce(config, names, args.traffic_mb, args.traffic_timeout)
    return summary


def print_summary(summary: dict) -> None:
    print(f"seed: created {len(summary['created'])} topics, left "
          f"{len(summary['already_existed'])} existing ones as they were; "
          f"hot brokers {summary['hot_brokers']}")
    print("broker  replicas  leaders")
    for b in summary["brokers"]:
        print(f"{b:>6}  {summary['replicas'].get(b, 0):>8}  {summary['leaders'].get(b, 0):>7}")
    if "traffic" in summary:
        t = summary["traffic"]
        print(f"traffic: {t['megabytes']} MB acknowledged in {t['seconds']} s "
              f"({t['failed']} records failed)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = seed(args)
    except ValidationError as e:
        print(f"seed: error: {e}", file=sys.stderr)
        return 2
    except (KafkaException, RuntimeError) as e:
        print(f"seed: failed: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print_summary(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
