"""Where an execution's state lives: a local directory, or any fsspec URL shared by workers.

``StateStore`` is the interface the executor and the workflow API use; two stores implement it:

- ``LocalStateStore``: a directory (the CLI's ``--state-dir``). Writes are atomic (temporary
  file, fsync, rename); the executor lock is ``flock`` on a file, released by the kernel when
  the process dies, so a second ``execute`` or a ``cancel`` knows whether an executor is alive.
- ``FsspecStateStore``: any fsspec URL (``file://``, ``s3://``, ...) so that Airflow workers on
  different machines continue one execution. An object store has no ``flock``: the lock is a
  lease object (owner and expiry, renewed by ``heartbeat()`` on every step). It is advisory —
  two processes racing to take it within a few milliseconds could both win — which is enough
  where an orchestrator already runs one task of a DAG run at a time.

``StateStore(location)`` picks the store: a URL with a scheme gives an ``FsspecStateStore``,
anything else a ``LocalStateStore``. A cancel request is an object/file next to the state that
the running executor looks for on every poll, so cancel works across processes and machines.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka_ops.errors import ReassignmentInProgressError, ValidationError
from kafka_ops.executor.state import ExecutionState
from kafka_ops.plan import ReassignmentPlan

STATE_FILE = "execution.json"
LOCK_FILE = "executor.lock"
CANCEL_FILE = "cancel.request"
ROLLBACK_FILE = "rollback.json"


def parse_state(text: str | bytes, where: str) -> ExecutionState:
    """An ExecutionState from the stored JSON, or a ValidationError naming the location."""
    try:
        return ExecutionState.from_dict(json.loads(text))
    except ValidationError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, RecursionError) as e:
        raise ValidationError(f"execution state {where} is unreadable: {e}") from None


class StateStore:
    """The interface of a state store; ``StateStore(dir_or_url)`` builds the right one."""

    location: str

    def __new__(cls, *args: Any, **kwargs: Any) -> StateStore:
        if cls is StateStore:
            where = str(args[0] if args else kwargs["location"])
            chosen: type[StateStore] = FsspecStateStore if "://" in where else LocalStateStore
            return super().__new__(chosen)
        return super().__new__(cls)

    def load(self) -> ExecutionState | None:
        """The recorded execution, or None when there is none."""
        raise NotImplementedError

    def save(self, state: ExecutionState) -> None:
        """Replace the recorded execution, atomically."""
        raise NotImplementedError

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the executor lock; ReassignmentInProgressError when a live executor holds it."""
        raise NotImplementedError
        yield  # pragma: no cover

    def heartbeat(self) -> None:
        """Tell other processes the lock holder is alive (a no-op where the kernel knows)."""

    def executor_running(self) -> bool:
        """Whether a live executor holds the lock (without taking it)."""
        raise NotImplementedError

    def request_cancel(self) -> None:
        raise NotImplementedError

    def cancel_requested(self) -> bool:
        raise NotImplementedError

    def clear_cancel_request(self) -> None:
        raise NotImplementedError

    def write_rollback(self, plan: ReassignmentPlan) -> str | Path:
        """Store the rollback plan next to the state; returns where it went."""
        raise NotImplementedError


