"""``kafka-ops pools validate|show|assign|migrate``: resource pools on a cluster snapshot.

Every subcommand loads the pools file and validates it against the cluster first, so a pools
file that does not fit the cluster is reported before anything is computed or written.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafka_ops import inputs
from kafka_ops.assignment import RACK_AWARE_MODES, format_replica_assignment
from kafka_ops.cli.common import (
    add_cluster_args,
    add_json_flag,
    load_cluster,
    print_json,
)
from kafka_ops.cli.plan_files import write_files
from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.plan_report import format_summary, format_table, summarize_plan
from kafka_ops.pools import PoolSet, assign_in_pool, load_pools, migrate_to_pool


def register(subparsers: argparse._SubParsersAction) -> None:
    validate = subparsers.add_parser("validate", help="check a pools file against the cluster")
    _common_args(validate)
    validate.set_defaults(func=cmd_validate)

    show = subparsers.add_parser(
        "show", help="pools with their brokers, topics and misplaced partitions"
    )
    _common_args(show)
    show.set_defaults(func=cmd_show)

    assign = subparsers.add_parser(
        "assign", help="replica lists for a new topic (or new partitions) inside its pool"
    )
    _common_args(assign)
    assign.add_argument("--topic", required=True)
    assign.add_argument(
        "--partitions",
        type=inputs.partition_count,
        required=True,
        help="partition count of a new topic; for an existing topic the new total count",
    )
    assign.add_argument("--replication-factor", type=inputs.replication_factor,
                        help="required for a new topic")
    assign.add_argument(
        "--start-index",
        type=int,
        default=-1,
        help="Kafka's fixedStartIndex over the pool's brokers (random when omitted)",
    )
    assign.add_argument("--rack-aware-mode", choices=RACK_AWARE_MODES, default="enforced")
    assign.set_defaults(func=cmd_assign)

    migrate = subparsers.add_parser(
        "migrate",
        help="a reassignment plan moving topics into their pool (minimal, balanced moves)",
    )
    _common_args(migrate)
    migrate.add_argument("--pool", required=True, help="target pool")
    migrate.add_argument(
        "--topic",
        action="append",
        dest="topics",
        metavar="TOPIC",
        help="topic to migrate (repeatable); default: every topic the pools file puts in the pool",
    )
    migrate.add_argument(
        "--output", "-o", metavar="FILE", type=inputs.output_file,
        help="write the plan (Kafka's JSON) here"
    )
    migrate.add_argument("--rollback-output", metavar="FILE", type=inputs.output_file,
                         help="write the rollback plan here")
    migrate.set_defaults(func=cmd_migrate)


def _common_args(parser: argparse.ArgumentParser) -> None:
    add_cluster_args(parser)
    parser.add_argument("--pools", metavar="FILE", required=True, type=inputs.input_file("pools file"),
                        help="pools file (YAML or JSON)")
    add_json_flag(parser)


def _load(args: argparse.Namespace) -> tuple[ClusterModel, PoolSet]:
    cluster = load_cluster(args)
    pools = load_pools(args.pools)
    pools.validate(cluster)
    return cluster, pools


def _pool_report(cluster: ClusterModel, pools: PoolSet) -> dict[str, Any]:
    misplaced: dict[str, list[str]] = {name: [] for name in pools.pools}
    topics: dict[str, list[str]] = {name: [] for name in pools.pools}
    unpooled_topics = []
    for topic in cluster.topics:
        pool = pools.pool_for_topic(topic)
        if pool is None:
            unpooled_topics.append(topic)
        else:
            topics[pool.name].append(topic)
    for p in pools.misplaced(cluster):
        misplaced[pools.pool_for_topic(p.topic).name].append(str(p.tp))  # type: ignore[union-attr]
    report = []
    for name, pool in pools.pools.items():
        ids = sorted(pool.brokers)
        report.append(
            {
                "name": name,
                "brokers": ids,
                "topic_names": list(pool.topics),
                "topic_patterns": list(pool.topic_patterns),
                "racks": sorted({cluster.rack_of(b) or "-" for b in ids}),
                "topics": topics[name],
                "partitions": sum(len(cluster.topics[t]) for t in topics[name]),
                "replicas": sum(len(cluster.partitions_on(b)) for b in ids),
                "leaders": sum(len(cluster.leaders_on(b)) for b in ids),
                "misplaced_partitions": misplaced[name],
            }
        )
    return {
        "default_pool": pools.default_pool.name if pools.default_pool else None,
        "pools": report,
        "unpooled_brokers": [b for b in cluster.brokers if pools.pool_of_broker(b) is None],
        "unpooled_topics": unpooled_topics,
    }


def cmd_validate(args: argparse.Namespace) -> int:
    cluster, pools = _load(args)
    report = _pool_report(cluster, pools)
    misplaced = sum(len(p["misplaced_partitions"]) for p in report["pools"])
    if args.json:
        print_json(
            {
                "valid": True,
                "pools": len(pools.pools),
                "misplaced_partitions": misplaced,
                "unpooled_brokers": report["unpooled_brokers"],
                "unpooled_topics": report["unpooled_topics"],
            }
        )
        return 0
    print(
        f"pools OK: {len(pools.pools)} pools; {len(report['unpooled_brokers'])} unpooled brokers, "
        f"{len(report['unpooled_topics'])} unpooled topics, {misplaced} partitions with replicas "
        "outside their pool"
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    cluster, pools = _load(args)
    report = _pool_report(cluster, pools)
    if args.json:
        print_json(report)
        return 0
    print(
        format_table(
            (
                "pool",
                "brokers",
                "racks",
                "topics",
                "partitions",
                "replicas",
                "leaders",
                "misplaced",
            ),
            (
                (
                    p["name"] + (" (default)" if p["name"] == report["default_pool"] else ""),
                    ",".join(map(str, p["brokers"])),
                    ",".join(p["racks"]),
                    len(p["topics"]),
                    p["partitions"],
                    p["replicas"],
                    p["leaders"],
                    len(p["misplaced_partitions"]),
                )
                for p in report["pools"]
            ),
        )
    )
    print()
    for p in report["pools"]:
        print(f"{p['name']}: {', '.join(p['topics']) or '-'}")
    print(f"unpooled topics: {', '.join(report['unpooled_topics']) or '-'}")
    print(f"unpooled brokers: {','.join(map(str, report['unpooled_brokers'])) or '-'}")
    return 0


def cmd_assign(args: argparse.Namespace) -> int:
    cluster, pools = _load(args)
    assignment = assign_in_pool(
        cluster,
        pools,
        args.topic,
        args.partitions,
        args.replication_factor,
        rack_aware_mode=args.rack_aware_mode,
        fixed_start_index=args.start_index,
    )
    if args.json:
        print_json({str(p): reps for p, reps in sorted(assignment.items())})
        return 0
    pool = pools.pool_for_topic(args.topic)
    assert pool is not None  # assign_in_pool refuses unpooled topics
    verb = "new partitions of" if args.topic in cluster.topics else "new topic"
    brokers = ",".join(map(str, sorted(pool.brokers)))
    print(f"{verb} {args.topic!r} in pool {pool.name!r} (brokers {brokers})")
    print(
        format_table(
            ("partition", "replicas"),
            ((p, ",".join(map(str, reps))) for p, reps in sorted(assignment.items())),
        )
    )
    # kafka-topics --alter takes the full list and drops the existing partitions itself.
    full = {p.partition: list(p.replicas) for p in cluster.topics.get(args.topic, [])} | assignment
    print(f"--replica-assignment {format_replica_assignment(full)}")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    cluster, pools = _load(args)
    plan = migrate_to_pool(cluster, pools, args.pool, args.topics)
    if not len(plan):
        if args.json:
            print_json({"pool": args.pool, "plan": None})
        else:
            print(f"nothing to migrate: the topics already live in pool {args.pool!r}")
        return 0
    rollback = plan.rollback(cluster)
    summary = summarize_plan(plan, cluster)
    files = {}
    if args.output:
        files[args.output] = plan.to_json()
    if args.rollback_output:
        files[args.rollback_output] = rollback.to_json()
    if len(set(files)) != len([f for f in (args.output, args.rollback_output) if f]):
        raise ValidationError("--output and --rollback-output must be different files")
    write_files(files)
    if args.json:
        print_json(
            {
                "pool": args.pool,
                "plan": plan.to_dict(),
                "rollback": rollback.to_dict(),
                "summary": summary.to_dict(),
            }
        )
        return 0
    print(f"migrate {len(plan)} partitions of {len(plan.topics)} topics into pool {args.pool!r}\n")
    print(format_summary(summary))
    for path, what in ((args.output, "plan"), (args.rollback_output, "rollback plan")):
        if path:
            print(f"wrote {what} to {path}")
    return 0
