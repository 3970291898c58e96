"""The emulator's Kafka wire-protocol face: one TCP listener per emulated broker on 127.0.0.1.

Real admin clients (confluent-kafka/librdkafka, kafka-python, kcat) connect to these listeners
exactly as they would to Kafka brokers, so the Admin API backend is tested over real sockets
with the real client libraries. Frames are decoded and encoded by kafka-python's generated
message classes (one class per API, every version, generated from Kafka's JSON schemas): no
byte layout is written here by hand. The handlers in ``wire_handlers`` map each request onto the
shared ``EmulatedCluster``.

Listeners follow the brokers' lives: a stopped broker's listener is closed (connections are
refused and open ones dropped, as when a broker process dies) and reopened on the same port when
the broker starts again, so ``Metadata`` keeps advertising stable addresses.

SASL/PLAIN is optional: with ``sasl_plain_users`` set, every listener requires a SaslHandshake
and a successful PLAIN exchange before any request other than ApiVersions, like a
SASL_PLAINTEXT listener. Passwords are never logged.

The asyncio loop runs in one background thread; handlers call the cluster synchronously
(the cluster serialises with its own lock), which keeps request order per connection exactly
as Kafka guarantees.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from kafka_ops.emulator.wire_handlers import (
    API_VERSIONS_KEY,
    HANDLERS,
    SASL_AUTHENTICATE_KEY,
    SASL_HANDSHAKE_KEY,
    RequestContext,
    api_versions_error_frame,
    check_plain_token,
    encode_response,
)

log = logging.getLogger(__name__)

_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes
_PRE_AUTH_APIS = {API_VERSIONS_KEY, SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY}


@dataclass
class _Connection:
    """Per-connection SASL state."""

    authenticated: bool
    mechanism: str | None = None
    raw_sasl_next: bool = False  # SaslHandshake v0: the next frame is a bare SASL token
    close_after_reply: bool = False


class WireFace:
    """Serves the Kafka protocol for every broker of an ``EmulatedCluster``.

    ``start()`` binds one listener per broker on ``host`` (ephemeral ports) and records each
    port in ``EmulatedBroker.port`` so Metadata advertises it; ``stop()`` closes everything.
    ``sasl_plain_users`` ({user: password}) turns every listener into SASL_PLAINTEXT/PLAIN.
    """

    def __init__(
        self,
        cluster,
        *,
        host: str = "127.0.0.1",
        sasl_plain_users: Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.host = host
        self._sasl_users = dict(sasl_plain_users) if sasl_plain_users else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._writers: dict[int, set[asyncio.StreamWriter]] = {}
        self._tasks: set[asyncio.Task] = set()  # one per open connection
        self._listening = False

    def __repr__(self) -> str:  # never shows credentials
        sasl = "PLAIN" if self._sasl_users else "none"
        return f"WireFace(bootstrap={self.bootstrap_servers!r}, sasl={sasl})"

    @property
    def sasl_enabled(self) -> bool:
        return self._sasl_users is not None

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every broker, for a client's bootstrap.servers."""
        with self.cluster.lock:
            return ",".join(f"{b.host}:{b.port}" for b in self.cluster.brokers.values() if b.port)

    def port_of(self, broker_id: int) -> int:
        return self.cluster.brokers[broker_id].port

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> WireFace:
        if self._thread is not None:
            raise RuntimeError("wire face already started")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="emulator-wire", daemon=True)
        self._thread.start()
        try:
            self._call(self._bind_all())
        except BaseException:
            self.stop()
            raise
        self._listening = True
        self.cluster.add_listener(self._on_event)
        return self

    def stop(self) -> None:
        self._listening = False
        self.cluster.remove_listener(self._on_event)
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self._call(self._close_all())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()
            self._loop = None
            self._thread = None

    def __enter__(self) -> WireFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro, timeout: float = 10.0):
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _bind_all(self) -> None:
        with self.cluster.lock:
            brokers = [(b.id, b.alive) for b in self.cluster.brokers.values()]
        for broker_id, alive in brokers:
            await self._open(broker_id)
            if not alive:
                await self._close(broker_id)

    async def _close_all(self) -> None:
        for broker_id in list(self._servers):
            await self._close(broker_id)
        if self._tasks:  # aborted transports end their readers; let them finish cleanly
            await asyncio.wait(set(self._tasks), timeout=5)

    async def _open(self, broker_id: int) -> None:
        """Listen for a broker, on its recorded port if it had one (a restart), else any."""
        if broker_id in self._servers:
            return
        broker = self.cluster.brokers[broker_id]
        server = await asyncio.start_server(
            lambda r, w: self._serve(broker_id, r, w),
            host=self.host,
            port=broker.port or 0,
            reuse_address=True,
        )
        port = server.sockets[0].getsockname()[1]
        with self.cluster.lock:
            broker.host = self.host
            broker.port = port
        self._servers[broker_id] = server
        self._writers.setdefault(broker_id, set())

    async def _close(self, broker_id: int) -> None:
        """Stop listening and drop open connections, as a dead broker process would."""
        server = self._servers.pop(broker_id, None)
        if server is not None:
            server.close()
        for writer in list(self._writers.get(broker_id, ())):
            writer.transport.abort()
        if server is not None:
            await server.wait_closed()

    def _on_event(self, event) -> None:
        """Cluster listener (called under the cluster lock): follow broker deaths/restarts."""
        if not self._listening or self._loop is None:
            return
        if event.kind == "broker_stopped":
            action = self._close
        elif event.kind == "broker_started":
            action = self._open
        else:
            return
        future = asyncio.run_coroutine_threadsafe(action(event.broker), self._loop)
        future.add_done_callback(_log_failure)

    # -- serving ---------------------------------------------------------------------------
    async def _serve(
        self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writers = self._writers.setdefault(broker_id, set())
        writers.add(writer)
        task = asyncio.current_task()
        assert task is not None  # a connection handler always runs as a task
        self._tasks.add(task)
        conn = _Connection(authenticated=self._sasl_users is None)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                if not 0 < size <= _MAX_FRAME:
                    log.warning("broker %d: invalid frame size %d, closing", broker_id, size)
                    return
                payload = await reader.readexactly(size)
                reply = self._reply(broker_id, conn, payload)
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if conn.close_after_reply:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writers.discard(writer)
            self._tasks.discard(task)
            writer.close()

    def _reply(self, broker_id: int, conn: _Connection, payload: bytes) -> bytes | None:
        """The framed answer to one request frame, or None to close the connection."""
        if conn.raw_sasl_next:  # SaslHandshake v0 then a bare PLAIN token, answered bare
            conn.raw_sasl_next = False
            if check_plain_token(payload, self._sasl_users or {}):
                conn.authenticated = True
                return struct.pack(">i", 0)
            log.info("broker %d: SASL/PLAIN authentication failed", broker_id)
            return None
        if len(payload) < 8:
            return None
        api_key, version, correlation_id = struct.unpack_from(">hhi", payload)
        if not conn.authenticated and api_key not in _PRE_AUTH_APIS:
            log.info("broker %d: api %d before SASL authentication, closing", broker_id, api_key)
            return None
        if not self.cluster.brokers[broker_id].alive:  # died while this connection was open
            return None
        api = HANDLERS.get(api_key)
        sasl_api = api_key in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY)
        if api is None or (sasl_api and not self.sasl_enabled):
            log.info("broker %d: unsupported api key %d, closing", broker_id, api_key)
            return None
        low, high = api.versions
        if not low <= version <= high:
            if api_key == API_VERSIONS_KEY:
                return api_versions_error_frame(correlation_id, self.sasl_enabled)
            log.info("broker %d: unsupported version %d of api %d", broker_id, version, api_key)
            return None
        ctx = RequestContext(
            cluster=self.cluster,
            broker_id=broker_id,
            version=version,
            sasl_enabled=self.sasl_enabled,
            sasl_users=self._sasl_users or {},
            connection=conn,
        )
        try:
            request = api.request.decode(payload, version=version, header=True)
            self.cluster.tick()
            response = api.handle(ctx, request)
        except Exception:  # a malformed frame or a face bug: drop the connection, as Kafka does
            log.exception("broker %d: api %d v%d failed", broker_id, api_key, version)
            return None
        return encode_response(response, version, correlation_id)


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("wire face listener change failed: %s", future.exception())
