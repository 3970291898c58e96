"""``kafka-ops plan rebalance|add-brokers|remove-brokers|demote|fix-offline|set-rf|migrate-pool|
replace-broker``: build a reassignment plan with the goal-based planner.

Every subcommand reads a cluster snapshot (and optionally a pools file), plans, and prints the
summary. ``--output PLAN.json`` writes the plan in Kafka's format and, next to it,
``PLAN.rollback.json``: the current replica lists of the partitions the plan changes, which is
both the way back and the state the plan was computed against (the executor's drift check).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from kafka_ops.charts import plot_broker_load
from kafka_ops.cli.common import add_cluster_args, add_json_flag, load_cluster, parse_int_list, print_json
from kafka_ops.errors import ValidationError
from kafka_ops.loads import load_source_from_spec, with_loads
from kafka_ops.model import ClusterModel
from kafka_ops.planner import (
    SOFT_GOALS,
    PlannerOptions,
    PlanResult,
    plan_add_brokers,
    plan_demote,
    plan_fix_offline,
    plan_migrate_pool,
    plan_rebalance,
    plan_remove_brokers,
    plan_replace_broker,
    plan_set_replication_factor,
)
from kafka_ops.pools import PoolSet, load_pools


def register(subparsers: argparse._SubParsersAction) -> None:
    def add(name: str, help_text: str, func: Callable[[argparse.Namespace], int], *,
            brokers: bool = False, topics: bool = False) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=help_text)
        add_cluster_args(parser)
        parser.add_argument("--pools", metavar="FILE", help="pools file: balance and place inside pools")
        if brokers:
            parser.add_argument("--brokers", required=True, metavar="IDS", help="broker ids, comma-separated")
        if topics:
            parser.add_argument("--topics", metavar="NAMES", help="only these topics, comma-separated")
        _common(parser)
        parser.set_defaults(func=func)
        return parser

    rebalance = add("rebalance", "balance replicas, leaders, disk and traffic inside each pool",
                    _rebalance, topics=True)
    rebalance.add_argument("--pool", metavar="NAME", help="only this pool's topics")
    add("add-brokers", "move load onto new brokers only", _add_brokers, brokers=True)
    add("remove-brokers", "drain brokers before decommissioning them", _remove_brokers, brokers=True)
    add("demote", "move preferred leadership off brokers; replicas stay", _demote, brokers=True)
    add("fix-offline", "re-create replicas of dead brokers on live ones", _fix_offline)
    set_rf = add("set-rf", "change topics' replication factor inside their pool", _set_rf)
    set_rf.add_argument("--topics", required=True, metavar="NAMES", help="topics, comma-separated")
    set_rf.add_argument("--rf", required=True, type=int, help="the new replication factor")
    add("migrate-pool", "move topics onto their pool's brokers (needs --pools)", _migrate_pool,
        topics=True)
    replace = add("replace-broker", "move every replica of one broker to another", _replace)
    replace.add_argument("--from", dest="old", required=True, type=int, metavar="ID", help="broker to empty")
    replace.add_argument("--to", dest="new", required=True, type=int, metavar="ID", help="broker to fill")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--goals", metavar="NAMES",
                        help="soft goals in priority order, comma-separated "
                             f"(default: {','.join(SOFT_GOALS)})")
    parser.add_argument("--threshold", action="append", default=[], metavar="GOAL=FRACTION",
                        help="balance threshold of a soft goal, e.g. disk=0.05 (repeatable)")
    parser.add_argument("--topic-swaps", action="store_true",
                        help="let per-topic goals swap replicas (two moves each) to spread topics")
    parser.add_argument("--max-moves", type=int, metavar="N", help="at most N replica moves")
    parser.add_argument("--max-bytes", type=int, metavar="B", help="at most B bytes of replicas moved")
    parser.add_argument("--max-leader-changes", type=int, metavar="N", help="at most N leadership changes")
    parser.add_argument("--throttle", type=float, metavar="BYTES_PER_SEC",
                        help="replication throttle, for the duration estimate")
    parser.add_argument("--output", "-o", metavar="PLAN.json",
                        help="write the plan here and its rollback to PLAN.rollback.json")
    parser.add_argument("--chart", metavar="FILE.png",
                        help="draw per-broker load (replicas, leaders, disk, bytes in) before and after")
    parser.add_argument("--loads", metavar="DIR|SPEC",
                        help="partition loads to plan with: a balance-analysis output directory "
                             "(spark_jobs/balance_analysis.py), or file:PATH, snapshots:DIR")
    add_json_flag(parser)


def _cluster(args: argparse.Namespace) -> ClusterModel:
    """The cluster state, with --loads laid over it (partitions it lacks keep their own loads)."""
    cluster = load_cluster(args)
    if getattr(args, "loads", None):
        cluster, _ = with_loads(cluster, load_source_from_spec(args.loads))
    return cluster


def _options(args: argparse.Namespace) -> PlannerOptions:
    thresholds = {}
    for item in args.threshold:
        name, sep, value = item.partition("=")
        if not sep or name not in SOFT_GOALS:
            raise ValidationError(f"--threshold {item!r}: expected GOAL=FRACTION with a soft goal name")
        try:
            thresholds[name] = float(value)
        except ValueError:
            raise ValidationError(f"--threshold {item!r}: {value!r} is not a number") from None
        if thresholds[name] < 0:
            raise ValidationError(f"--threshold {item!r}: must not be negative")
    for flag in ("max_moves", "max_bytes", "max_leader_changes"):
        value = getattr(args, flag)
        if value is not None and value < 0:
            raise ValidationError(f"--{flag.replace('_', '-')} must not be negative")
    if args.throttle is not None and args.throttle <= 0:
        raise ValidationError("--throttle must be a positive number of bytes per second")
    return PlannerOptions(
        goals=tuple(_names(args.goals)) if args.goals else None,
        thresholds=thresholds,
        max_moves=args.max_moves,
        max_bytes=args.max_bytes,
        max_leader_changes=args.max_leader_changes,
        topic_swaps=args.topic_swaps,
    )


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()] if text else []


def _pools(args: argparse.Namespace) -> PoolSet | None:
    return load_pools(args.pools) if args.pools else None


def _rebalance(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    result = plan_rebalance(cluster, _pools(args), _options(args), topics=_names(args.topics) or None,
                            pool=args.pool)
    return _report(args, cluster, result)


def _add_brokers(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    brokers = parse_int_list(args.brokers, "--brokers")
    return _report(args, cluster, plan_add_brokers(cluster, brokers, _pools(args), _options(args)))


def _remove_brokers(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    brokers = parse_int_list(args.brokers, "--brokers")
    return _report(args, cluster, plan_remove_brokers(cluster, brokers, _pools(args), _options(args)))


def _demote(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    brokers = parse_int_list(args.brokers, "--brokers")
    return _report(args, cluster, plan_demote(cluster, brokers, _pools(args), _options(args)))


def _fix_offline(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    return _report(args, cluster, plan_fix_offline(cluster, _pools(args), _options(args)))


def _set_rf(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    result = plan_set_replication_factor(cluster, _names(args.topics), args.rf, _pools(args),
                                         _options(args))
    return _report(args, cluster, result)


def _migrate_pool(args: argparse.Namespace) -> int:
    pools = _pools(args)
    if pools is None:
        raise ValidationError("migrate-pool needs a pools file (--pools)")
    cluster = _cluster(args)
    result = plan_migrate_pool(cluster, pools, _names(args.topics) or None, _options(args))
    return _report(args, cluster, result)


def _replace(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    return _report(args, cluster, plan_replace_broker(cluster, args.old, args.new, _pools(args),
                                                      _options(args)))


def rollback_path(output: str) -> Path:
    """PLAN.json -> PLAN.rollback.json (any other name gets .rollback.json appended)."""
    path = Path(output)
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    return path.with_name(stem + ".rollback.json")


def _report(args: argparse.Namespace, cluster: ClusterModel, result: PlanResult) -> int:
    plan = result.plan
    written = None
    if args.output and len(plan):
        plan.write(args.output)
        plan.rollback(cluster).write(rollback_path(args.output))
        written = args.output
    if args.chart:
        plot_broker_load(cluster, cluster.with_assignment(plan.replicas), args.chart,
                         title=f"Broker load before and after: {result.summary.mode}")
    if args.json:
        print_json({
            "summary": result.summary.to_dict(args.throttle),
            "plan": plan.to_dict(),
            "output": written,
            "rollback": str(rollback_path(written)) if written else None,
            "chart": args.chart,
        })
        return 0
    print(result.summary.format_text(args.throttle))
    if not len(plan):
        print("\nnothing to change: no plan written" if args.output else "\nnothing to change")
    elif written:
        print(f"\nplan written to {written}; rollback to {rollback_path(written)}")
    if args.chart:
        print(f"broker load chart: {args.chart}")
    else:
        sys.stdout.write("\n" + plan.to_json())
    return 0
