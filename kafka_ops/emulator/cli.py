"""``kafka-ops-emulator run`` (or ``python -m kafka_ops.emulator run``): an emulated Kafka
cluster in the foreground.

The emulator's command is its own program, not a ``kafka-ops`` subcommand: the product's CLI
never imports the emulator (an import contract in pyproject.toml keeps it so).

It loads a snapshot or a generator preset into the ZooKeeper it is given (or a private one with
``--embedded-zookeeper``), prints one line when the cluster is registered, and runs until
SIGTERM or SIGINT, then deregisters cleanly (its session ends, so every broker's ephemeral
znode goes, as when a real cluster stops).

``kafka-ops-emulator fault --control-socket PATH stop-broker 3`` (or ``fail-log-dir 3 /disk2``,
a JBOD disk failure) injects a fault into a running
emulator started with the same ``--control-socket``: a Unix socket (owner-only) carrying one
JSON request per connection, so faults never travel through ZooKeeper, which belongs to Kafka.
In-process, call ``Emulator.cluster.stop_broker`` and friends directly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import socketserver
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from kafka_ops.emulator.cluster import EmulatedCluster
from kafka_ops.emulator.runtime import Emulator
from kafka_ops.emulator.zookeeper_server import ZooKeeperServer
from kafka_ops.errors import KafkaOpsError, ValidationError
from kafka_ops.generator import PRESETS, generate_cluster
from kafka_ops.secrets import redact
from kafka_ops.snapshot import load_snapshot


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-ops-emulator",
        description="An emulated Kafka cluster (ZooKeeper mode or KRaft) for demos and tests.",
    )
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes as kafka-ops': 2 with one ``error:`` line for bad input or a refused fault."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help (0) or a refused option (2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return int(args.func(args) or 0)
    except KafkaOpsError as e:
        print(f"error: {redact(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run", help="run an emulated ZooKeeper-mode Kafka cluster until SIGTERM/SIGINT",
        description="Register an emulated Kafka cluster in ZooKeeper and act as its brokers "
                    "and controller (reassignments, elections, config changes).",
    )
    where = run.add_mutually_exclusive_group()
    where.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                       help="ZooKeeper connect string (the chroot is created if missing)")
    where.add_argument("--embedded-zookeeper", action="store_true",
                       help="start a private ZooKeeper on 127.0.0.1 and print its address")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="FILE", help="cluster snapshot JSON file")
    source.add_argument("--preset", choices=sorted(PRESETS), help="synthetic cluster preset")
    run.add_argument("--seed", type=int, default=0, help="generator seed (with --preset)")
    run.add_argument("--speed", type=float, default=1.0,
                     help="simulated seconds per real second (3600: an hour per second)")
    run.add_argument("--cluster-id", default="kafka-ops-emulator")
    run.add_argument("--mode", choices=("zk", "kraft"), default="zk",
                     help="zk: ZooKeeper-mode Kafka (needs a ZooKeeper); kraft: Kafka 4 "
                          "semantics, reached only through the wire protocol")
    run.add_argument("--wire", action="store_true",
                     help="also serve the Kafka protocol (Admin API) on 127.0.0.1, one "
                          "listener per broker (always on with --mode kraft)")
    run.add_argument("--metrics-port-base", type=int, metavar="PORT",
                     help="serve each broker's Prometheus /metrics on 127.0.0.1:PORT+index "
                          "(0: free ports); prints the targets")
    run.add_argument("--control-socket", metavar="PATH",
                     help="Unix socket accepting 'kafka-ops-emulator fault' requests")
    run.set_defaults(func=_run)

    fault = subparsers.add_parser(
        "fault", help="inject a fault into a running emulator (see run --control-socket)")
    fault.add_argument("--control-socket", metavar="PATH", required=True)
    kinds = fault.add_subparsers(dest="fault", required=True, metavar="FAULT")
    for name, text in (("stop-broker", "kill a broker (its znode goes, leaders move)"),
                       ("start-broker", "restart a stopped broker"),
                       ("slow-broker", "multiply a broker's replication bandwidth"),
                       ("fill-disk", "take a broker's log directory offline"),
                       ("fail-log-dir", "fail one log directory of a broker (JBOD disk failure)")):
        kind = kinds.add_parser(name, help=text)
        kind.add_argument("broker", type=int)
        if name == "fail-log-dir":
            kind.add_argument("path", help="the log directory, e.g. /var/kafka-logs-3")
            kind.add_argument("--clear", action="store_true", help="the directory is back online")
        if name == "slow-broker":
            kind.add_argument("factor", type=float, help="e.g. 0.1 = ten times slower, 1 = normal")
        if name == "fill-disk":
            kind.add_argument("--clear", action="store_true", help="the disk has room again")
    fault.set_defaults(func=_fault)


def _run(args: argparse.Namespace) -> int:
    if not args.speed > 0:
        raise ValidationError(f"--speed must be positive, got {args.speed}")
    wire = args.wire or args.mode == "kraft"
    if args.mode == "zk" and not (args.zookeeper or args.embedded_zookeeper):
        raise ValidationError("--mode zk needs --zookeeper or --embedded-zookeeper")
    if args.mode == "kraft" and (args.zookeeper or args.embedded_zookeeper):
        raise ValidationError("--mode kraft runs without ZooKeeper (Kafka 4 has none)")
    model = (load_snapshot(args.snapshot) if args.snapshot
             else generate_cluster(args.preset, seed=args.seed))
    base = args.metrics_port_base
    if base is not None and not (base == 0 or 1024 <= base <= 65535 - len(model.brokers)):
        raise ValidationError(f"--metrics-port-base {base}: give 0 (free ports) or a port from "
                              f"1024 leaving room for {len(model.brokers)} brokers")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = ZooKeeperServer().start() if args.embedded_zookeeper else None
    try:
        connect = server.connect_string + "/kafka" if server else args.zookeeper
        if server:
            print(f"embedded ZooKeeper: {connect}", flush=True)
        with Emulator(model, zookeeper=connect, mode=args.mode, speed=args.speed,
                      cluster_id=args.cluster_id, wire=wire,
                      metrics_port_base=args.metrics_port_base) as emulator:
            if wire:
                print(f"bootstrap servers: {emulator.bootstrap_servers}", flush=True)
            if emulator.metrics_face is not None:
                targets = ",".join(emulator.metrics_face.targets.values())
                print(f"metrics targets: {targets}", flush=True)
            control = _control_server(args.control_socket, emulator.cluster)
            try:
                print(f"emulator ready: {len(model.brokers)} brokers, {len(model.partitions)} "
                      f"partitions, {model.replica_count} replicas on {connect or 'the wire only'} "
                      f"(speed x{args.speed:g})", flush=True)
                stop.wait()
            finally:
                if control is not None:
                    control.shutdown()
                    control.server_close()
                    Path(args.control_socket).unlink(missing_ok=True)
    finally:
        if server:
            server.cleanup()
    print("emulator stopped", flush=True)
    return 0


# -- faults from another process --------------------------------------------------------------
def apply_fault(cluster: EmulatedCluster, request: dict) -> None:
    """One fault request: {"fault": "stop-broker", "broker": 3, ...}."""
    broker = request.get("broker")
    if not isinstance(broker, int):
        raise ValidationError(f"fault request needs an integer broker, got {broker!r}")
    fault = request.get("fault")
    if fault == "stop-broker":
        cluster.stop_broker(broker)
    elif fault == "start-broker":
        cluster.start_broker(broker)
    elif fault == "slow-broker":
        cluster.slow_broker(broker, float(request.get("factor", 1.0)))
    elif fault == "fill-disk":
        cluster.fill_disk(broker, bool(request.get("full", True)))
    elif fault == "fail-log-dir":
        path = request.get("path")
        if not isinstance(path, str):
            raise ValidationError(f"fail-log-dir needs a log directory path, got {path!r}")
        cluster.fail_log_dir(broker, path, bool(request.get("failed", True)))
    else:
        raise ValidationError(f"unknown fault {fault!r}")


def _control_server(path: str | None, cluster: EmulatedCluster):
    if path is None:
        return None

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            try:
                apply_fault(cluster, json.loads(self.rfile.readline()))
                reply: dict[str, object] = {"ok": True}
            except (ValueError, TypeError, AttributeError, KafkaOpsError) as e:
                reply = {"error": str(e)}
            self.wfile.write(json.dumps(reply).encode() + b"\n")

    Path(path).unlink(missing_ok=True)
    server = socketserver.ThreadingUnixStreamServer(path, Handler)
    os.chmod(path, 0o600)
    threading.Thread(target=server.serve_forever, name="emulator-control", daemon=True).start()
    return server


def _fault(args: argparse.Namespace) -> int:
    request: dict[str, object] = {"fault": args.fault, "broker": args.broker}
    if args.fault == "slow-broker":
        request["factor"] = args.factor
    if args.fault == "fill-disk":
        request["full"] = not args.clear
    if args.fault == "fail-log-dir":
        request["path"] = args.path
        request["failed"] = not args.clear
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(args.control_socket)
            s.sendall(json.dumps(request).encode() + b"\n")
            reply = json.loads(s.makefile().readline() or "{}")
    except OSError as e:
        raise KafkaOpsError(f"cannot reach the emulator at {args.control_socket}: {e}") from None
    if "error" in reply or not reply.get("ok"):
        raise KafkaOpsError(f"fault refused: {reply.get('error', 'no answer')}")
    print(f"{args.fault} {args.broker}" + (f" {args.path}" if args.fault == "fail-log-dir" else "")
          + ": done")
    return 0
