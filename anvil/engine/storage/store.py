"""SQLite storage: the hash-chained event log and its projection, written together.

Every mutation runs in one ``BEGIN IMMEDIATE`` transaction that appends its events and applies
them to the projection tables, so a crash never separates log from projection. Writers are
serialised by the project's writer lock (:mod:`anvil.engine.storage.locking`, a bounded wait).
Before committing, a writer checks that the ``events.jsonl`` mirror can take its lines (catching up
anything an earlier crash left out); after the commit it appends them. Reads never wait on the
writer lock: a store opened for reading catches the mirror up only when the lock is free.

A new state is created in one step (:mod:`anvil.engine.storage.creation`): a temporary database is
filled and only then takes the place of ``state.db``, so no crash leaves a database without its
project.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

from anvil.engine.errors import AnvilError, Busy, InternalError, NotFound, StateIncompatible
from anvil.engine.storage import changes, migrations, mirror
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.locking import DEFAULT_LOCK_TIMEOUT, LOCK_NAME, try_writer_lock, writer_lock
from anvil.engine.storage.paths import StateLocation

__all__ = ["LOCK_NAME", "writer_lock"]

GENESIS_HASH = "0" * 64
EVENT_INSERT = "INSERT INTO events (seq, ts, actor, type, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)"
BUSY_TIMEOUT_MS = 60_000

# Modules whose import registers projection appliers (see ``applies`` and ``derives``); a test parses every
# module of anvil and fails when one with an @applies or @derives is missing here (replay could not apply
# its events).
APPLIER_MODULES: tuple[str, ...] = (
    "anvil.engine.project",
    "anvil.engine.prd.lifecycle",
    "anvil.engine.planning.state",
    "anvil.engine.work.claims",
    "anvil.engine.work.evidence",
    "anvil.engine.work.decisions",
    "anvil.engine.credentials",
    "anvil.engine.storage.idempotency",
    "anvil.engine.work.bundles.coordinator",
    "anvil.engine.work.bundles.lifecycle",
    "anvil.engine.work.bundles.review",
    "anvil.engine.work.bundles.delivery",
    "anvil.engine.work.landing",
    "anvil.engine.proof.signing",
    "anvil.engine.proof.verification",
    "anvil.engine.work.views",
)

Clock = Callable[[], datetime]

FAULT_HOOK: Callable[[str], None] | None = None
"""Test-only: called with the name of each crash point a write passes (``before_commit``,
``committed``, ``mirrored``, ``after_commit_actions``; ``init_built``, ``init_renamed``). Only code
running inside the process can set it; no input or environment variable reaches it."""


def _fault(point: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(point)


class StaleSnapshot(BaseException):  # noqa: N818 - a signal to run again, not an error anyone reports
    """An optimistic write's reads are out of date: another writer committed since (nothing was written).

    The caller runs the operation again, holding the writer lock from the start. A BaseException, so
    no rule's ``except`` clause takes it for an answer about the operation.
    """


def system_clock() -> datetime:
    """Now, in UTC: the one clock of a shipped build (tests inject their own ``Clock``)."""
    return datetime.now(UTC)


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


Deriver = Callable[[Connection, "Sequence[Event] | None"], None]
_DERIVERS: list[Deriver] = []


def derives(*tables: str) -> Callable[[Deriver], Deriver]:
    """Register a function that keeps ``tables`` right in the same transaction: called once before a
    write commits with the events it appended (in order), and with None (compute them afresh) after a
    migration brought a database forward or a replay applied its last event. Their rows are a function
    of the other projection tables alone, so a replay computes them once and ``verify`` compares them
    too; nothing reads them inside the write that changes them (only read operations do)."""

    def decorate(func: Deriver) -> Deriver:
        _DERIVERS.append(func)
        return func

    return decorate


def refresh_derived(conn: Connection, events: Sequence[Event] | None) -> None:
    """Run every registered :func:`derives` function (the applier modules registered them) after
    ``events`` (None: compute the derived rows afresh)."""
    if not _DERIVERS:
        load_appliers()
    for func in _DERIVERS:
        func(conn, events)


def load_appliers() -> None:
    import importlib

    for module in APPLIER_MODULES:
        importlib.import_module(module)


def apply_event(conn: Connection, event: Event, *, derive: bool = True) -> None:
    """Apply one event to the projection; with ``derive`` False the :func:`derives` tables are left
    to one :func:`refresh_derived` later (a replay's after its last event, a write's before its commit).

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
    if derive:
        refresh_derived(conn, [event])


