"""Waiting for the next change to a project's state, woken by the commit that makes it.

A caller that has nothing to do until the state changes (``anvil next --wait``, a live board, an
SSE stream) calls :func:`wait_for_change` with the event sequence it last looked at; the writer
that commits a newer event calls :func:`notify` right after its commit (``Store.write`` does, for
every commit), and the waiter returns at once. Nobody polls: between changes a waiter sleeps in
``select`` on a file descriptor until a write wakes it or its deadline passes.

The embedded backend (:class:`FifoFeed`) keeps one named pipe per waiter in ``<state>/waiters/``:

- a waiter makes its pipe under a hidden temporary name, opens both ends (its own write end keeps
  the pipe from ever reading as closed), and only then renames it into view, so a notifier never
  sees a pipe nobody reads;
- after registering, and again after every wake-up, the waiter reads the head sequence from the
  database before it sleeps: a commit that landed before it registered is seen by that read, one
  that lands after finds its pipe. No wake-up is lost.
- a notifier writes one byte to every pipe it finds (never blocking: a full pipe already holds a
  wake-up) and removes the pipes of waiters that died without cleaning up (nobody has them open).

It is standard library only and works between any processes that share the state directory. A
server backend (PostgreSQL ``LISTEN``/``NOTIFY``) implements the same :class:`ChangeFeed`.

A waiter for *work* (``work=True``: a waiting ``claim_next_task`` or ``next --wait``) is woken only by
a commit that may free work, one holding an event outside :data:`QUIET_EVENTS` (a claim taken or
renewed, progress noted, an idempotency record: none of them makes a task claimable). Its pipe is
named ``*.work.fifo`` and a quiet commit pokes only the other pipes; after every wake-up it looks in
the log for such an event since the sequence it was given, so a quiet commit never ends its wait.
"""

from __future__ import annotations

import errno
import os
import select
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from anvil.engine.storage.wakes import QUIET_EVENTS, WORK_SINCE_SQL, frees_work

__all__ = ["QUIET_EVENTS", "WORK_SINCE_SQL", "ChangeFeed", "FifoFeed", "frees_work", "head_seq", "notify",
           "wait_for_change"]

if TYPE_CHECKING:
    from anvil.engine.storage.paths import StateLocation

WORK_SUFFIX = ".work.fifo"
WAITERS_DIR = "waiters"
MAX_WAIT_SECONDS = 3600.0
"""The longest one call waits, whatever it asks for: every wait has a deadline."""
_SUFFIX = ".fifo"


class ChangeFeed(Protocol):
    """How one backend tells waiters that the state changed."""

    def head(self) -> int:
        """The sequence number of the newest committed event (0 for an empty log)."""
        ...

    def wait(self, after_seq: int, timeout: float, *, work: bool = False) -> int:
        """Block until the head is past ``after_seq`` (with ``work``: and an event after it may free
        work) or ``timeout`` seconds pass; returns the head."""
        ...

    def notify(self, seq: int, *, work: bool = True) -> None:
        """Wake the waiters: the event ``seq`` was just committed (``work``: a commit that may free
        work, which also wakes the waiters for work). Never raises."""
        ...


