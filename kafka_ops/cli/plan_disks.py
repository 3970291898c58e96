"""``kafka-ops plan rebalance-disks|fix-failed-dirs``: plans over brokers' log directories (JBOD).

rebalance-disks moves replicas only between directories of their own broker (no directory over
``--disk-threshold`` of its capacity, every directory within ``--band`` of its broker's mean);
fix-failed-dirs moves the replicas of offline directories (KIP-112) to other brokers. Both
write Kafka's reassignment JSON with ``log_dirs``, which ``kafka-reassign-partitions
--execute`` also runs.
"""

from __future__ import annotations

import argparse
import sys

from kafka_ops import inputs
from kafka_ops.backends.log_dirs import describe_cluster_with_log_dirs
from kafka_ops.cli.common import add_cluster_args, add_json_flag, connect_backend, parse_int_list, print_json
from kafka_ops.errors import ValidationError
from kafka_ops.model import ClusterModel
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.planner.disks import plan_fix_failed_dirs, plan_rebalance_disks
from kafka_ops.snapshot import load_snapshot


def register(subparsers: argparse._SubParsersAction) -> None:
    disks = subparsers.add_parser(
        "rebalance-disks", help="balance log directories inside each broker (no replica leaves it)")
    add_cluster_args(disks)
    disks.add_argument("--disk-threshold", type=float, default=0.8, metavar="FRACTION",
                       help="no directory above this fraction of its capacity (default 0.8)")
    disks.add_argument("--band", type=float, default=0.05, metavar="FRACTION",
                       help="each directory within this of its broker's mean usage (default 0.05)")
    disks.add_argument("--brokers", type=inputs.broker_id_list, metavar="IDS",
                       help="only these brokers, comma-separated")
    _output(disks)
    disks.set_defaults(func=_rebalance_disks)
    failed = subparsers.add_parser(
        "fix-failed-dirs", help="move replicas of offline log directories to other brokers")
    add_cluster_args(failed)
    _output(failed)
    failed.set_defaults(func=_fix_failed_dirs)


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", "-o", metavar="PLAN.json", type=inputs.output_file,
                        help="write the plan (Kafka's reassignment JSON with log_dirs) here")
    add_json_flag(parser)


def _cluster(args: argparse.Namespace) -> ClusterModel:
    if getattr(args, "cluster", None):
        cluster = load_snapshot(args.cluster)
    else:
        backend = connect_backend(args)
        try:
            cluster = describe_cluster_with_log_dirs(backend)
        finally:
            backend.close()
    if not any(b.log_dirs for b in cluster.brokers.values()):
        raise ValidationError("the cluster state names no log directories (a snapshot needs "
                              "brokers' 'log_dirs' and partitions' 'log_dirs')")
    return cluster


def _rebalance_disks(args: argparse.Namespace) -> int:
    brokers = parse_int_list(args.brokers, "--brokers") if args.brokers else None
    result = plan_rebalance_disks(_cluster(args), threshold=args.disk_threshold, band=args.band,
                                  brokers=brokers)
    summary = {
        "moves": result.moves, "moved_bytes": result.moved_bytes,
        "spread_before": {"worst": result.before.worst_spread, "mean": result.before.mean_spread,
                          "over_threshold": len(result.before.over_threshold)},
        "spread_after": {"worst": result.after.worst_spread, "mean": result.after.mean_spread,
                         "over_threshold": len(result.after.over_threshold)},
    }
    return _finish(args, result.plan, summary,
                   f"{result.moves} intra-broker moves, {result.moved_bytes:,} bytes; directory "
                   f"usage spread worst {result.before.worst_spread:.3f} -> "
                   f"{result.after.worst_spread:.3f}, mean {result.before.mean_spread:.3f} -> "
                   f"{result.after.mean_spread:.3f}; directories over the threshold "
                   f"{len(result.before.over_threshold)} -> {len(result.after.over_threshold)}")


def _fix_failed_dirs(args: argparse.Namespace) -> int:
    plan = plan_fix_failed_dirs(_cluster(args))
    return _finish(args, plan, {"partitions": len(plan)},
                   f"{len(plan)} partitions with a replica in an offline log directory")


def _finish(args: argparse.Namespace, plan: ReassignmentPlan, summary: dict, line: str) -> int:
    if args.output:
        plan.write(args.output)
    if args.json:
        print_json({**summary, "plan": plan.to_dict()})
    else:
        print(line)
        if args.output:
            print(f"plan written to {args.output}")
        elif len(plan):
            sys.stdout.write(plan.to_json())
    return 0
