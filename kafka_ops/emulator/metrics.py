"""Broker metrics as a real Kafka broker exposes them through Prometheus' JMX exporter.

Each emulated broker serves ``GET /metrics`` on 127.0.0.1 in Prometheus' text format, with the
names the JMX exporter's example Kafka config (``example_configs/kafka-2_0_0.yml``) gives Kafka's
MBeans (``jmx_name`` applies its rules; docs/metrics.md has the table). Our own code reads these
through Prometheus only, never from here.

Traffic: a partition's bytes-in/out rates in the cluster model are its daily mean. ``Traffic``
shapes them per topic over wall-clock time — a diurnal curve, bursts, log-normal noise — as
piecewise-constant multipliers per ``step`` seconds drawn from one seed, so any instant's counter
value is an exact integral: a backfilled day and the live scrapes that follow agree, counters are
monotonic (``rate()`` works), and the true mean rate of any window is known for checking
estimates (``Traffic.mean_multiplier``). Reassignments show as replication traffic: the bytes a
lagging replica copies count on its ReplicationBytesIn and its leader's ReplicationBytesOut. A
stopped broker closes its listener (connection refused), as a dead process would.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO

import numpy as np

from kafka_ops.emulator.cluster import EmulatedCluster, Event
from kafka_ops.model import NO_LEADER, TopicPartition

log = logging.getLogger(__name__)

# CPU proxy for the request-handler idle ratio: bytes per second one broker moves at 100% busy.
BUSY_BYTES_PER_SEC = 400 * 1024**2


def jmx_name(domain: str, mbean_type: str, name: str, attribute: str) -> str:
    """The metric name kafka-2_0_0.yml's rules give an MBean attribute (lowercased).

    ``...PerSec`` meters' ``Count`` -> ``kafka_<domain>_<type>_<name>_total`` (name without
    PerSec); gauges' ``Value`` -> ``kafka_<domain>_<type>_<name>``; other meters' ``Count`` ->
    ``..._count``. Key properties other than type and name become labels unchanged.
    """
    if attribute == "Count" and "PerSec" in name:
        return f"kafka_{domain}_{mbean_type}_{name[: name.index('PerSec')]}_total".lower()
    if attribute == "Value":
        return f"kafka_{domain}_{mbean_type}_{name}".lower()
    if attribute == "Count":
        return f"kafka_{domain}_{mbean_type}_{name}_count".lower()
    raise ValueError(f"no kafka-2_0_0.yml rule for attribute {attribute!r}")


BYTES_IN = jmx_name("server", "BrokerTopicMetrics", "BytesInPerSec", "Count")
BYTES_OUT = jmx_name("server", "BrokerTopicMetrics", "BytesOutPerSec", "Count")
MESSAGES_IN = jmx_name("server", "BrokerTopicMetrics", "MessagesInPerSec", "Count")
REPLICATION_BYTES_IN = jmx_name("server", "BrokerTopicMetrics", "ReplicationBytesInPerSec", "Count")
REPLICATION_BYTES_OUT = jmx_name("server", "BrokerTopicMetrics", "ReplicationBytesOutPerSec",
                                 "Count")
LOG_SIZE = jmx_name("log", "Log", "Size", "Value")
UNDER_REPLICATED = jmx_name("server", "ReplicaManager", "UnderReplicatedPartitions", "Value")
LEADER_COUNT = jmx_name("server", "ReplicaManager", "LeaderCount", "Value")
PARTITION_COUNT = jmx_name("server", "ReplicaManager", "PartitionCount", "Value")
OFFLINE_PARTITIONS = jmx_name("controller", "KafkaController", "OfflinePartitionsCount", "Value")
ACTIVE_CONTROLLER = jmx_name("controller", "KafkaController", "ActiveControllerCount", "Value")
IDLE_PERCENT = jmx_name("server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent", "Count")

COUNTERS = (BYTES_IN, BYTES_OUT, MESSAGES_IN, REPLICATION_BYTES_IN, REPLICATION_BYTES_OUT,
            IDLE_PERCENT)
GAUGES = (LOG_SIZE, UNDER_REPLICATED, LEADER_COUNT, PARTITION_COUNT, OFFLINE_PARTITIONS,
          ACTIVE_CONTROLLER)


def message_size(topic: str) -> int:
    """A topic's mean message size (256 B - 4 KiB), fixed per name: MessagesIn = BytesIn / it."""
    return 256 + zlib.crc32(topic.encode()) % 3841


