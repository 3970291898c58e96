"""A private ZooKeeper server on loopback: for tests, benchmarks and the embedded demo.

Runs Debian's ZooKeeper (``apt-get install zookeeper``) standalone on 127.0.0.1 and a free port,
with the settings measured to start in about a second (see the environment notes): never the
``ZooKeeperServerMain PORT DIR`` form, which binds every interface. Like kazoo's test harness, one
server serves many tests, each in its own chroot.

Fault injection (for fault suites): ``freeze()``/``thaw()`` stop and continue the server process
(SIGSTOP/SIGCONT: clients see a silent server, their sessions expire once it is frozen past the
session timeout), ``restart()`` stops it and starts it again on the same port and data dir (the
sessions and znodes survive, as on a real restart), and ``expire_session(client)`` ends a
client's session from a second connection, the way kazoo's own test harness does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from kafka_ops.errors import KafkaOpsError

ZOOKEEPER_CLASSPATH = os.environ.get(
    "ZOOKEEPER_CLASSPATH", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _four_letter(port: int, word: bytes, timeout: float = 1.0) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word)
        chunks = []
        while data := s.recv(4096):
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """Start with ``start()`` (or as a context manager); ``connect_string`` to reach it."""

    def __init__(self, port: int | None = None, data_dir: str | Path | None = None) -> None:
        self.port = port or free_port()
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-ops-zk-"))
        self.log_path = self.data_dir / "zookeeper.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._frozen = False

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        if not Path(ZOOKEEPER_CLASSPATH.split(":")[0]).exists():
            raise KafkaOpsError(
                "ZooKeeper is not installed: apt-get install zookeeper "
                "(or set ZOOKEEPER_CLASSPATH to its jars)"
            )
        config = self.data_dir / "zoo.cfg"
        config.write_text(
            "tickTime=2000\n"
            f"dataDir={self.data_dir / 'data'}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=*\n"
            "forceSync=no\n"
            "maxClientCnxns=0\n"
            # Large reassignment and assignment znodes (hundreds of thousands of
            # partitions) exceed the default 1 MB; Kafka operators raise it too.
            "jute.maxbuffer=67108864\n"
        )
        log = open(self.log_path, "wb")
        self._process = subprocess.Popen(
            [
                "java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djute.maxbuffer=67108864",
                "-cp", ZOOKEEPER_CLASSPATH,
                "org.apache.zookeeper.server.ZooKeeperServerMain", str(config),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise KafkaOpsError(f"ZooKeeper exited at start-up; see {self.log_path}")
            try:
                if "Mode: standalone" in _four_letter(self.port, b"srvr"):
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise KafkaOpsError(f"ZooKeeper did not start within {timeout:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        if self._frozen and self._process is not None and self._process.poll() is None:
            self.thaw()  # a stopped process ignores SIGTERM until continued
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    @property
    def pid(self) -> int:
        if self._process is None or self._process.poll() is not None:
            raise KafkaOpsError("ZooKeeper is not running")
        return self._process.pid

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """SIGSTOP the server: it neither answers nor closes connections, like a hung host."""
        os.kill(self.pid, signal.SIGSTOP)
        self._frozen = True

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self._frozen = False

    def restart(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Stop and start again on the same port and data dir (znodes and sessions kept)."""
        self.stop()
        return self.start(timeout)

    def expire_session(self, client: KazooClient, timeout: float = 15.0) -> None:
        """End ``client``'s session from a second connection with the same session id and
        password, then wait until ``client`` has seen the expiry and holds a new session (or
        has given up: kazoo reconnects by itself after SESSION_EXPIRED)."""
        session_id, password = client.client_id
        lost = threading.Event()

        def listener(state: KazooState) -> bool:
            if state == KazooState.LOST:
                lost.set()
                return True  # remove the listener
            return False

        client.add_listener(listener)
        other = KazooClient(hosts=self.connect_string, client_id=(session_id, password))
        other.start(timeout=timeout)
        other.stop()
        other.close()
        if not lost.wait(timeout):
            client.remove_listener(listener)
            raise KafkaOpsError(f"session 0x{session_id:x} did not expire within {timeout:g}s")

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
