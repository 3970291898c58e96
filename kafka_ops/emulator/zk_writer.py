"""The ZooKeeper face's writes: ordered, coalesced, batched into transactions, never dropped.

The face mirrors every change of the cluster model into znodes. Writing each change as its own
request made the mirror fall minutes behind a large plan (a topic znode with thousands of
partitions rewritten for every replica that joined the ISR), and a write that failed with
``ConnectionLoss`` was logged and forgotten, leaving a stale ISR. Here:

* a ``set`` of a path already waiting in the buffer replaces it (the znode only needs the newest
  value; znodes whose version counts, partition states, opt out), and data may be a callable
  encoded at send time, so a hot topic znode is encoded once per flush, not once per event;
* ``flush()`` sends the buffer as multi-op transactions (``multi``, bounded in operations and
  bytes, pipelined on the one session so their order holds) and returns once ZooKeeper
  acknowledged all of them;
* an operation that fails because the connection or the session went away stays in the buffer,
  in order, and ``flush()`` raises ``Disconnected``: the caller waits for a connection and flushes
  again. Writes are idempotent (a create that finds its znode sets it instead; a delete or set
  that finds none is done), so resending what may have landed is safe.

A transaction that fails for another reason (someone else created or deleted a znode) is rolled
back by ZooKeeper as a whole; its operations are then sent one by one with those rules.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

log = logging.getLogger(__name__)

Data = bytes | Callable[[], bytes]
CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, ConnectionClosedError,
                     KazooTimeoutError)
_BATCH_OPS = 500  # operations per transaction
_BATCH_BYTES = 256 * 1024  # data per transaction, far below the default 1 MB jute.maxbuffer
_MAX_IN_FLIGHT = 16


class Disconnected(Exception):
    """ZooKeeper could not be reached; the unsent writes are kept for the next flush."""


@dataclass
class _Op:
    kind: str  # "set", "create" or "delete"
    path: str
    data: Data = b""
    ephemeral: bool = False
    sequence: bool = False

    def payload(self) -> bytes:
        if callable(self.data):
            self.data = self.data()
        return self.data


class ZkWriter:
    def __init__(self, client: Callable[[], KazooClient], timeout: float) -> None:
        self._client = client
        self.timeout = timeout
        self._ops: list[_Op | None] = []  # None: a set superseded by a later one
        self._live = 0  # operations in the buffer that are not superseded
        self._set_at: dict[str, int] = {}  # path -> index of its buffered set
        self.sent_ops = 0
        self.transactions = 0
        self.max_flush_seconds = 0.0

    def __len__(self) -> int:
        return self._live

    def set(self, path: str, data: Data, coalesce: bool = True) -> None:
        """Buffer a write; one already buffered for the path is dropped, and this one goes
        last, so the znode is written once, in the place of its latest change. Znodes whose
        version means something (a partition state's version is its partition epoch) are
        written every time: ``coalesce=False``."""
        if not coalesce:
            self._set_at.pop(path, None)
            self._ops.append(_Op("set", path, data))
            self._live += 1
            return
        at = self._set_at.pop(path, None)
        if at is not None:
            self._ops[at] = None
        else:
            self._live += 1
        self._set_at[path] = len(self._ops)
        self._ops.append(_Op("set", path, data))

    def create(self, path: str, data: Data = b"", ephemeral: bool = False,
               sequence: bool = False) -> None:
        self._set_at.pop(path, None)  # a later set must come after this create
        self._ops.append(_Op("create", path, data, ephemeral, sequence))
        self._live += 1

    def delete(self, path: str) -> None:
        self._set_at.pop(path, None)
        self._ops.append(_Op("delete", path))
        self._live += 1

    def flush(self) -> None:
        """Send every buffered write; raise ``Disconnected`` (keeping what is unsent) when the
        connection or session is lost on the way."""
        if not self._live:
            return
        started = time.monotonic()
        ops = [op for op in self._ops if op is not None]
        self._ops, self._set_at, self._live = [], {}, 0
        in_flight: deque = deque()
        failed_from: int | None = None
        start = 0
        try:
            while start < len(ops):
                end, size = start, 0
                while end < len(ops) and end - start < _BATCH_OPS:
                    item = len(ops[end].path) + len(ops[end].payload())
                    if end > start and size + item > _BATCH_BYTES:
                        break
                    size += item
                    end += 1
                in_flight.append((start, end, self._commit(ops[start:end])))
                self.transactions += 1
                while len(in_flight) > _MAX_IN_FLIGHT:
                    self._settle(ops, *in_flight.popleft())
                start = end
            while in_flight:
                self._settle(ops, *in_flight.popleft())
        except _Retry as e:
            failed_from = e.start
            log.warning("ZooKeeper unreachable: %d writes kept for retry", len(ops) - e.start)
        if failed_from is not None:
            self._requeue(ops[failed_from:])
            raise Disconnected()
        self.sent_ops += len(ops)
        self.max_flush_seconds = max(self.max_flush_seconds, time.monotonic() - started)

    def _requeue(self, unsent: list[_Op]) -> None:
        """Put unsent writes back in front of whatever was buffered since."""
        newer, self._ops, self._set_at, self._live = self._ops, [], {}, 0
        for op in unsent + [op for op in newer if op is not None]:
            if op.kind == "set":
                self.set(op.path, op.data, coalesce=not op.path.endswith("/state"))
            else:
                self._set_at.pop(op.path, None)
                self._ops.append(op)
                self._live += 1

    def _commit(self, batch: list[_Op]):
        txn = self._client().transaction()
        for op in batch:
            if op.kind == "set":
                txn.set_data(op.path, op.payload())
            elif op.kind == "create":
                txn.create(op.path, op.payload(), ephemeral=op.ephemeral, sequence=op.sequence)
            else:
                txn.delete(op.path)
        return txn.commit_async()

    def _settle(self, ops: list[_Op], start: int, end: int, result) -> None:
        try:
            outcomes = result.get(timeout=self.timeout)
        except CONNECTION_ERRORS:
            raise _Retry(start) from None
        if any(isinstance(o, Exception) for o in outcomes):
            errors = [o for o in outcomes if isinstance(o, Exception)]
            if any(isinstance(o, CONNECTION_ERRORS) for o in errors):
                raise _Retry(start)
            log.debug("transaction of %d writes rolled back (%r): writing one by one",
                      end - start, next(o for o in errors
                                        if type(o).__name__ != "RolledBackError"))
            try:
                for op in ops[start:end]:
                    self._one(op)
            except CONNECTION_ERRORS:
                raise _Retry(start) from None

    def _one(self, op: _Op) -> None:
        client = self._client()
        try:
            if op.kind == "set":
                client.set(op.path, op.payload())
            elif op.kind == "create":
                client.create(op.path, op.payload(), ephemeral=op.ephemeral,
                              sequence=op.sequence)
            else:
                client.delete(op.path)
        except NodeExistsError:
            client.set(op.path, op.payload())
        except NoNodeError:
            log.debug("%s %s: no such znode", op.kind, op.path)


class _Retry(Exception):
    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.start = start