class Traffic:
    """Per-topic multipliers of the model's mean rates over wall-clock time, reproducibly.

    Bucket k covers [origin + k*step, origin + (k+1)*step). Its multiplier for a topic is
    diurnal(UTC hour) x burst x noise; the diurnal curve and the noise average 1, so a whole day
    carries about the model's rate times (1 + the burst share).
    """

    def __init__(self, topics: Iterable[str], origin: float, *, seed: int = 0, step: float = 60.0,
                 diurnal_amplitude: float = 0.5, peak_hour: float = 15.0, noise: float = 0.15,
                 burst_chance: float = 0.003, burst_factor: tuple[float, float] = (2.0, 4.0),
                 burst_buckets: tuple[int, int] = (3, 20)) -> None:
        self.topics = list(topics)
        self.index = {t: i for i, t in enumerate(self.topics)}
        self.origin, self.step, self.seed = float(origin), float(step), seed
        self.amplitude, self.peak_hour, self.noise = diurnal_amplitude, peak_hour, noise
        self.burst_chance, self.burst_factor, self.burst_buckets = (
            burst_chance, burst_factor, burst_buckets)
        n = len(self.topics)
        self._mult = np.empty((n, 0))
        self._cum = np.zeros((n, 1))  # integral up to the start of each bucket
        self._burst_left = np.zeros(n, dtype=np.int64)
        self._burst_mult = np.ones(n)
        self._chunk = 0
        self._lock = threading.Lock()

    def _extend(self, buckets: int) -> None:
        """Draw multipliers up to bucket ``buckets`` (chunks of a day, each from its own seed)."""
        n = len(self.topics)
        while self._mult.shape[1] < buckets:
            size = max(1, int(86400 / self.step))
            rng = np.random.default_rng([self.seed, self._chunk])
            self._chunk += 1
            k0 = self._mult.shape[1]
            mids = self.origin + (np.arange(k0, k0 + size) + 0.5) * self.step
            hours = (mids % 86400) / 3600.0
            diurnal = 1 + self.amplitude * np.cos(2 * math.pi * (hours - self.peak_hour) / 24)
            sigma = self.noise
            noise = np.exp(rng.normal(-sigma * sigma / 2, sigma, (n, size)))
            starts = rng.random((n, size)) < self.burst_chance
            lengths = rng.integers(*self.burst_buckets, size=(n, size), endpoint=True)
            factors = rng.uniform(*self.burst_factor, size=(n, size))
            burst = np.ones((n, size))
            for j in range(size):
                new = starts[:, j] & (self._burst_left == 0)
                self._burst_left[new] = lengths[new, j]
                self._burst_mult[new] = factors[new, j]
                on = self._burst_left > 0
                burst[on, j] = self._burst_mult[on]
                self._burst_left[on] -= 1
            mult = diurnal[None, :] * burst * noise
            cum = self._cum[:, -1:] + np.cumsum(mult, axis=1) * self.step
            self._mult = np.concatenate([self._mult, mult], axis=1)
            self._cum = np.concatenate([self._cum, cum], axis=1)

    def integral(self, t: float) -> np.ndarray:
        """Per topic, the integral of the multiplier from the origin to t (seconds of mean rate)."""
        x = (max(t, self.origin) - self.origin) / self.step
        k = int(x)
        with self._lock:
            self._extend(k + 1)
            return self._cum[:, k] + self._mult[:, k] * (x - k) * self.step

    def mean_multiplier(self, start: float, end: float) -> np.ndarray:
        """Per topic, the mean multiplier over [start, end]: true mean rate = model rate x it."""
        if end <= start:
            raise ValueError("the window must have end > start")
        return (self.integral(end) - self.integral(start)) / (end - start)