def connect(path: str) -> sqlite3.Connection:
    """A connection to an existing database file (``rwc`` only through :meth:`Store.create`)."""
    return _connect(path, "rw")


def _connect(path: str, mode: str) -> sqlite3.Connection:
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


SCHEMA_GUIDANCE = ("Upgrade anvil to a version that supports this schema, then restart the CLI, every MCP server "
                   "and agent harness that uses this state. Do not delete the state.")


def newer_schema(database_schema: int) -> StateIncompatible:
    """The error for a database written by a newer anvil, with what a client needs to act on it: which
    way the versions differ, both versions, this engine's version, and the remedy."""
    from anvil import __version__

    return StateIncompatible(
        f"the state database has schema {database_schema} but this anvil ({__version__}) supports up to "
        f"{migrations.SCHEMA_VERSION}; upgrade anvil and restart what uses the state (do not delete it)",
        code="schema_mismatch",
        details={"direction": "newer", "database_schema": database_schema,
                 "supported_schema": migrations.SCHEMA_VERSION, "engine_version": __version__,
                 "remediation_code": "upgrade_engine", "guidance": SCHEMA_GUIDANCE, "restart_required": True})


def check_anvil_database(conn: sqlite3.Connection) -> int:
    """The schema version of an anvil database, read without writing anything.

    The connection is query-only until the file is known to be anvil's, so a foreign SQLite file
    (``anvil status`` pointed at the wrong place) is never changed.

    Raises:
        StateIncompatible: not an anvil database (``not_anvil_state``), or one written by a newer
            anvil (``schema_mismatch``).
    """
    conn.execute("PRAGMA query_only=1")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id != migrations.APPLICATION_ID:
        raise StateIncompatible("the state database was not written by anvil (its application id is not anvil's); "
                                "nothing was changed in it", code="not_anvil_state")
    if version > migrations.SCHEMA_VERSION:
        raise newer_schema(version)
    conn.execute("PRAGMA query_only=0")
    return int(version)


