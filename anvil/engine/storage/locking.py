"""The project's writer lock: an exclusive kernel ``flock`` on ``state.lock``, with a bounded wait.

Writers are serialised by this lock (SQLite's own busy handler sleeps and lets a process starve;
the kernel wakes a blocked ``flock`` waiter as soon as the holder lets go). A wait is bounded by
``ANVIL_LOCK_TIMEOUT`` seconds (default 30): past it the caller gets :class:`Busy` (exit 9,
nothing written, safe to retry) instead of hanging behind a stuck writer.

A blocking ``flock`` cannot be given a timeout, so a contended wait runs in a helper thread on
its own descriptor; a caller that gives up abandons the helper, which lets go of the lock the
moment the kernel grants it. Threads of one process first queue on an in-process lock, so only
one of them waits on the kernel at a time.
"""

from __future__ import annotations

import _thread
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anvil.engine.errors import Busy, UsageError

LOCK_NAME = "state.lock"
LOCK_TIMEOUT_ENV = "ANVIL_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 30.0

# ``_thread`` rather than ``threading`` at import: a read that never waits pays for no thread machinery.
_HELD: set[tuple[str, int]] = set()
_LOCAL: dict[str, _thread.LockType] = {}
_LOCAL_GUARD = _thread.allocate_lock()


MAX_LOCK_TIMEOUT = 30 * 86400
"""The longest writer-lock wait: a month (far longer waits overflow the platform's timers)."""


def parse_lock_timeout(value: str | None) -> float:
    """The writer-lock wait in seconds from ``ANVIL_LOCK_TIMEOUT`` (unset or empty: the default).

    Raises:
        UsageError: the value is not a finite number of seconds, 0 or more (code ``invalid_lock_timeout``).
    """
    text = (value or "").strip()
    if not text:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_LOCK_TIMEOUT:
        raise UsageError(f"{LOCK_TIMEOUT_ENV} must be a number of seconds from 0 to {MAX_LOCK_TIMEOUT:,}",
                         code="invalid_lock_timeout")
    return seconds


def busy(timeout: float) -> Busy:
    return Busy(f"another anvil process held the project's writer lock for {timeout:g} s; nothing was written: "
                f"retry (set {LOCK_TIMEOUT_ENV} to wait longer)", code="state_busy",
                details={"waited_seconds": timeout})


def _local_lock(state_dir: Path) -> _thread.LockType:
    key = str(state_dir)
    with _LOCAL_GUARD:
        lock = _LOCAL.get(key)
        if lock is None:
            lock = _LOCAL[key] = _thread.allocate_lock()
        return lock


class _KernelWait:
    """A blocking ``flock`` in a helper thread that the caller may abandon."""

    def __init__(self, path: Path):
        import threading

        self.path = path
        self.mutex = threading.Lock()
        self.done = threading.Event()
        self.fd: int | None = None
        self.error: OSError | None = None
        self.abandoned = False

    def run(self) -> None:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            with self.mutex:
                self.error = exc
                self.done.set()
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            with self.mutex:
                self.error = exc
                self.done.set()
            return
        with self.mutex:
            if self.abandoned:
                os.close(fd)  # nobody wants it any more: let the next waiter have it
            else:
                self.fd = fd
            self.done.set()

    def wait(self, seconds: float) -> int | None:
        self.done.wait(max(0.0, seconds))
        with self.mutex:
            if self.fd is not None:
                return self.fd
            if self.error is not None:
                raise self.error
            self.abandoned = True
            return None


def _acquire_kernel_lock(path: Path, deadline: float) -> int | None:
    """A descriptor holding the exclusive ``flock`` on ``path``, or None when ``deadline`` passed."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
    except BaseException:
        os.close(fd)
        raise
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    import threading

    waiter = _KernelWait(path)
    threading.Thread(target=waiter.run, name="anvil-lock-wait", daemon=True).start()
    return waiter.wait(remaining)


@contextmanager
def writer_lock(state_dir: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the project's writer lock, waiting at most ``timeout`` seconds for it.

    Re-entrant within one thread (init takes it, then writes through a store that takes it again);
    separate threads and processes exclude each other.

    Raises:
        Busy: the lock was not granted within ``timeout`` (code ``state_busy``).
        OSError: the lock file cannot be opened (the state directory is missing or unusable).
    """
    key = (str(state_dir), _thread.get_ident())
    if key in _HELD:
        yield
        return
    deadline = time.monotonic() + timeout
    local = _local_lock(state_dir)
    acquired = local.acquire(timeout=timeout) if timeout > 0 else local.acquire(blocking=False)
    if not acquired:
        raise busy(timeout)
    try:
        fd = _acquire_kernel_lock(state_dir / LOCK_NAME, deadline)
        if fd is None:
            raise busy(timeout)
        try:
            _HELD.add(key)
            yield
        finally:
            _HELD.discard(key)
            os.close(fd)  # closing releases the lock
    finally:
        local.release()


@contextmanager
def try_writer_lock(state_dir: Path) -> Iterator[bool]:
    """Hold the writer lock if it is free right now; yields whether it is held (never waits).

    Reads use this for opportunistic upkeep (catching up the mirror, reaping leases): a read never
    queues behind a writer. A lock file that cannot be opened counts as not free.
    """
    import fcntl

    key = (str(state_dir), _thread.get_ident())
    if key in _HELD:
        yield True
        return
    local = _local_lock(state_dir)
    if not local.acquire(blocking=False):
        yield False
        return
    try:
        fd: int | None = None
        try:
            fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
        if fd is None:
            yield False
            return
        try:
            _HELD.add(key)
            yield True
        finally:
            _HELD.discard(key)
            os.close(fd)
    finally:
        local.release()


def holds_writer_lock(state_dir: Path) -> bool:
    """Whether this thread holds the writer lock of ``state_dir``."""
    return (str(state_dir), _thread.get_ident()) in _HELD