@dataclass
class _Topology:
    """What the counters need from the cluster at one instant, as per-broker x topic arrays."""

    lead_in: np.ndarray  # bytes-in rate of partitions each broker leads, per topic
    lead_out: np.ndarray  # consumer bytes-out rate on the leader
    lead_msgs: np.ndarray  # messages-in rate
    follow_in: np.ndarray  # replication bytes-in rate of in-sync followers
    lead_repl: np.ndarray  # replication bytes-out rate the leader serves its in-sync followers
    sizes: dict[int, list[tuple[str, int, float]]]  # broker -> (topic, partition, log bytes)
    leaders: np.ndarray
    partitions: np.ndarray
    under_replicated: np.ndarray
    offline: int
    controller: int
    lagging: dict[tuple[str, int, int], tuple[int, float]]  # (topic, p, replica) -> (leader, bytes)


class BrokerMetrics:
    """Counters of every broker of one emulated cluster, brought up to date on demand."""

    def __init__(self, cluster: EmulatedCluster, traffic: Traffic | None = None, *,
                 now: Callable[[], float] = time.time, history: float = 2 * 86400,
                 seed: int = 0) -> None:
        self.cluster = cluster
        self.now = now
        with cluster.lock:
            topics = sorted({p.topic for p in cluster.partitions.values()})
            self.broker_ids = sorted(cluster.brokers)
        self.traffic = traffic or Traffic(topics, now() - history, seed=seed)
        self.bindex = {b: i for i, b in enumerate(self.broker_ids)}
        nb, nt = len(self.broker_ids), len(self.traffic.topics)
        self.msg_size = np.array([message_size(t) for t in self.traffic.topics], dtype=float)
        self.bytes_in = np.zeros((nb, nt))
        self.bytes_out = np.zeros((nb, nt))
        self.messages_in = np.zeros((nb, nt))
        self.repl_in = np.zeros(nb)
        self.repl_out = np.zeros(nb)
        self.idle_ns = np.zeros(nb)
        self.seen = np.zeros((nb, nt), dtype=bool)  # a topic's metrics exist once a broker led it
        self._lock = threading.Lock()
        self._last: float | None = None
        self._integral: np.ndarray | None = None
        self._lagging: dict[tuple[str, int, int], tuple[int, float]] = {}
        self._known: dict[tuple[str, int], frozenset[int]] = {}  # replicas at the last read
        self.topology: _Topology | None = None
        self.min_interval = 1.0  # seconds between re-reads of the cluster when serving scrapes

    # -- reading the cluster ----------------------------------------------------------------
    def read_topology(self) -> _Topology:
        nb, nt = len(self.broker_ids), len(self.traffic.topics)
        arrays = [np.zeros((nb, nt)) for _ in range(5)]
        lead_in, lead_out, lead_msgs, follow_in, lead_repl = arrays
        sizes: dict[int, list[tuple[str, int, float]]] = {b: [] for b in self.broker_ids}
        leaders, parts, urp = np.zeros(nb), np.zeros(nb), np.zeros(nb)
        offline = 0
        lagging: dict[tuple[str, int, int], tuple[int, float]] = {}
        c = self.cluster
        with c.lock:
            alive = {b for b, broker in c.brokers.items() if broker.alive and not broker.disk_full}
            for p in c.partitions.values():
                t = self.traffic.index.get(p.topic)
                for r in p.replicas:
                    if r in alive and r in self.bindex:
                        parts[self.bindex[r]] += 1
                        sizes[r].append((p.topic, p.partition, p.replica_bytes.get(r, 0.0)))
                if p.leader == NO_LEADER or p.leader not in self.bindex:
                    offline += 1
                    continue
                li = self.bindex[p.leader]
                leaders[li] += 1
                if len(p.isr) < len(p.replicas):
                    urp[li] += 1
                if t is None:  # a topic created after the metrics started: no traffic modelled
                    continue
                followers = [r for r in p.isr if r != p.leader and r in self.bindex]
                lead_in[li, t] += p.bytes_in_per_sec
                lead_out[li, t] += p.bytes_out_per_sec
                lead_msgs[li, t] += p.bytes_in_per_sec / self.msg_size[t]
                lead_repl[li, t] += p.bytes_in_per_sec * len(followers)
                for r in followers:
                    follow_in[self.bindex[r], t] += p.bytes_in_per_sec
                # Copying: replicas out of the ISR, and replicas new since the last read (a
                # fetch may have started and finished in between: its bytes still count).
                known = self._known.get((p.topic, p.partition))
                for r in p.replicas:
                    if r in alive and (r not in p.isr or (known is not None and r not in known)):
                        lagging[(p.topic, p.partition, r)] = (p.leader, p.replica_bytes.get(r, 0.0))
                self._known[(p.topic, p.partition)] = frozenset(p.replicas)
            controller = c.controller_id
        return _Topology(lead_in, lead_out, lead_msgs, follow_in, lead_repl, sizes, leaders,
                         parts, urp, offline, controller, lagging)

    # -- counters ---------------------------------------------------------------------------
    def update(self, min_interval: float = 0.0) -> _Topology:
        """Bring every counter to now; the current topology is taken to hold since the last call.

        Within ``min_interval`` seconds of the last update the counters stay as they are: a
        Prometheus scraping 200 brokers should not re-read a 130,000-partition cluster 200 times.
        """
        with self._lock:
            now = self.now()
            if (self.topology is not None and self._last is not None
                    and now - self._last < min_interval):
                return self.topology
            topo = self.read_topology()
            integral = self.traffic.integral(now)
            if self._last is None:
                d_int = integral  # as if this leadership had held since the origin
                dt_s = now - self.traffic.origin
            else:
                d_int = np.maximum(integral - self._integral, 0.0)
                dt_s = max(now - self._last, 0.0)
            din = topo.lead_in * d_int
            self.bytes_in += din
            dout = topo.lead_out * d_int
            self.bytes_out += dout
            self.messages_in += topo.lead_msgs * d_int
            drin = (topo.follow_in * d_int).sum(axis=1)
            drout = (topo.lead_repl * d_int).sum(axis=1)
            if self._last is not None:
                for key, (leader, copied) in self._lagging.items():
                    now_copied = topo.lagging.get(key, (leader, None))[1]
                    if now_copied is None:  # caught up (or gone): count up to the log end
                        now_copied = self._caught_up_bytes(key)
                    delta = max(now_copied - copied, 0.0)
                    drin[self.bindex[key[2]]] += delta
                    drout[self.bindex[leader]] += delta
                for key, (leader, copied) in topo.lagging.items():
                    if key not in self._lagging:  # a fetch that started since: from zero
                        drin[self.bindex[key[2]]] += copied
                        drout[self.bindex[leader]] += copied
            self.repl_in += drin
            self.repl_out += drout
            if dt_s > 0:
                busy = (din.sum(axis=1) + dout.sum(axis=1) + drin + drout) / dt_s
                util = np.minimum(0.02 + busy / BUSY_BYTES_PER_SEC, 0.95)
                self.idle_ns += (1 - util) * 1e9 * dt_s
            self.seen |= topo.lead_in > 0
            self._lagging = topo.lagging
            self._last, self._integral, self.topology = now, integral, topo
            return topo

    def _caught_up_bytes(self, key: tuple[str, int, int]) -> float:
        topic, partition, replica = key
        with self.cluster.lock:
            p = self.cluster.partitions.get(TopicPartition(topic, partition))
            return p.replica_bytes.get(replica, 0.0) if p is not None else 0.0

    # -- exposition -------------------------------------------------------------------------
    def render(self, broker_id: int, topo: _Topology | None = None) -> str:
        """Prometheus text format (0.0.4) for one broker, as its JMX exporter would serve it."""
        topo = topo or self.update(self.min_interval)
        i = self.bindex[broker_id]
        out: list[str] = []
        topics = self.traffic.topics

        def family(name: str, kind: str, help_: str) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        for name, values in ((BYTES_IN, self.bytes_in), (BYTES_OUT, self.bytes_out),
                             (MESSAGES_IN, self.messages_in)):
            family(name, "counter", f"Attribute exposed for management {name}")
            row = values[i]
            for t in np.nonzero(self.seen[i])[0]:
                out.append(f'{name}{{topic="{topics[t]}"}} {float(row[t])!r}')
            out.append(f"{name} {float(row.sum())!r}")
        for name, value in ((REPLICATION_BYTES_IN, self.repl_in[i]),
                            (REPLICATION_BYTES_OUT, self.repl_out[i]),
                            (IDLE_PERCENT, self.idle_ns[i])):
            family(name, "counter", f"Attribute exposed for management {name}")
            out.append(f"{name} {float(value)!r}")
        family(LOG_SIZE, "gauge", "Attribute exposed for management (kafka.log<type=Log, name=Size")
        for topic, partition, size in topo.sizes[broker_id]:
            out.append(f'{LOG_SIZE}{{topic="{topic}",partition="{partition}"}} {float(int(size))!r}')
        controller = 1.0 if topo.controller == broker_id else 0.0
        for name, value in ((UNDER_REPLICATED, topo.under_replicated[i]),
                            (LEADER_COUNT, topo.leaders[i]), (PARTITION_COUNT, topo.partitions[i]),
                            (OFFLINE_PARTITIONS, topo.offline * controller),
                            (ACTIVE_CONTROLLER, controller)):
            family(name, "gauge", f"Attribute exposed for management {name}")
            out.append(f"{name} {float(value)!r}")
        return "\n".join(out) + "\n"

    def history(self, out: TextIO, start: float, end: float, step: float, job: str = "kafka",
                instances: dict[int, str] | None = None) -> int:
        """Write [start, end) every ``step`` s as OpenMetrics for ``promtool tsdb
        create-blocks-from openmetrics``; returns the number of samples.

        The current topology is taken to have held over the window (a backfill of the day the
        cluster had before the emulator started); counter values are exactly those the live
        exporter will continue from. Labels: job, instance and broker, as the scrape config
        ``scrape_config`` writes attaches them.
        """
        topo = self.read_topology()
        stamps = np.arange(start, end, step)
        ints = np.array([self.traffic.integral(t) for t in stamps])  # [time, topic]
        end_int = self.traffic.integral(self.now())
        topics = self.traffic.topics
        tindex = self.traffic.index
        rate_in: dict[tuple[str, int], float] = {}
        with self.cluster.lock:
            for p in self.cluster.partitions.values():
                rate_in[(p.topic, p.partition)] = p.bytes_in_per_sec
        samples = 0

        def labels(b: int, extra: str = "") -> str:
            inst = instances[b] if instances else f"broker-{b}"
            return f'{{job="{job}",instance="{inst}",broker="{b}"{extra}}}'

        def series(name: str, lab: str, values: Iterable[float]) -> None:
            nonlocal samples
            for ts, v in zip(stamps, values, strict=True):
                out.write(f"{name}{lab} {v!r} {ts:.3f}\n")
                samples += 1

        for fam, arr in (("bytesin", topo.lead_in), ("bytesout", topo.lead_out),
                         ("messagesin", topo.lead_msgs)):
            name = f"kafka_server_brokertopicmetrics_{fam}"
            out.write(f"# TYPE {name} counter\n")
            for b in self.broker_ids:
                i = self.bindex[b]
                for t in np.nonzero(arr[i] > 0)[0]:
                    series(f"{name}_total", labels(b, f',topic="{topics[t]}"'),
                           (arr[i, t] * ints[:, t]).tolist())
                series(f"{name}_total", labels(b), (ints @ arr[i]).tolist())
        for fam, arr in (("replicationbytesin", topo.follow_in),
                         ("replicationbytesout", topo.lead_repl)):
            name = f"kafka_server_brokertopicmetrics_{fam}"
            out.write(f"# TYPE {name} counter\n")
            for b in self.broker_ids:
                series(f"{name}_total", labels(b), (ints @ arr[self.bindex[b]]).tolist())
        out.write(f"# TYPE {LOG_SIZE} gauge\n")
        for b in self.broker_ids:
            for topic, partition, size in topo.sizes[b]:
                ti = tindex.get(topic)
                grown = 0.0 if ti is None else rate_in[(topic, partition)]
                values = (np.maximum(size - grown * (end_int[ti] - ints[:, ti]), 0.0)
                          if ti is not None else np.full(len(stamps), size))
                series(LOG_SIZE, labels(b, f',topic="{topic}",partition="{partition}"'),
                       np.floor(values).tolist())
        offline = np.array([topo.offline if b == topo.controller else 0 for b in self.broker_ids])
        for name, arr in ((UNDER_REPLICATED, topo.under_replicated), (LEADER_COUNT, topo.leaders),
                          (PARTITION_COUNT, topo.partitions), (OFFLINE_PARTITIONS, offline)):
            out.write(f"# TYPE {name} gauge\n")
            for b in self.broker_ids:
                series(name, labels(b), [float(arr[self.bindex[b]])] * len(stamps))
        out.write("# TYPE up gauge\n")  # what Prometheus records for each scrape
        for b in self.broker_ids:
            series("up", labels(b), [1.0] * len(stamps))
        out.write(f"# TYPE {ACTIVE_CONTROLLER} gauge\n")
        for b in self.broker_ids:
            series(ACTIVE_CONTROLLER, labels(b),
                   [1.0 if b == topo.controller else 0.0] * len(stamps))
        out.write("# EOF\n")
        return samples


