"""Spark balance analysis at production size: a day of 5-minute snapshots of the xl preset.

xl: 200 brokers, ~130,000 partitions; 24 h x 12 samples/h = 288 sample times, ~37 million
partition rows. For each fraction (1/8, 1/4, 1/2, 1 of the topics by default) the benchmark
writes the snapshot dataset with pyarrow (generation time, Parquet size), then runs
spark_jobs/balance_analysis.py through spark-submit on local[2] in a child process (wall time,
peak RSS of the JVM and its Python workers). Prints numbers; asserts nothing. The
target from the issue: the full day analysed in <= 5 minutes on a 2-core machine.

    .venv/bin/python benchmarks/bench_spark_analysis.py [--fractions 0.125,0.25,0.5,1]
        [--hours 24] [--driver-memory 4g] [--keep DIR] [--generate-only | --reuse]

With --keep DIR the datasets stay in DIR/xl-FRACTION; --generate-only writes them and stops;
--reuse analyses datasets already in DIR (generated once) instead of writing them again.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_ops.generator import generate_cluster  # noqa: E402
from kafka_ops.monitor.schema import TABLES, write_table  # noqa: E402

STEP = 300


def generate(root: Path, fraction: float, hours: float, seed: int = 0) -> tuple[int, float]:
    """Write the dataset; returns (partition rows, seconds)."""
    began = time.perf_counter()
    model = generate_cluster("xl", seed=seed)
    topics = sorted(model.topics)
    keep = set(topics[: max(1, int(len(topics) * fraction))])
    parts = [p for p in model if p.topic in keep]
    n = len(parts)
    topic = pa.array([p.topic for p in parts])
    pid = pa.array([p.partition for p in parts], pa.int32())
    leader = np.array([p.leader for p in parts], dtype=np.int32)
    replicas = pa.array([list(p.replicas) for p in parts], pa.list_(pa.int32()))
    isr = pa.array([len(p.isr) for p in parts], pa.int16())
    size0 = np.array([p.size_bytes for p in parts], dtype=np.float64)
    rate = np.array([p.bytes_in_per_sec for p in parts])
    out_rate = np.array([p.bytes_out_per_sec for p in parts])
    # (leader, topic) groups: the broker-topic rows carry the sum of their partitions' rates.
    keys = {}
    group = np.array([keys.setdefault((p.leader, p.topic), len(keys)) for p in parts])
    g_broker = pa.array([k[0] for k in keys], pa.int32())
    g_topic = pa.array([k[1] for k in keys])
    g_in, g_out = np.bincount(group, rate), np.bincount(group, out_rate)
    ids, counts = np.unique(leader, return_counts=True)
    leaders = {int(b): int(c) for b, c in zip(ids, counts, strict=True)}
    rng = np.random.default_rng(seed)
    t0 = (int(time.time()) // STEP) * STEP - int(hours * 3600)
    times = t0 + STEP * np.arange(int(hours * 3600 / STEP))
    rows = 0
    brokers = sorted(model.brokers.values(), key=lambda b: b.id)
    # An hour of sample times per write: 12 files per table instead of 288 (fewer, larger row
    # groups for Spark to read), and every column built with numpy/pyarrow, not per row.
    per_write = max(1, 3600 // STEP)
    for i in range(0, len(times), per_write):
        chunk = times[i:i + per_write]
        p_tables, g_tables = [], []
        for t in chunk:
            hour = (t % 86400) / 3600
            shape = ((1 + 0.5 * np.cos(2 * np.pi * (hour - 15) / 24))
                     * rng.lognormal(0, 0.15, len(keys)))
            size = (size0 + rate * (t - times[-1])).clip(0).astype(np.int64)
            p_tables.append(pa.table(
                [_times(t, n), topic, pid, pa.array(leader), replicas, isr, pa.array(size)],
                schema=TABLES["partitions"]))
            g_tables.append(pa.table(
                [_times(t, len(keys)), g_broker, g_topic, pa.array(g_in * shape),
                 pa.array(g_out * shape), pa.array(g_in * shape / 1000)],
                schema=TABLES["broker_topics"]))
            rows += n
        write_table(root, "partitions", "xl", pa.concat_tables(p_tables))
        write_table(root, "broker_topics", "xl", pa.concat_tables(g_tables))
        write_table(root, "brokers", "xl", pa.concat_tables(
            [_brokers_table(brokers, t, leaders) for t in chunk]))
    return rows, time.perf_counter() - began


def _times(t: int, n: int) -> pa.Array:
    return pa.array(np.full(n, t, dtype="datetime64[s]"), pa.timestamp("s", tz="UTC"))


def _brokers_table(brokers, t, leaders: dict[int, int]) -> pa.Table:
    cols = {f.name: [None] * len(brokers) for f in TABLES["brokers"]}
    cols["time"] = [int(t)] * len(brokers)
    cols["broker"] = [b.id for b in brokers]
    cols["rack"] = [b.rack for b in brokers]
    cols["alive"] = [True] * len(brokers)
    cols["up"] = [True] * len(brokers)
    cols["leader_count"] = [leaders.get(b.id, 0) for b in brokers]
    cols["disk_capacity"] = [b.capacity.disk_bytes for b in brokers]
    cols["network_in_capacity"] = [b.capacity.network_in_bytes_per_sec for b in brokers]
    cols["network_out_capacity"] = [b.capacity.network_out_bytes_per_sec for b in brokers]
    return pa.table(cols, schema=TABLES["brokers"])


def _count_rows(root: Path) -> int:
    import pyarrow.parquet as pq

    files = sorted((root / "partitions").rglob("*.parquet"))
    if not files:
        raise SystemExit(f"error: no dataset in {root} (generate it with --generate-only)")
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def analyse(root: Path, out: Path, driver_memory: str,
            rows: int) -> tuple[float, float, float, str]:
    """spark-submit on local[2] in a child: (seconds, CPU seconds, peak RSS MiB, summary line).

    CPU seconds say what the job costs when the machine is shared: wall time on a loaded
    machine overstates it. They are the larger of the reaped children's rusage and the sum over
    every process of the child's session (sampled from /proc: the Python workers Spark forks
    are not always reaped by it, so rusage alone can miss them); peak RSS likewise the larger
    of the largest child's and the session's summed resident memory (JVM + Python workers). Shuffle partitions are sized
    to the data (about a million partition rows each, at least 4): each task's rows are held
    in a Python worker's memory for the vectorised pass.
    """
    shuffle = max(4, round(rows / 1_000_000))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(ROOT),
               PYSPARK_PYTHON=sys.executable)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
           "--driver-memory", driver_memory, "--conf", "spark.driver.host=127.0.0.1",
           "--conf", f"spark.sql.shuffle.partitions={shuffle}",
           str(ROOT / "spark_jobs" / "balance_analysis.py"), "--snapshots", str(root),
           "--cluster", "xl", "--start", "0", "--end", str(int(time.time()) + 3600),
           "--output", str(out)]
    began = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr, text=True,
                                 start_new_session=True)
        seen: dict[int, float] = {}
        peak = 0.0
        while child.poll() is None:
            now = _session_usage(child.pid)
            seen.update({pid: cpu for pid, (cpu, _) in now.items()})
            peak = max(peak, sum(rss for _, rss in now.values()))
            time.sleep(0.5)
        took = time.perf_counter() - began
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    if child.returncode != 0:
        raise SystemExit(f"analysis failed:\n{err[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return (took, max(cpu, sum(seen.values())), max(after.ru_maxrss / 1024, peak / 2**20),
            out.strip().splitlines()[-1])


def _session_usage(session: int) -> dict[int, tuple[float, float]]:
    """(CPU seconds (user + system), resident bytes) of each live process of a session."""
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == session:  # field 6: session id
            found[int(pid)] = ((int(fields[11]) + int(fields[12])) / tick,
                               int(fields[21]) * page)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fractions", default="0.125,0.25,0.5,1")
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--keep", help="write datasets here and keep them")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--generate-only", action="store_true", help="write the datasets, no analysis")
    mode.add_argument("--reuse", action="store_true", help="analyse the datasets already in --keep")
    args = parser.parse_args()
    if (args.generate_only or args.reuse) and not args.keep:
        parser.error("--generate-only and --reuse need --keep DIR")
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-spark-"))
    print(f"{'fraction':>8} {'rows':>12} {'gen s':>8} {'parquet MiB':>12} {'analysis s':>11} "
          f"{'CPU s':>8} {'peak RSS MiB':>13} {'load avg':>9}", flush=True)
    try:
        for f in (float(x) for x in args.fractions.split(",")):
            root = base / f"xl-{f:g}"
            if args.reuse:
                rows, gen = _count_rows(root), float("nan")
            else:
                rows, gen = generate(root, f, args.hours)
            size = du(root) / 2**20
            if args.generate_only:
                print(f"{f:>8g} {rows:>12,} {gen:>8.1f} {size:>12.1f}", flush=True)
                continue
            took, cpu, peak, _ = analyse(root, base / f"out-{f:g}", args.driver_memory, rows)
            # The 1-minute load average at the end: the machine is shared, so wall time above
            # CPU time / 2 is time spent waiting for the other processes' cores.
            print(f"{f:>8g} {rows:>12,} {gen:>8.1f} {size:>12.1f} {took:>11.1f} {cpu:>8.1f} "
                  f"{peak:>13.0f} {os.getloadavg()[0]:>9.1f}", flush=True)
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