class FifoFeed:
    """The embedded backend: one named pipe per waiter in the state directory (see the module doc)."""

    def __init__(self, state_dir: Path, db_path: Path):
        self.directory = state_dir / WAITERS_DIR
        self.db_path = db_path

    def head(self) -> int:
        """The newest committed sequence, read from the database (0 when there is none)."""
        conn = sqlite3.connect(f"file:{self.db_path}?mode=rw", uri=True, isolation_level=None, timeout=60)
        try:
            return _head(conn)
        finally:
            conn.close()

    def wait(self, after_seq: int, timeout: float, *, work: bool = False) -> int:
        """Block until an event after ``after_seq`` is committed, or until ``timeout`` seconds pass.

        Args:
            after_seq: the sequence the caller has already seen.
            timeout: seconds to wait at most (negative counts as 0; capped at :data:`MAX_WAIT_SECONDS`).
            work: wait for an event that may free work (see :data:`QUIET_EVENTS`), not just any.

        Returns:
            The head sequence: greater than ``after_seq`` after a change, else (at the deadline)
            the unchanged head.

        Raises:
            OSError: the waiter's pipe could not be made (the state directory is not writable).
        """
        deadline = time.monotonic() + min(max(timeout, 0.0), MAX_WAIT_SECONDS)
        conn = sqlite3.connect(f"file:{self.db_path}?mode=rw", uri=True, isolation_level=None, timeout=60)
        try:
            with _Waiter(self.directory, work) as waiter:
                since = after_seq
                while True:
                    head = _head(conn)  # after registering and after every wake-up: no lost wake-ups
                    if head > since and work and not _work_since(conn, since):
                        since = head  # only quiet commits so far: look past them next time
                    remaining = deadline - time.monotonic()
                    if (head > after_seq and (not work or head > since)) or remaining <= 0:
                        return head
                    waiter.sleep(remaining)
        finally:
            conn.close()

    def notify(self, seq: int, *, work: bool = True) -> None:
        """Wake the waiters of this state (the waiters for work only when ``work``); removes the pipes
        of waiters that are gone. Never raises."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return  # no waiter ever registered here
        for entry in entries:
            if entry.name.endswith(_SUFFIX) and (work or not entry.name.endswith(WORK_SUFFIX)):
                _poke(entry.path)


def _work_since(conn: sqlite3.Connection, since: int) -> bool:
    return conn.execute(WORK_SINCE_SQL, (since,)).fetchone() is not None


def _head(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
    return int(row[0])


def _poke(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # nobody reads it: its waiter died without removing it
            try:
                os.unlink(path)
            except OSError:
                pass
        return
    try:
        os.write(fd, b"!")
    except OSError:
        pass  # EAGAIN: the pipe is full of wake-ups already
    finally:
        os.close(fd)


class _Waiter:
    """One registered waiter: its pipe, opened at both ends, visible to notifiers while it exists."""

    def __init__(self, directory: Path, work: bool = False):
        self.directory = directory
        self.suffix = WORK_SUFFIX if work else _SUFFIX
        self.path: str | None = None
        self.read_fd = self.write_fd = -1

    def __enter__(self) -> _Waiter:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{os.getpid()}-{os.urandom(6).hex()}"
        hidden = str(self.directory / f".{name}.new")
        os.mkfifo(hidden, 0o600)
        try:
            self.read_fd = os.open(hidden, os.O_RDONLY | os.O_NONBLOCK)
            self.write_fd = os.open(hidden, os.O_WRONLY | os.O_NONBLOCK)
            self.path = str(self.directory / f"{name}{self.suffix}")
            os.rename(hidden, self.path)
        except BaseException:
            self._close()
            _unlink(hidden)
            raise
        return self

    def sleep(self, seconds: float) -> None:
        """Sleep until a notifier writes to the pipe or ``seconds`` pass; consumes the wake-ups."""
        readable, _, _ = select.select([self.read_fd], [], [], seconds)
        if readable:
            try:
                while os.read(self.read_fd, 4096):
                    pass
            except BlockingIOError:
                pass

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            _unlink(self.path)
        self._close()

    def _close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            if fd >= 0:
                os.close(fd)
        self.read_fd = self.write_fd = -1


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def feed_for(location: StateLocation) -> ChangeFeed:
    """The change feed of the state at ``location`` (``LISTEN``/``NOTIFY`` when it lives in PostgreSQL)."""
    if location.database_url:
        from anvil.engine.storage.postgres import PgFeed

        return PgFeed(location.database_url)
    return FifoFeed(location.state_dir, location.db_path)


def head_seq(location: StateLocation) -> int:
    """The newest committed event sequence of the state at ``location`` (0 when there is none)."""
    return feed_for(location).head()


def wait_for_change(location: StateLocation, after_seq: int, timeout: float, *, work: bool = False) -> int:
    """Block until an event after ``after_seq`` is committed, or ``timeout`` seconds pass.

    Args:
        location: the project state.
        after_seq: the newest sequence the caller has seen (read it with :func:`head_seq` *before*
            looking at the state, so a change made while looking is not missed).
        timeout: seconds to wait at most (bounded by :data:`MAX_WAIT_SECONDS`).
        work: wake only for a commit that may free work (see :data:`QUIET_EVENTS`).

    Returns:
        The new head sequence, or the old one at the deadline.

    Raises:
        OSError: the state directory cannot hold the waiter's pipe.
    """
    return feed_for(location).wait(after_seq, min(timeout, MAX_WAIT_SECONDS), work=work)


def notify(location: StateLocation, seq: int, *, work: bool = True) -> None:
    """Tell the waiters of ``location`` that event ``seq`` was committed (``work``: by a commit that
    may free work). Never raises."""
    feed_for(location).notify(seq, work=work)