class LocalStateStore(StateStore):
    """The state directory: execution.json, the executor lock, cancel requests, rollback."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.location = str(self.dir)
        self.path = self.dir / STATE_FILE
        self.lock_path = self.dir / LOCK_FILE
        self.cancel_path = self.dir / CANCEL_FILE
        self.rollback_path = self.dir / ROLLBACK_FILE

    def load(self) -> ExecutionState | None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except (IsADirectoryError, NotADirectoryError, PermissionError) as e:
            raise ValidationError(f"execution state {self.path} is unreadable: {e.strerror}") from None
        return parse_state(data, str(self.path))

    def save(self, state: ExecutionState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(state.to_dict(), f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    @contextmanager
    def lock(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ReassignmentInProgressError(
                    f"another kafka-ops executor is running with state directory {self.dir}"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def executor_running(self) -> bool:
        if not self.lock_path.exists():
            return False
        with open(self.lock_path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    def request_cancel(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cancel_path.touch()

    def cancel_requested(self) -> bool:
        return self.cancel_path.exists()

    def clear_cancel_request(self) -> None:
        self.cancel_path.unlink(missing_ok=True)

    def write_rollback(self, plan: ReassignmentPlan) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        plan.write(self.rollback_path)
        return self.rollback_path


class FsspecStateStore(StateStore):
    """The same files under any fsspec URL; the lock is a lease renewed by ``heartbeat()``."""

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        lease_seconds: float = 300.0,
    ) -> None:
        import fsspec  # only this store needs it

        self.location = url.rstrip("/")
        self.fs, root = fsspec.core.url_to_fs(self.location, **dict(storage_options or {}))
        self.root = root.rstrip("/")
        self.lease_seconds = lease_seconds
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._renewed = 0.0
        self._held = False

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _read(self, name: str) -> bytes | None:
        self.fs.invalidate_cache()
        try:
            return self.fs.cat_file(self._path(name))
        except FileNotFoundError:
            return None

    def _write(self, name: str, data: bytes) -> None:
        if "file" in self.fs.protocol or "local" in self.fs.protocol:
            self.fs.makedirs(self.root, exist_ok=True)
            tmp = self._path(f"{name}.tmp{os.getpid()}")
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, self._path(name))
        else:  # an object store's PUT replaces the object atomically
            self.fs.pipe_file(self._path(name), data)

    def _delete(self, name: str) -> None:
        try:
            self.fs.rm_file(self._path(name))
        except FileNotFoundError:
            pass

    def load(self) -> ExecutionState | None:
        data = self._read(STATE_FILE)
        return None if data is None else parse_state(data, self._path(STATE_FILE))

    def save(self, state: ExecutionState) -> None:
        self._write(STATE_FILE, json.dumps(state.to_dict(), separators=(",", ":")).encode())

    def _lease(self) -> dict[str, Any] | None:
        data = self._read(LOCK_FILE)
        if data is None:
            return None
        try:
            lease = json.loads(data)
            return lease if isinstance(lease, dict) and "owner" in lease else None
        except (ValueError, UnicodeDecodeError):
            return None

    def _take(self) -> None:
        self._write(LOCK_FILE, json.dumps(
            {"owner": self._owner, "expires": time.time() + self.lease_seconds}).encode())
        self._renewed = time.monotonic()

    @contextmanager
    def lock(self) -> Iterator[None]:
        lease = self._lease()
        if lease is not None and lease["owner"] != self._owner and lease.get("expires", 0) > time.time():
            raise ReassignmentInProgressError(
                f"another kafka-ops executor ({lease['owner']}) holds the lease on {self.location}"
            )
        self._take()
        self._held = True
        try:
            yield
        finally:
            self._held = False
            lease = self._lease()
            if lease is not None and lease["owner"] == self._owner:
                self._delete(LOCK_FILE)

    def heartbeat(self) -> None:
        if self._held and time.monotonic() - self._renewed > self.lease_seconds / 3:
            self._take()

    def executor_running(self) -> bool:
        lease = self._lease()
        return lease is not None and lease.get("expires", 0) > time.time()

    def request_cancel(self) -> None:
        self._write(CANCEL_FILE, b"")

    def cancel_requested(self) -> bool:
        self.fs.invalidate_cache()
        return bool(self.fs.exists(self._path(CANCEL_FILE)))

    def clear_cancel_request(self) -> None:
        self._delete(CANCEL_FILE)

    def write_rollback(self, plan: ReassignmentPlan) -> str:
        self._write(ROLLBACK_FILE, plan.to_json().encode())
        return f"{self.location}/{ROLLBACK_FILE}"
