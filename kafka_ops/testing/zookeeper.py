"""A private ZooKeeper server on loopback: for tests, benchmarks and the embedded demo.

Runs Debian's ZooKeeper (``apt-get install zookeeper``) standalone on 127.0.0.1 and a free port,
with the settings measured to start in about a second (see the environment notes): never the
``ZooKeeperServerMain PORT DIR`` form, which binds every interface. Like kazoo's test harness, one
server serves many tests, each in its own chroot.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

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
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

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
