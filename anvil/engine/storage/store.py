"""SQLite storage: the hash-chained event log and its projection, written together.

Every mutation runs in one ``BEGIN IMMEDIATE`` transaction that appends its events and applies
them to the projection tables, so a crash never separates log from projection. Writers are
serialised by an advisory file lock (the kernel queues waiters, unlike SQLite's sleeping busy
handler, so no process starves); the same lock guards the ``events.jsonl`` mirror, appended after
each commit and caught up whenever a store is opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from anvil.engine.errors import InternalError, NotFound, StateIncompatible
from anvil.engine.storage import changes, migrations
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.paths import StateLocation

GENESIS_HASH = "0" * 64
LOCK_NAME = "state.lock"
BUSY_TIMEOUT_MS = 60_000

# Modules whose import registers projection appliers (see ``applies``).
APPLIER_MODULES: tuple[str, ...] = (
    "anvil.engine.project",
    "anvil.engine.prd.lifecycle",
    "anvil.engine.planning.state",
    "anvil.engine.work.claims",
    "anvil.engine.work.evidence",
    "anvil.engine.work.decisions",
    "anvil.engine.credentials",
)

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, in UTC. ``ANVIL_TEST_NOW_OFFSET`` (seconds) shifts it, so multi-process tests can
    move time forward without sleeping."""
    now = datetime.now(UTC)
    offset = os.environ.get("ANVIL_TEST_NOW_OFFSET")
    return now + timedelta(seconds=float(offset)) if offset else now