def migrate(conn: sqlite3.Connection, *, fresh: bool = False) -> None:
    """Bring an anvil database (or, with ``fresh``, a new empty one) to the current schema.

    Raises:
        StateIncompatible: the database is not anvil's or is newer than this code.
    """
    version = 0 if fresh else check_anvil_database(conn)
    if version == migrations.SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for index in range(version, migrations.SCHEMA_VERSION):
            for statement in _split_sql(migrations.MIGRATIONS[index]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={index + 1}")
        if version:  # a database brought forward: derived rows a new schema adds are filled from its projection
            refresh_derived(conn, None)
        conn.execute(f"PRAGMA application_id={migrations.APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _split_sql(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def database_error(exc: sqlite3.Error, location: StateLocation) -> AnvilError:
    """The error a user sees for a SQLite failure: state errors (exit 8) name the file and the cause;
    contention is :class:`Busy` (exit 9); anything else is an internal error."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    path, detail = location.db_path, str(exc)[:200]
    details = {"file": str(path), "sqlite_error": name}
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return Busy("the state database stayed locked by another process; nothing was written: retry",
                    code="state_busy")
    if name.startswith("SQLITE_FULL") or (name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN"))
                                          and _disk_full(location)):
        return StateIncompatible(f"the disk holding {path} is full; nothing was written: free space and retry",
                                 code="disk_full", details=details)
    if name.startswith("SQLITE_READONLY"):
        return StateIncompatible(f"{path} cannot be written (read-only); nothing was written", code="state_read_only",
                                 details=details)
    if name.startswith("SQLITE_IOERR"):
        return StateIncompatible(f"{path} could not be read or written (I/O error: {detail}); nothing was written",
                                 code="state_io_error", details=details)
    if name.startswith("SQLITE_CANTOPEN"):
        return StateIncompatible(f"{path} cannot be opened: check that the state directory exists and is writable",
                                 code="state_unavailable", details=details)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or (
            isinstance(exc, sqlite3.DatabaseError)
            and not isinstance(exc, sqlite3.OperationalError | sqlite3.IntegrityError | sqlite3.ProgrammingError)):
        return StateIncompatible(f"{path} is damaged or not a database ({detail}): run `anvil verify`; `anvil "
                                 "rebuild --yes` rebuilds it from events.jsonl", code="state_damaged", details=details)
    return InternalError(f"state database error ({type(exc).__name__})", code="state_error")


def _read_only_fallback(location: StateLocation, exc: sqlite3.Error) -> sqlite3.Connection | None:
    """A read-only connection for when the database cannot be opened normally because its directory
    cannot be written (a full disk, a read-only file system: SQLite needs to create its shared-memory
    file), so reads keep working. Only when no write-ahead log holds data the file lacks; None otherwise.
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    if not name.startswith(("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN")):
        return None
    try:
        if Path(f"{location.db_path}-wal").stat().st_size > 0:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(f"file:{location.db_path}?mode=ro&immutable=1", uri=True, isolation_level=None,
                               check_same_thread=False)
        if check_anvil_database(conn) != migrations.SCHEMA_VERSION:
            conn.close()
            return None
        conn.execute("PRAGMA query_only=1")
        return conn
    except (sqlite3.Error, AnvilError):
        if conn is not None:
            conn.close()
        return None


def _disk_full(location: StateLocation) -> bool:
    import shutil

    try:
        return shutil.disk_usage(location.state_dir).free < mirror.SPACE_MARGIN
    except OSError:
        return False


def log_present(location: StateLocation) -> bool:
    """Whether ``events.jsonl`` holds (or might hold) events: anything but a missing or empty file."""
    try:
        info = location.log_path.stat()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return not stat.S_ISREG(info.st_mode) or info.st_size > 0


def missing_database(location: StateLocation) -> StateIncompatible:
    return StateIncompatible(f"{location.db_path} is missing but {location.log_path} holds the event log: run "
                             "`anvil rebuild --yes` to rebuild the database from it (or `anvil init --force --yes` "
                             "to set both aside and start over)", code="database_missing",
                             details={"file": str(location.db_path)})


DATABASE_BACKEND = "anvil.engine.storage.pgstore:PgStore"
"""The store class for a location that names a database (loaded on first use, like the appliers,
so the SQLite path never imports the PostgreSQL driver)."""


def _database_backend() -> Any:
    import importlib

    module, _, name = DATABASE_BACKEND.partition(":")
    return getattr(importlib.import_module(module), name)


class Store:
    """An open project state: a SQLite connection plus the log mirror.

    This is the storage backend interface too: :class:`~anvil.engine.storage.pgstore.PgStore` is the
    PostgreSQL implementation (``ANVIL_DATABASE_URL``), and :meth:`open` returns it when the
    location names a database. Domain code uses ``conn`` (see :mod:`anvil.engine.storage.connection`),
    ``write``, ``events``, ``last_event`` and ``now``.
    """

    backend = "sqlite"

    def __init__(self, location: StateLocation, conn: sqlite3.Connection, clock: Clock = system_clock, *,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, identity: tuple[int, int] | None = None):
        self.location = location
        self.conn = conn
        self.clock = clock
        self.lock_timeout = lock_timeout
        self._identity = identity  # (device, inode) of state.db when opened; None: not checked
        self._genesis: str | None = None  # the first event's hash when opened (a re-init changes it)
        self._unwritable: AnvilError | None = None  # why writes are refused (opened read-only), if they are

    @classmethod
    def open(cls, location: StateLocation, *, clock: Clock = system_clock,
             lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Store:
        """Open the state at ``location``; migrate an older anvil database in place.

        Raises:
            NotFound: the project is not initialized (code ``not_initialized``).
            StateIncompatible: the database is missing beside an event log, empty, not anvil's,
                newer than this anvil, or unreadable.
        """
        if location.database_url:
            return _database_backend().open_database(location, lock_timeout=lock_timeout)
        path = location.db_path
        try:
            info = path.stat()
        except FileNotFoundError:
            if log_present(location):
                raise missing_database(location) from None
            raise NotFound(f"the project at {location.root} is not initialized: run `anvil init` there (or set "
                           "ANVIL_ROOT)", code="not_initialized") from None
        except OSError as exc:
            raise StateIncompatible(f"{path} cannot be read ({exc.strerror})", code="state_unavailable") from exc
        if not stat.S_ISREG(info.st_mode):
            raise StateIncompatible(f"{path} is not a regular file", code="state_unreadable")
        if info.st_size == 0:
            remedy = ("`anvil rebuild --yes` rebuilds it from events.jsonl" if log_present(location)
                      else "`anvil init --force --yes` starts over")
            raise StateIncompatible(f"{path} is empty (0 bytes), not a database: {remedy}", code="state_empty",
                                    details={"file": str(path)})
        conn: sqlite3.Connection | None = None
        unwritable: AnvilError | None = None
        try:
            conn = connect(str(path))
            migrate(conn)
        except AnvilError:
            if conn is not None:
                conn.close()
            raise
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            conn = _read_only_fallback(location, exc)
            if conn is None:
                raise database_error(exc, location) from exc
            unwritable = database_error(exc, location)
        store = cls(location, conn, clock, lock_timeout=lock_timeout, identity=(info.st_dev, info.st_ino))
        store._unwritable = unwritable
        try:
            store._genesis = store._first_hash()
        except sqlite3.Error as exc:
            conn.close()
            raise database_error(exc, location) from exc
        store.catch_up_mirror()
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------

    def now(self) -> datetime:
        """The time a rule compares leases with: this store's clock (the database's on PostgreSQL)."""
        return self.clock()

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

    def events(self, after: int = 0, until: int | None = None) -> Iterator[Event]:
        """Events with ``after < seq`` (and ``seq <= until`` when given), in order."""
        cursor = self.conn.execute(
            "SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events WHERE seq > ? AND seq <= ? "
            "ORDER BY seq", (after, until if until is not None else 2**62))
        for seq, ts, actor, type_, payload, prev_hash, hash_ in cursor:
            yield Event(seq, ts, actor, type_, json.loads(payload), prev_hash, hash_)

    # -- writing -------------------------------------------------------------------------------

    def lock(self) -> AbstractContextManager[None]:
        """Hold the project's writer lock, waiting at most ``lock_timeout`` seconds.

        Raises:
            Busy: the lock was not granted in time.
        """
        return writer_lock(self.location.state_dir, self.lock_timeout)

    @contextmanager
    def try_write(self, actor: str) -> Iterator[Transaction | None]:
        """A write transaction if the writer lock is free right now, else None (never waits).

        Reads use it for upkeep (reaping expired leases) without queueing behind a writer.
        """
        with try_writer_lock(self.location.state_dir) as held:
            if not held:
                yield None
                return
            with self.write(actor) as tx:
                yield tx

    def _first_hash(self) -> str | None:
        row = self.conn.execute("SELECT hash FROM events WHERE seq = 1").fetchone()
        return row[0] if row else None

    def _check_identity(self, *, in_transaction: bool, tx: Transaction | None = None) -> None:
        """Refuse to write when the state was replaced since this store was opened: another file in
        place of ``state.db`` (checked before the transaction), or another log in it (a forced
        re-init rewrites the file in place; checked inside the transaction, in the one statement that
        also reads the chain head ``tx`` continues)."""
        if in_transaction and tx is not None:
            first, seq, digest, lease, bundle_lease = self.conn.execute(
                "SELECT (SELECT hash FROM events WHERE seq = 1), (SELECT seq FROM events ORDER BY seq DESC LIMIT 1), "
                "(SELECT hash FROM events ORDER BY seq DESC LIMIT 1), "
                "(SELECT MIN(lease_expires_at) FROM claims WHERE status = 'active'), "
                "(SELECT MIN(lease_expires_at) FROM bundle_claims WHERE status = 'active')").fetchone()
            tx.known_head(seq, digest)
            tx.known_leases(lease, bundle_lease)
            if self._identity is not None and self._genesis is not None and first != self._genesis:
                raise Busy("the project's state was replaced (re-initialized or rebuilt) while this command "
                           "waited; nothing was written: retry", code="state_replaced")
            return
        if self._identity is None:
            return
        if in_transaction:
            same = self._genesis is None or self._first_hash() == self._genesis
        else:
            try:
                info = self.location.db_path.stat()
                same = (info.st_dev, info.st_ino) == self._identity
            except OSError:
                same = False
        if not same:
            raise Busy("the project's state was replaced (re-initialized or rebuilt) while this command waited; "
                       "nothing was written: retry", code="state_replaced")

    @contextmanager
    def write(self, actor: str, *, optimistic: bool = False) -> Iterator[Transaction]:
        """One atomic mutation: events appended and projected together, mirrored after commit.

        With ``optimistic`` the transaction reads without the writer lock and takes it only at its
        first append (a write that appends nothing never takes it); if another writer committed
        since this transaction's first read, that append raises :class:`StaleSnapshot` (nothing is
        written) and the caller runs the operation again with ``optimistic`` off. Every rule still
        runs inside this one transaction: its reads are one snapshot, and it commits only when no
        event was committed since, so what it read is exactly the state its events follow.

        Raises:
            Busy: the writer lock was not granted in time, or the state was replaced meanwhile.
            StateIncompatible: the mirror cannot take the new lines (nothing is committed then).
            StaleSnapshot: (``optimistic`` only) another writer committed after this one's reads.
        """
        if self._unwritable is not None:
            raise self._unwritable
        if optimistic:  # only while no writer is at work: its commit would make the reads stale
            with try_writer_lock(self.location.state_dir) as free:
                optimistic = free
        with ExitStack() as held:
            def take_lock(writable: bool = False) -> None:
                held.enter_context(self.lock())
                self._check_identity(in_transaction=False)
                if writable:
                    self.conn.execute("PRAGMA query_only=0")

            if optimistic:
                self._check_identity(in_transaction=False)
                self.conn.execute("BEGIN")  # deferred: a read snapshot until the first write upgrades it
            else:
                take_lock()
                self.conn.execute("BEGIN IMMEDIATE")
            tx = Transaction(self, actor, self.clock())
            handle: IO[bytes] | None = None
            data = b""
            try:
                self._check_identity(in_transaction=True, tx=tx)
                if optimistic:
                    # Nothing may be written before the lock is held: a write outside append fails loudly.
                    self.conn.execute("PRAGMA query_only=1")
                    tx.lock_before_append(lambda: take_lock(writable=True))
                yield tx
                if tx.rollback_only:
                    self.conn.execute("ROLLBACK")
                    return
                tx.derive()
                if tx.appended:
                    data = mirror.encode(tx.appended)
                    handle = self._prepare_mirror(tx.appended[0].seq, len(data))
                _fault("before_commit")
                self.conn.execute("COMMIT")
            except BaseException:
                if handle is not None:
                    handle.close()
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            finally:
                if optimistic:
                    self.conn.execute("PRAGMA query_only=0")
            _fault("committed")
            if handle is not None:
                try:
                    mirror.write_all(handle, data)
                except OSError:
                    pass  # committed already; the next writer catches the mirror up (or refuses, saying why)
            _fault("mirrored")
            if tx.appended:
                # Wake the waiters (boards; next --wait and waiting claims only when work may be free).
                changes.notify(self.location, tx.appended[-1].seq,
                               work=changes.frees_work(event.type for event in tx.appended))
            for action in tx.after_commit:
                try:
                    action()
                except OSError:
                    pass  # caches only (see Transaction.after_commit); readers repair them
            _fault("after_commit_actions")

    def batched_writes(self, *, first_locked: bool) -> AbstractContextManager[None]:
        """Around one event's insert and projection: nothing to batch on SQLite (every statement is local)."""
        return nullcontext()

    def read_ahead(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Reads (statement, parameters) the transaction makes next, in any order: a store with round
        trips fetches them together; SQLite's are local, so it leaves them to their own statements."""

    def insert_event(self, tx: Transaction, row: tuple[Any, ...], *, first_locked: bool) -> None:
        """Insert one event row; ``first_locked``: the first of an optimistic transaction, just after
        the lock was taken (upgrading the read snapshot fails when another writer committed since).

        Raises:
            StaleSnapshot: ``first_locked`` and the snapshot is out of date.
        """
        try:
            self.conn.execute(EVENT_INSERT, row)
        except sqlite3.OperationalError as exc:
            if first_locked and getattr(exc, "sqlite_errorname", "") == "SQLITE_BUSY_SNAPSHOT":
                raise StaleSnapshot() from None
            raise

    # -- the events.jsonl mirror ---------------------------------------------------------------

    def _prepare_mirror(self, first_seq: int, need: int) -> IO[bytes]:
        """With the lock held and the transaction open: make the mirror hold every event before
        ``first_seq`` and open it for the new lines.

        Raises:
            StateIncompatible: the mirror is ahead of the database, unreadable or unwritable.
        """
        path = self.location.log_path
        tail = mirror.tail_seq(path, repair=True)
        if tail > first_seq - 1:
            raise mirror.ahead(path, tail, first_seq - 1)
        if tail < first_seq - 1:
            mirror.append(path, mirror.encode(self.events(after=tail, until=first_seq - 1)))
        return mirror.open_for_append(path, need)

    def reconcile_mirror(self) -> int:
        """With the writer lock held: append every committed event the mirror lacks; returns how many.

        Raises:
            StateIncompatible: the mirror is ahead of the database, unreadable or unwritable.
        """
        head, _ = self.last_event()
        path = self.location.log_path
        tail = mirror.tail_seq(path, repair=True)
        if tail > head:
            raise mirror.ahead(path, tail, head)
        missing = list(self.events(after=tail, until=head))
        mirror.append(path, mirror.encode(missing))
        return len(missing)

    def mirror_is_current(self) -> bool:
        """Whether the mirror's last complete line is the database's last event (read only)."""
        try:
            return mirror.tail_seq(self.location.log_path, repair=False) == self.last_event()[0]
        except (AnvilError, sqlite3.Error):
            return False

    def catch_up_mirror(self) -> bool:
        """Catch the mirror up if it is behind and the writer lock is free right now (never waits).

        Returns whether the mirror is current afterwards. Failures are left for writers (which
        refuse, naming the cause) and for ``anvil verify`` to report.
        """
        if self.mirror_is_current():
            return True
        with try_writer_lock(self.location.state_dir) as held:
            if not held:
                return False
            try:
                self.reconcile_mirror()
            except (AnvilError, OSError, sqlite3.Error):
                return False
            return True


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        # Cache writes after a real commit (e.g. the managed PRD copy). Never needed for correctness: a
        # crash before them loses nothing, and readers rewrite the caches from the database.
        self.after_commit: list[Callable[[], None]] = []
        self._head: tuple[int, str] | None = None
        self._lock_first: Callable[[], object] | None = None  # an optimistic write's lock, taken at its first append
        self._savepoints = 0  # open savepoints (each is named by its depth)
        self._unsent: list[str] = []  # open savepoints not sent yet: sent with the next append, in its batch
        self.leases_known = False  # whether first_lease_end was read with the chain head
        self.first_lease_end: str | None = None

    def lock_before_append(self, take: Callable[[], object]) -> None:
        """Run ``take`` (which takes the writer lock) just before the first event is appended."""
        self._lock_first = take

    @property
    def locked(self) -> bool:
        """Whether this transaction holds the writer lock (an optimistic one from its first append)."""
        return self._lock_first is None

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Undo everything done inside (events, projection, after-commit actions) if it raises.

        Inside the writer lock the ``SAVEPOINT`` goes to the database with the first event appended
        inside, in that event's batch (:meth:`Store.batched_writes`: no round trip of its own), since
        only appends write (replay rebuilds the projection from the events alone); a savepoint nothing
        was appended in never reaches the database. Before the lock (an optimistic write's reads) it is
        sent at once, where its round trip holds nobody up. A sent one is left to the commit instead of
        released (one round trip less inside the lock): the next savepoint of the same depth reuses its
        name, and a name means its newest savepoint.
        """
        marks = (len(self.appended), len(self.after_commit), self._head)
        name = f"operation_{self._savepoints}"
        self._savepoints += 1
        if self.locked:
            self._unsent.append(name)
        else:
            self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._savepoints -= 1
            if self._unsent and self._unsent[-1] == name:
                self._unsent.pop()  # nothing was appended inside: nothing to undo in the database
            else:
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
            del self.appended[marks[0]:]
            del self.after_commit[marks[1]:]
            self._head = marks[2]
            raise
        self._savepoints -= 1
        if self._unsent and self._unsent[-1] == name:
            self._unsent.pop()

    def known_leases(self, task_lease: str | None, bundle_lease: str | None) -> None:
        """When the first live task and bundle leases end, as read at the transaction's start (None: none)."""
        ends = [end for end in (task_lease, bundle_lease) if end]
        self.first_lease_end = min(ends) if ends else None
        self.leases_known = True

    def known_head(self, seq: int | None, digest: str | None) -> None:
        """The chain head as read with the writer lock held (None: no event yet), so appending reads it no more."""
        self._head = (int(seq), str(digest)) if seq is not None else (0, GENESIS_HASH)

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
        first_locked = self._lock_first is not None
        if first_locked:
            assert self._lock_first is not None
            self._lock_first()
            self._lock_first = None
        if self._head is None:
            self._head = self.store.last_event()
        seq, prev = self._head[0] + 1, self._head[1]
        who = actor or self.actor
        payload_json = canonical_json(payload)
        digest = event_hash(seq, self.ts, who, event_type, payload_json, prev)
        event = Event(seq, self.ts, who, event_type, json.loads(payload_json), prev, digest)
        with self.store.batched_writes(first_locked=first_locked):
            for name in self._unsent:
                self.conn.execute(f"SAVEPOINT {name}")
            self._unsent.clear()
            self.store.insert_event(self, (seq, self.ts, who, event_type, payload_json, prev, digest),
                                    first_locked=first_locked)
            apply_event(self.conn, event, derive=False)  # derived tables: once, before the commit (derive)
        self._head = (seq, digest)
        self.appended.append(event)
        return event

    def derive(self) -> None:
        """Bring the :func:`derives` tables up to the events this transaction appended (once, just before
        its commit: a batch of decisions looks at the critical path once, not once a decision)."""
        if self.appended:
            refresh_derived(self.conn, self.appended)