class _Handler(BaseHTTPRequestHandler):
    server: _BrokerServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        body = self.server.metrics.render(self.server.broker_id).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the scraper gave up (timeout)
            log.debug("metrics scrape of broker %d aborted by the client", self.server.broker_id)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        log.debug("metrics %s", format % args)


class _BrokerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, broker_id: int, metrics: BrokerMetrics) -> None:
        self.broker_id, self.metrics = broker_id, metrics
        super().__init__(("127.0.0.1", port), _Handler)


class MetricsFace:
    """One HTTP listener per live broker on 127.0.0.1: ``port_base + index`` or ephemeral (0).

    A broker that stops closes its listener and reopens the same port when it starts again.
    """

    def __init__(self, cluster: EmulatedCluster, port_base: int = 0,
                 metrics: BrokerMetrics | None = None) -> None:
        self.cluster = cluster
        self.metrics = metrics or BrokerMetrics(cluster)
        self.port_base = port_base
        self.ports: dict[int, int] = {}
        self._servers: dict[int, tuple[_BrokerServer, threading.Thread]] = {}
        self._lock = threading.Lock()

    def start(self) -> MetricsFace:
        self.metrics.update()
        for i, b in enumerate(self.metrics.broker_ids):
            self.ports[b] = self.port_base + i if self.port_base else 0
            if self.cluster.brokers[b].alive:
                self._open(b)
        self.cluster.add_listener(self._on_event)
        return self

    def stop(self) -> None:
        self.cluster.remove_listener(self._on_event)
        for b in list(self._servers):
            self._close(b)

    def __enter__(self) -> MetricsFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def targets(self) -> dict[int, str]:
        """broker id -> host:port Prometheus scrapes."""
        return {b: f"127.0.0.1:{p}" for b, p in self.ports.items()}

    def _open(self, b: int) -> None:
        with self._lock:
            if b in self._servers:
                return
            server = _BrokerServer(self.ports[b], b, self.metrics)
            self.ports[b] = server.server_address[1]
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                      name=f"metrics-{b}", daemon=True)
            thread.start()
            self._servers[b] = (server, thread)

    def _close(self, b: int) -> None:
        with self._lock:
            entry = self._servers.pop(b, None)
        if entry:
            server, thread = entry
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    def _on_event(self, event: Event) -> None:
        # Called under the cluster's lock: open/close from another thread.
        if event.kind == "broker_stopped" and event.broker is not None:
            threading.Thread(target=self._close, args=(event.broker,), daemon=True).start()
        elif event.kind == "broker_started" and event.broker is not None:
            threading.Thread(target=self._open, args=(event.broker,), daemon=True).start()


def scrape_config(targets: dict[int, str], job: str = "kafka", interval: str = "15s") -> dict:
    """A Prometheus scrape_config for the brokers, each target labelled with its broker id."""
    return {
        "job_name": job,
        "scrape_interval": interval,
        "static_configs": [{"targets": [addr], "labels": {"broker": str(b)}}
                           for b, addr in sorted(targets.items())],
    }
