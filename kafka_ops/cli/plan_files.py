"""``kafka-ops plan show|diff|validate|rollback``: read a reassignment JSON file and report on it.

Plans are Kafka's reassignment files, so these commands also work on plans written by hand or
by Kafka's own ``--generate``. Nothing here changes a cluster; ``rollback`` only writes a file.
"""

from __future__ import annotations

import argparse
from collections import Counter

from kafka_ops.cli.common import add_cluster_args, add_json_flag, cluster_given, load_cluster, print_json
from kafka_ops.errors import ValidationError
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.plan_report import (
    diff_plan,
    format_diff,
    format_summary,
    format_table,
    rollback_plan,
    summarize_plan,
)
from kafka_ops.pools import check_plan_in_pools, load_pools
from kafka_ops.workflow.files import write_files


def register(subparsers: argparse._SubParsersAction) -> None:
    show = subparsers.add_parser(
        "show", help="the plan's partitions; with --cluster, per-broker counts before and after"
    )
    _plan_args(show, cluster_required=False)
    show.set_defaults(func=cmd_show)

    diff = subparsers.add_parser(
        "diff", help="what the plan changes: replicas added/removed, leaders, bytes to move"
    )
    _plan_args(diff, cluster_required=True)
    diff.set_defaults(func=cmd_diff)

    validate = subparsers.add_parser(
        "validate", help="Kafka's checks; with --cluster also unknown brokers/partitions"
    )
    _plan_args(validate, cluster_required=False)
    validate.add_argument(
        "--pools", metavar="FILE", help="also require every replica to be in its topic's pool"
    )
    validate.set_defaults(func=cmd_validate)

    rollback = subparsers.add_parser(
        "rollback",
        help="the reassignment JSON that puts the plan's partitions back as they are now",
    )
    _plan_args(rollback, cluster_required=True)
    rollback.add_argument("--output", "-o", metavar="FILE", help="write the rollback plan here")
    rollback.set_defaults(func=cmd_rollback)


def _plan_args(parser: argparse.ArgumentParser, cluster_required: bool) -> None:
    parser.add_argument("plan", metavar="PLAN", help="reassignment JSON file (Kafka's format)")
    add_cluster_args(parser, required=cluster_required)
    add_json_flag(parser)


def read_plan(path: str) -> ReassignmentPlan:
    plan = ReassignmentPlan.read(path)
    plan.validate()
    return plan


def cmd_show(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    if cluster_given(args):
        summary = summarize_plan(plan, load_cluster(args))
        if args.json:
            print_json({"plan": plan.to_dict(), "summary": summary.to_dict()})
        else:
            print(format_summary(summary))
        return 0
    replicas = Counter(b for reps in plan.replicas.values() for b in reps)
    leaders = Counter(reps[0] for reps in plan.replicas.values())
    if args.json:
        print_json(
            {
                "plan": plan.to_dict(),
                "brokers": [
                    {"broker": b, "replicas": replicas[b], "leaders": leaders[b]}
                    for b in sorted(replicas)
                ],
            }
        )
        return 0
    print(
        format_table(
            ("partition", "replicas"),
            ((str(tp), ",".join(map(str, reps))) for tp, reps in plan.replicas.items()),
        )
    )
    print()
    print(
        format_table(
            ("broker", "replicas", "preferred leaders"),
            ((b, replicas[b], leaders[b]) for b in sorted(replicas)),
        )
    )
    print(f"\n{len(plan)} partitions of {len(plan.topics)} topics")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    diff = diff_plan(plan, load_cluster(args))
    if args.json:
        print_json(diff.to_dict())
    else:
        print(format_diff(diff))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    if cluster_given(args):
        cluster = load_cluster(args)
        plan.validate_against(cluster)
    if args.pools:
        check_plan_in_pools(plan, load_pools(args.pools))
    checks = ["Kafka's rules"] + ["cluster"] * cluster_given(args) + ["pools"] * bool(args.pools)
    if args.json:
        print_json({"valid": True, "partitions": len(plan), "checked": checks})
    else:
        checked = ", ".join(checks)
        print(f"plan OK: {len(plan)} partitions of {len(plan.topics)} topics (checked: {checked})")
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    rollback = rollback_plan(plan, load_cluster(args))
    if args.output:
        write_files({args.output: rollback.to_json()})
        print(f"wrote rollback plan for {len(rollback)} partitions to {args.output}")
    elif args.json:
        print_json(rollback.to_dict())
    else:
        print(rollback.to_json(), end="")
    return 0
