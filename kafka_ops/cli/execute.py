"""``kafka-ops execute|verify|cancel|status``: run a plan on a live cluster, safely.

``execute PLAN`` runs (or resumes) the plan with a live progress bar and persists its state in
``--state-dir`` so that a killed process can be started again with the same command.
``verify PLAN`` is Kafka's verify (and clears throttles once nothing is moving), ``cancel``
stops the execution recorded in the state directory (Kafka's cancel semantics: moves in flight
are reverted, completed ones stay, a rollback plan is written) and ``status`` reads the state.

Exit codes: 0 done; 1 some moves failed / not yet complete; 2 bad input or refused;
3 paused (a broker went offline; run execute again to resume); 4 cancelled.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from tqdm import tqdm

from kafka_ops import inputs
from kafka_ops.backends.base import ClusterBackend
from kafka_ops.cli.common import add_backend_args, add_json_flag, connect_backend, print_json
from kafka_ops.errors import ValidationError
from kafka_ops.executor import ExecutionProgress, ExecutionReport, ExecutionState, Executor, StateStore
from kafka_ops.executor.strategies import STRATEGIES
from kafka_ops.plan import ReassignmentPlan
from kafka_ops.workflow import (
    ExecutionRequest,
    OptionError,
    cancel_execution,
    read_base,
    report_dict,
    run_execution,
    state_dict,
    verify_and_clear_throttles,
)

EXIT_CODES = {"completed": 0, "failed": 1, "paused": 3, "cancelled": 4}


def register(subparsers: argparse._SubParsersAction) -> None:
    execute = subparsers.add_parser(
        "execute", help="execute (or resume) a reassignment plan: batched, throttled, verified"
    )
    execute.add_argument("plan", metavar="PLAN", type=inputs.input_file("reassignment file"),
                         help="reassignment JSON (Kafka's format)")
    add_backend_args(execute)
    _state_arg(execute)
    execute.add_argument(
        "--base", metavar="FILE", type=inputs.input_file("base file"),
        help="the replicas the plan was computed against (default: PLAN.rollback.json next to "
        "PLAN when it exists); partitions that differ now are skipped or abort the run",
    )
    execute.add_argument("--throttle", type=inputs.throttle_rate, metavar="BYTES_PER_SEC",
                         help="replication throttle on every broker involved (default: none)")
    execute.add_argument("--replica-alter-log-dirs-throttle", type=inputs.throttle_rate,
                         metavar="BYTES_PER_SEC",
                         help="copy rate between log directories of a broker, for plans with "
                              "log_dirs (Kafka's flag of the same name; default: none)")
    execute.add_argument("--max-incoming", type=inputs.positive_int, default=2, metavar="N",
                         help="moves adding a replica to one broker at once (default 2)")
    execute.add_argument("--max-outgoing", type=inputs.positive_int, default=2, metavar="N",
                         help="moves removing a replica from one broker at once (default 2)")
    execute.add_argument("--max-in-flight", type=inputs.positive_int, default=100, metavar="N",
                         help="moves in flight cluster-wide (default 100)")
    execute.add_argument("--max-leader-changes", type=inputs.positive_int, default=200, metavar="N",
                         help="partitions per preferred leader election batch (default 200)")
    execute.add_argument("--strategy", action="append", choices=sorted(STRATEGIES),
                         help="order of moves; repeat to chain (default: topic, partition)")
    execute.add_argument("--one-replica-at-a-time", action="store_true",
                         help="never more than RF+1 replicas per partition during a move")
    execute.add_argument("--on-drift", choices=("skip", "abort"), default="skip",
                         help="partitions changed since planning: skip them (default) or abort")
    execute.add_argument("--allow-under-replicated", action="store_true",
                         help="start even though partitions are under-replicated")
    execute.add_argument("--no-elect-leaders", action="store_true",
                         help="skip the preferred leader election after the moves")
    execute.add_argument("--poll-interval", type=inputs.positive_seconds, default=5.0,
                         metavar="SECONDS")
    execute.add_argument("--stall-timeout", type=inputs.positive_seconds, default=1800.0,
                         metavar="SECONDS",
                         help="report a move as stalled after this long without progress")
    execute.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(execute)
    execute.set_defaults(func=cmd_execute)

    verify = subparsers.add_parser(
        "verify", help="Kafka's verify: per-partition state; clears throttles when all is done"
    )
    verify.add_argument("plan", metavar="PLAN", type=inputs.input_file("reassignment file"))
    add_backend_args(verify)
    verify.add_argument("--preserve-throttles", action="store_true",
                        help="do not remove throttles even when nothing is moving")
    add_json_flag(verify)
    verify.set_defaults(func=cmd_verify)

    cancel = subparsers.add_parser(
        "cancel", help="cancel the execution in --state-dir: revert moves in flight, clear throttles"
    )
    add_backend_args(cancel, required=False)  # not needed when an executor is running
    _state_arg(cancel)
    cancel.add_argument("--wait", type=inputs.non_negative_seconds, default=600.0, metavar="SECONDS",
                        help="how long to wait for a running executor to finish cancelling")
    add_json_flag(cancel)
    cancel.set_defaults(func=cmd_cancel)

    status = subparsers.add_parser("status", help="the execution recorded in --state-dir")
    _state_arg(status)
    add_json_flag(status)
    status.set_defaults(func=cmd_status)


def _state_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", default=".kafka-ops", metavar="DIR", type=inputs.state_dir,
                        help="where the execution state is kept (default .kafka-ops)")


def _connect(args: argparse.Namespace) -> ClusterBackend:
    if not (args.zookeeper or args.bootstrap_server):
        raise ValidationError("no executor is running: give --zookeeper or --bootstrap-server")
    return connect_backend(args)


# -- execute ------------------------------------------------------------------------------------
def execution_request(args: argparse.Namespace) -> ExecutionRequest:
    """The workflow's ExecutionRequest from execute's flags (errors name the flag)."""
    try:
        return ExecutionRequest(
            throttle=args.throttle,
            log_dirs_throttle=args.replica_alter_log_dirs_throttle,
            max_incoming=args.max_incoming,
            max_outgoing=args.max_outgoing,
            max_in_flight=args.max_in_flight,
            max_leader_changes=args.max_leader_changes,
            strategy=list(args.strategy or ("default",)),
            one_replica_at_a_time=args.one_replica_at_a_time,
            on_drift=args.on_drift,
            allow_under_replicated=args.allow_under_replicated,
            elect_leaders=not args.no_elect_leaders,
            poll_interval=args.poll_interval,
            stall_timeout=args.stall_timeout,
        )
    except OptionError as e:
        raise ValidationError(e.as_flag()) from None


def cmd_execute(args: argparse.Namespace) -> int:
    plan = ReassignmentPlan.read(args.plan)
    plan.validate()
    request = execution_request(args)
    base = read_base(args.plan, args.base)
    if base is None:
        print("note: no base file (PLAN.rollback.json): the drift check compares against the "
              "cluster as it is now", file=sys.stderr)
    bar = None if args.no_progress or args.json else ProgressBar()
    backend = _connect(args)
    try:  # log_dirs: after the reassignment, in the same recorded execution (Kafka's order)
        report = run_execution(backend, plan, args.state_dir, request, base=base,
                               on_progress=bar.update if bar else None, on_executor=_cancel_on_signals)
    finally:
        if bar:
            bar.close()
        backend.close()
    _print_report(report, args.json)
    return EXIT_CODES.get(report.status, 1)


class _cancel_on_signals:
    """First SIGINT/SIGTERM: cancel gracefully (moves reverted, throttles removed). Second
    SIGINT: leave at once; the state stays unfinished and execute/cancel picks it up."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    def _handle(self, signum: int, frame: Any) -> None:
        print("\ncancelling: reverting moves in flight and removing throttles "
              "(Ctrl-C again to leave them running and exit)", file=sys.stderr)
        self.executor.request_cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __enter__(self) -> None:
        self.saved = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.saved.items():
            signal.signal(s, handler)


