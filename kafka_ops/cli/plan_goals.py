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

from kafka_ops import inputs
from kafka_ops.charts import plot_broker_load
from kafka_ops.cli.common import add_cluster_args, add_json_flag, load_cluster, parse_int_list, print_json
from kafka_ops.errors import ValidationError
from kafka_ops.load_spec import load_source_from_spec
from kafka_ops.loads import with_loads
from kafka_ops.model import ClusterModel
from kafka_ops.planner import SOFT_GOALS, PlanResult
from kafka_ops.pools import PoolSet, load_pools
from kafka_ops.workflow import OptionError, PlanRequest, plan_cluster, rollback_path, write_plan_pair
from kafka_ops.workflow.planning import check_throttle


def register(subparsers: argparse._SubParsersAction) -> None:
    def add(name: str, help_text: str, func: Callable[[argparse.Namespace], int], *,
            brokers: bool = False, topics: bool = False) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(name, help=help_text)
        add_cluster_args(parser)
        parser.add_argument("--pools", metavar="FILE", type=inputs.input_file("pools file"),
                            help="pools file: balance and place inside pools")
        if brokers:
            parser.add_argument("--brokers", required=True, metavar="IDS", type=inputs.broker_id_list,
                                help="broker ids, comma-separated")
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
    set_rf.add_argument("--rf", required=True, type=inputs.replication_factor,
                        help="the new replication factor")
    add("migrate-pool", "move topics onto their pool's brokers (needs --pools)", _migrate_pool,
        topics=True)
    replace = add("replace-broker", "move every replica of one broker to another", _replace)
    replace.add_argument("--from", dest="old", required=True, type=inputs.broker_id, metavar="ID",
                         help="broker to empty")
    replace.add_argument("--to", dest="new", required=True, type=inputs.broker_id, metavar="ID", help="broker to fill")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--goals", metavar="NAMES",
                        help="soft goals in priority order, comma-separated "
                             f"(default: {','.join(SOFT_GOALS)})")
    parser.add_argument("--threshold", action="append", default=[], metavar="GOAL=FRACTION",
                        help="balance threshold of a soft goal, e.g. disk=0.05 (repeatable)")
    parser.add_argument("--topic-swaps", action="store_true",
                        help="let per-topic goals swap replicas (up to two moves each) to spread topics "
                             "beyond the default budget (1.095x the plan's move and byte lower bounds)")
    parser.add_argument("--max-moves", type=inputs.non_negative_int, metavar="N",
                        help="at most N replica moves")
    parser.add_argument("--max-bytes", type=inputs.non_negative_int, metavar="B",
                        help="at most B bytes of replicas moved")
    parser.add_argument("--max-leader-changes", type=inputs.non_negative_int, metavar="N",
                        help="at most N leadership changes")
    parser.add_argument("--throttle", type=inputs.positive_rate, metavar="BYTES_PER_SEC",
                        help="replication throttle, for the duration estimate")
    parser.add_argument("--output", "-o", metavar="PLAN.json", type=inputs.output_file,
                        help="write the plan here and its rollback to PLAN.rollback.json")
    parser.add_argument("--chart", metavar="FILE.png", type=inputs.chart_file,
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


def _thresholds(items: list[str]) -> dict[str, float]:
    """--threshold GOAL=FRACTION, repeated, as a dict (the workflow checks the values)."""
    thresholds = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in SOFT_GOALS:
            raise ValidationError(f"--threshold {item!r}: expected GOAL=FRACTION with a soft goal name")
        thresholds[name] = inputs.fraction(value, f"--threshold {item!r}")
    return thresholds


def _request(args: argparse.Namespace, mode: str, **mode_options: object) -> PlanRequest:
    """The workflow's PlanRequest from the flags; errors name the flag."""
    try:
        check_throttle(args.throttle)
        return PlanRequest(
            mode=mode,
            goals=_names(args.goals) if args.goals else None,
            thresholds=_thresholds(args.threshold),
            max_moves=args.max_moves,
            max_bytes=args.max_bytes,
            max_leader_changes=args.max_leader_changes,
            topic_swaps=args.topic_swaps,
            **mode_options,  # type: ignore[arg-type]
        )
    except OptionError as e:
        raise ValidationError(e.as_flag()) from None


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()] if text else []


def _pools(args: argparse.Namespace) -> PoolSet | None:
    return load_pools(args.pools) if args.pools else None


def _plan(args: argparse.Namespace, request: PlanRequest) -> int:
    pools = _pools(args)
    if request.mode == "migrate-pool" and pools is None:
        raise ValidationError("migrate-pool needs a pools file (--pools)")
    cluster = _cluster(args)
    return _report(args, cluster, plan_cluster(cluster, request, pools))


def _rebalance(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "rebalance", topics=_names(args.topics) or None, pool=args.pool))


def _add_brokers(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "add-brokers", brokers=parse_int_list(args.brokers, "--brokers")))


def _remove_brokers(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "remove-brokers", brokers=parse_int_list(args.brokers, "--brokers")))


def _demote(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "demote", brokers=parse_int_list(args.brokers, "--brokers")))


def _fix_offline(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "fix-offline"))


def _set_rf(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "set-rf", topics=_names(args.topics), replication_factor=args.rf))


def _migrate_pool(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "migrate-pool", topics=_names(args.topics) or None))


def _replace(args: argparse.Namespace) -> int:
    return _plan(args, _request(args, "replace-broker", from_broker=args.old, to_broker=args.new))


def _report(args: argparse.Namespace, cluster: ClusterModel, result: PlanResult) -> int:
    plan = result.plan
    written = None
    if args.output and len(plan):
        write_plan_pair(plan, plan.rollback(cluster), args.output)
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
    elif len(plan) and not written:
        sys.stdout.write("\n" + plan.to_json())  # no file to read it from: show the plan
    return 0