def format_ts(moment: datetime) -> str:
    """Fixed-width UTC ISO-8601 with milliseconds, so timestamps compare as strings."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


class Event(NamedTuple):
    """One entry of the event log."""

    seq: int
    ts: str
    actor: str
    type: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts": self.ts, "actor": self.actor, "type": self.type,
                "payload": self.payload, "prev_hash": self.prev_hash, "hash": self.hash}


def event_hash(seq: int, ts: str, actor: str, type_: str, payload_json: str, prev_hash: str) -> str:
    """The chained hash of one event (over its canonical JSON, payload included verbatim)."""
    body = canonical_json({"seq": seq, "ts": ts, "actor": actor, "type": type_, "prev_hash": prev_hash})
    return sha256_hex(body + "\n" + payload_json)


Applier = Callable[[Connection, Event], None]
_APPLIERS: dict[str, Applier] = {}


def applies(*event_types: str) -> Callable[[Applier], Applier]:
    """Register a function that applies events of ``event_types`` to the projection."""

    def decorate(func: Applier) -> Applier:
        for event_type in event_types:
            if event_type in _APPLIERS:
                raise ValueError(f"two appliers for {event_type}")
            _APPLIERS[event_type] = func
        return func

    return decorate


def load_appliers() -> None:
    import importlib

    for module in APPLIER_MODULES:
        importlib.import_module(module)


def apply_event(conn: Connection, event: Event) -> None:
    """Apply one event to the projection.

    Raises:
        InternalError: no applier knows the event type.
    """
    applier = _APPLIERS.get(event.type)
    if applier is None:
        load_appliers()
        applier = _APPLIERS.get(event.type)
    if applier is None:
        raise InternalError(f"no projection rule for event type {event.type!r}", code="unknown_event")
    applier(conn, event)


def connect(path: str, *, create: bool = False) -> sqlite3.Connection:
    mode = "rwc" if create else "rw"
    conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None,
                           timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=OFF")
    register_functions(conn)
    return conn


def register_functions(conn: sqlite3.Connection) -> None:
    """SQL functions the migrations use: ``anvil_name_key(name)``, the key names are compared by."""
    from anvil.engine.identity import name_key

    conn.create_function("anvil_name_key", 1, name_key, deterministic=True)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a database to the current schema; refuse one written by a newer anvil.

    Raises:
        StateIncompatible: the database is newer than this code or not an anvil database.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id not in (0, migrations.APPLICATION_ID) or (app_id == 0 and version != 0):
        raise StateIncompatible("the state database was not written by anvil", code="not_anvil_state")
    if version > migrations.SCHEMA_VERSION:
        raise StateIncompatible(
            f"the state database has schema {version} but this anvil supports up to "
            f"{migrations.SCHEMA_VERSION}; upgrade anvil (do not delete the state)",
            details={"database_schema": version, "supported_schema": migrations.SCHEMA_VERSION},
        )
    if version == migrations.SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for index in range(version, migrations.SCHEMA_VERSION):
            for statement in _split_sql(migrations.MIGRATIONS[index]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={index + 1}")
        conn.execute(f"PRAGMA application_id={migrations.APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _split_sql(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


class Store:
    """An open project state: a SQLite connection plus the log mirror."""

    def __init__(self, location: StateLocation, conn: sqlite3.Connection, clock: Clock = system_clock):
        self.location = location
        self.conn = conn
        self.clock = clock

    @classmethod
    def open(cls, location: StateLocation, *, create: bool = False, clock: Clock = system_clock) -> Store:
        """Open (or with ``create``, create) the state at ``location``.

        Raises:
            NotFound: the project is not initialized (code ``not_initialized``).
            StateIncompatible: the database is newer than this anvil.
        """
        if not create and not location.db_path.is_file():
            raise NotFound(f"the project at {location.root} is not initialized: run `anvil init` there (or set "
                           "ANVIL_ROOT)", code="not_initialized")
        if create:
            location.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            conn = connect(str(location.db_path), create=create)
            if create:
                conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn)
        except sqlite3.OperationalError as exc:
            raise InternalError(f"the state database in {location.state_dir} could not be used ({exc}); check that "
                                "the directory exists and is writable", code="state_unavailable") from exc
        except sqlite3.DatabaseError as exc:
            raise StateIncompatible("the state database cannot be read", code="state_unreadable") from exc
        store = cls(location, conn, clock)
        try:
            store.sync_mirror(only_if_behind=True)
        except InternalError:
            pass  # a damaged mirror never blocks the database; `anvil verify` reports it
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------

    def last_event(self) -> tuple[int, str]:
        row = self.conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS_HASH)

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """One consistent view for several reads: a read transaction, ended (never writing) on exit."""
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")

    def events(self, after: int = 0) -> Iterator[Event]:
        cursor = self.conn.execute(
            "SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq",
            (after,))
        for seq, ts, actor, type_, payload, prev_hash, hash_ in cursor:
            yield Event(seq, ts, actor, type_, json.loads(payload), prev_hash, hash_)

    # -- writing -------------------------------------------------------------------------------

    def lock(self) -> AbstractContextManager[None]:
        """Hold the project's writer lock (blocking, queued by the kernel)."""
        return writer_lock(self.location.state_dir)

    @contextmanager
    def write(self, actor: str) -> Iterator[Transaction]:
        """One atomic mutation: events appended and projected together, mirrored after commit."""
        with self.lock():
            self.conn.execute("BEGIN IMMEDIATE")
            tx = Transaction(self, actor, self.clock())
            try:
                yield tx
                if tx.rollback_only:
                    self.conn.execute("ROLLBACK")
                else:
                    self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            if tx.rollback_only:
                return
            if tx.appended:
                try:
                    self._append_mirror(tx.appended)
                except (InternalError, OSError):
                    pass  # committed already; the mirror is caught up on the next open
                changes.notify(self.location, tx.appended[-1].seq)  # wake waiters (next --wait, boards)
            for action in tx.after_commit:
                try:
                    action()
                except OSError:
                    # Committed already: the change stands. Readers compare files with the recorded
                    # digest (see prd_state.approval_problem) and a repeated call repairs them.
                    pass


    # -- the events.jsonl mirror ---------------------------------------------------------------

    def _mirror_tail_seq(self, *, repair: bool = True) -> int:
        """Sequence of the last complete line of the mirror.

        A torn final line (a crash mid-append) is cut off when ``repair`` is set, which callers
        do only while holding the writer lock; without it a torn line reads as -1 (unknown), since
        a writer may be appending it right now.
        """
        try:
            with open(self.location.log_path, "rb+") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    return 0
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    if not repair:
                        return -1
                    cut = _last_newline_before(handle, size)
                    handle.truncate(cut + 1 if cut >= 0 else 0)
                    size = cut + 1 if cut >= 0 else 0
                    if size == 0:
                        return 0
                start = _last_newline_before(handle, size - 1) + 1
                handle.seek(start)
                return int(json.loads(handle.read(size - start))["seq"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError) as exc:
            raise InternalError("events.jsonl has an unreadable final line", code="mirror_corrupt") from exc

    def sync_mirror(self, *, only_if_behind: bool = False) -> int:
        """Append every committed event missing from ``events.jsonl``; returns how many."""
        if only_if_behind:
            seq, _ = self.last_event()
            if seq == 0 or self._mirror_tail_is(seq):
                return 0
        with self.lock():
            tail = self._mirror_tail_seq()
            missing = list(self.events(after=tail))
            self._write_mirror(missing)
            return len(missing)

    def _mirror_tail_is(self, seq: int) -> bool:
        try:
            return self._mirror_tail_seq(repair=False) == seq
        except InternalError:
            return False

    def _append_mirror(self, appended: list[Event]) -> None:
        # Called with the lock held; catches up anything an earlier crash left behind.
        tail = self._mirror_tail_seq()
        if tail == appended[0].seq - 1:
            self._write_mirror(appended)
        else:
            self._write_mirror(list(self.events(after=tail)))

    def _write_mirror(self, events: list[Event]) -> None:
        if not events:
            return
        lines = "".join(canonical_json(e.to_dict()) + "\n" for e in events)
        with open(self.location.log_path, "a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())


_HELD: set[tuple[str, int]] = set()


@contextmanager
def writer_lock(state_dir: Path) -> Iterator[None]:
    """The project's writer lock: an exclusive ``flock`` on ``state.lock``, blocking.

    Re-entrant within one thread (init takes it, then opens the store that takes it again);
    separate threads and processes exclude each other, since each opens its own descriptor.
    """
    import fcntl
    import threading

    key = (str(state_dir), threading.get_ident())
    if key in _HELD:
        yield
        return
    fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.add(key)
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)  # closing releases the lock


def _last_newline_before(handle: Any, end: int, chunk: int = 65536) -> int:
    """Offset of the last newline before ``end`` (-1 when there is none), reading backwards."""
    position = end
    while position > 0:
        start = max(0, position - chunk)
        handle.seek(start)
        found = handle.read(position - start).rfind(b"\n")
        if found >= 0:
            return start + found
        position = start
    return -1


class Transaction:
    """The inside of :meth:`Store.write`: append events; read through ``conn``."""

    def __init__(self, store: Store, actor: str, now: datetime):
        self.store = store
        self.conn = store.conn
        self.actor = actor
        self.now = now
        self.ts = format_ts(now)
        self.appended: list[Event] = []
        self.rollback_only = False
        self.after_commit: list[Callable[[], None]] = []  # file writes that must follow a real commit
        self._head: tuple[int, str] | None = None

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Undo everything done inside (events, projection, after-commit actions) if it raises."""
        marks = (len(self.appended), len(self.after_commit), self._head)
        self.conn.execute("SAVEPOINT operation")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO operation")
            self.conn.execute("RELEASE operation")
            del self.appended[marks[0]:]
            del self.after_commit[marks[1]:]
            self._head = marks[2]
            raise
        self.conn.execute("RELEASE operation")

    def next_seq(self) -> int:
        """The sequence number the next appended event will get."""
        if self._head is None:
            self._head = self.store.last_event()
        return self._head[0] + 1

    def append(self, event_type: str, payload: dict[str, Any], *, actor: str | None = None) -> Event:
        """Append one event and apply it to the projection.

        Raises:
            InternalError: the event type has no projection rule.
        """
        if self._head is None:
            self._head = self.store.last_event()
        seq, prev = self._head[0] + 1, self._head[1]
        who = actor or self.actor
        payload_json = canonical_json(payload)
        digest = event_hash(seq, self.ts, who, event_type, payload_json, prev)
        self.conn.execute(
            "INSERT INTO events (seq, ts, actor, type, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
            (seq, self.ts, who, event_type, payload_json, prev, digest))
        event = Event(seq, self.ts, who, event_type, json.loads(payload_json), prev, digest)
        apply_event(self.conn, event)
        self._head = (seq, digest)
        self.appended.append(event)
        return event