class ProgressBar:
    """A tqdm bar over bytes (or new replicas when sizes are unknown), with counts and stalls.

    On a terminal the bar redraws in place; elsewhere (Airflow task logs, CI, a pipe) tqdm's
    carriage returns would pile up into one unreadable line, so a plain line is printed at
    most every ``log_interval`` seconds and whenever the phase changes.
    """

    def __init__(self, log_interval: float = 10.0) -> None:
        self.bar: tqdm | None = None
        self.interactive = sys.stderr.isatty()
        self.log_interval = log_interval
        self._logged: tuple[float, str] | None = None

    def update(self, p: ExecutionProgress) -> None:
        if not self.interactive:
            self._log(p)
            return
        if self.bar is None:
            sized = p.weight_total > 10 * max(p.total, 1)  # heuristics: bytes, not replica units
            self.bar = tqdm(total=p.weight_total, unit="B" if sized else " replicas",
                            unit_scale=sized, file=sys.stderr, dynamic_ncols=True)
        self.bar.total = p.weight_total
        self.bar.n = p.weight_done
        self.bar.set_description(p.phase)
        self.bar.set_postfix_str(_counts(p), refresh=False)
        self.bar.refresh()

    def _log(self, p: ExecutionProgress) -> None:
        now = time.monotonic()
        if self._logged and self._logged[1] == p.phase and now - self._logged[0] < self.log_interval:
            return
        self._logged = (now, p.phase)
        eta = f" ETA {p.eta_seconds:.0f} s" if p.eta_seconds is not None else ""
        print(f"{p.phase}: {p.fraction:.0%} {_counts(p)}{eta}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _counts(p: ExecutionProgress) -> str:
    text = f"done {p.completed}/{p.total} moving {p.in_flight} pending {p.pending}"
    if p.stalled:
        text += f" STALLED {len(p.stalled)} ({', '.join(map(str, p.stalled[:3]))})"
    if p.aborted:
        text += f" reverted {p.aborted}"
    if p.dead:
        text += f" failed {p.dead}"
    return text


def _print_report(report: ExecutionReport, as_json: bool) -> None:
    data = report_dict(report)
    if as_json:
        print_json(data)
        return
    print(f"status: {report.status}" + (f" — {report.message}" if report.message else ""))
    print(f"completed {len(report.completed)}, reverted {len(report.aborted)}, failed "
          f"{len(report.dead)}, not started {len(report.pending)}, skipped {len(report.skipped)} "
          f"in {report.elapsed:.0f} s")
    for tp, error in list(report.dead.items())[:10]:
        print(f"  failed {tp}: {error}")
    for s in report.skipped[:10]:
        print(f"  skipped {s.tp}: {s.reason}")
    if report.leaders is not None:
        print(f"preferred leader election: {len(report.leaders.elected)} partitions; "
              f"{len(report.leaders.misplaced)} not led by their preferred replica")
        for tp, (want, lead) in list(report.leaders.misplaced.items())[:10]:
            print(f"  {tp}: leader {lead}, preferred {want}")
    if report.log_dirs is not None:
        counts = report.log_dirs["counts"]
        moved = counts["completed"] - report.log_dirs["already"]
        print(f"log-dir moves: {moved} moved, {report.log_dirs['already']} already in place, "
              f"{counts['failed']} failed, {counts['cancelled']} cancelled, {counts['pending']} not started")
        for m in report.log_dirs["moves"]:
            if m["state"] in ("failed", "cancelled"):
                print(f"  {m['topic']}-{m['partition']} on broker {m['broker']}: {m['error']}")
    if report.rollback_path is not None:
        print(f"rollback plan for the {len(report.rollback)} partitions that moved: {report.rollback_path}")


# -- verify -------------------------------------------------------------------------------------
def cmd_verify(args: argparse.Namespace) -> int:
    plan = ReassignmentPlan.read(args.plan)
    plan.validate()
    backend = _connect(args)
    try:
        result = verify_and_clear_throttles(backend, plan, preserve_throttles=args.preserve_throttles)
    finally:
        backend.close()
    if args.json:
        print_json({"partitions": result.partitions, "throttles_cleared": result.throttles_cleared})
    else:
        for message in result.messages:
            print(message)
        if result.throttles_cleared:
            print("Clearing broker-level throttles and topic-level throttles.")
    return 0 if result.complete else 1


# -- cancel -------------------------------------------------------------------------------------
def cmd_cancel(args: argparse.Namespace) -> int:
    store = StateStore(args.state_dir)
    result = cancel_execution(store, (lambda: _connect(args)), wait=args.wait)
    state = store.load()
    assert state is not None
    if result.by == "executor":
        _print_state(state, args.json)  # the running executor cancelled: print its record
    else:
        assert state.runtime.report is not None
        _print_report(ExecutionReport.from_dict(state.runtime.report), args.json)
    return EXIT_CODES.get(result.status, 1)


# -- status -------------------------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> int:
    state = StateStore(args.state_dir).load()
    if state is None:
        raise ValidationError(f"no execution recorded in {args.state_dir}")
    _print_state(state, args.json)
    return 0


def _print_state(state: ExecutionState, as_json: bool) -> None:
    data = state_dict(state)
    counts = data["tasks"]
    if as_json:
        print_json(data)
        return
    print(f"status: {state.status}" + (f" — {state.message}" if state.message else ""))
    print("tasks: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v) + f"; skipped {len(state.skipped)}")
    for tp, info in list(data["in_flight"].items())[:20]:
        print(f"  moving {tp} -> {info['replicas']} (step {info['step']}/{info['steps']})")
    if data["log_dir_moves"]:
        print("log-dir moves: " + ", ".join(f"{k} {v}" for k, v in data["log_dir_moves"].items() if v))
        for replica, move in list(data["in_flight_log_dirs"].items())[:20]:
            print(f"  moving {replica}: {move['from']} -> {move['to']}")
    if state.dir_throttled:
        print(f"log-dir throttle recorded on broker(s) {','.join(map(str, sorted(state.dir_throttled)))}")
    if state.throttles.topics or state.throttles.brokers:
        print(f"throttles recorded on {len(state.throttles.topics)} topics and "
              f"{len(state.throttles.brokers)} brokers")
    print("updated: " + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(state.updated_at)))
