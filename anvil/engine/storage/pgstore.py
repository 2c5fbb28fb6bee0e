"""The PostgreSQL store: :class:`PgStore`, the same interface as the SQLite ``Store``.

See :mod:`anvil.engine.storage.postgres` for the connection, the advisory writer lock and what
the log mirror means on PostgreSQL.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from anvil.engine.errors import Busy, ConfirmationRequired, NotFound, Refused, StateIncompatible
from anvil.engine.storage import migrations, pgschema, reads
from anvil.engine.storage.locking import DEFAULT_LOCK_TIMEOUT
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.postgres import (
    LOCK_KEY,
    URL_ENV,
    PgConnection,
    connect,
    display_database_url,
    forget_idle,
    translate_placeholders,
    unavailable,
)
from anvil.engine.storage.store import (
    EVENT_INSERT,
    GENESIS_HASH,
    Event,
    StaleSnapshot,
    Store,
    Transaction,
    _fault,
    newer_schema,
    refresh_derived,
)


def _busy(timeout: float) -> Busy:
    return Busy(f"another anvil process held the project's writer lock for {timeout:g} s; nothing was written: "
                f"retry (set ANVIL_LOCK_TIMEOUT to wait longer)", code="state_busy",
                details={"waited_seconds": timeout})


_START = ("clock_timestamp(), (SELECT seq FROM events ORDER BY seq DESC LIMIT 1), "
          "(SELECT hash FROM events ORDER BY seq DESC LIMIT 1), (SELECT version FROM anvil_schema WHERE id = 1), "
          "(SELECT MIN(lease_expires_at) FROM claims WHERE status = 'active'), "
          "(SELECT MIN(lease_expires_at) FROM bundle_claims WHERE status = 'active')")
START_SQL = f"SELECT {_START}"
"""A write's start: the database's time, the chain head its events continue, the schema version, and
when the first task and bundle leases end (so reaping looks further only when one has)."""
OPTIMISTIC_START_SQL = (f"SELECT CASE WHEN pg_try_advisory_lock({LOCK_KEY}) THEN pg_advisory_unlock({LOCK_KEY}) "
                        f"ELSE false END, {_START}")
""":data:`START_SQL` after whether the writer lock is free right now (taken and let go at once)."""
_PREFETCH_SQL = "; ".join(reads.PREFETCHED)
"""The reads nearly every write makes first (:mod:`anvil.engine.storage.reads`), fetched in its start's
round trip (see :attr:`PgConnection.prefetched`): a write holding the lock from its start does not wait
for them again."""


class PgStore(Store):
    """An open project state in a PostgreSQL database (the :class:`Store` interface)."""

    backend = "postgresql"
    conn: PgConnection  # type: ignore[assignment]

    def __init__(self, location: StateLocation, conn: PgConnection, *,  # noqa: D107 - no super(): no SQLite
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        self.location = location
        self.conn = conn
        self.url = conn.url
        self.lock_timeout = lock_timeout
        self.clock = self.now
        self._identity = None
        self._genesis = None
        self._unwritable = None
        self._pipe: Any = None  # the pipeline a locked transaction's statements go in (see _open_pipeline)
        self._lock_queued = False  # an optimistic transaction sent its lock in that pipeline

    @classmethod
    def open_database(cls, location: StateLocation, *, create: bool = False,
                      lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> PgStore:
        """Open the project state held by the database ``location.database_url`` names (``create``:
        make its schema when it has none).

        Raises:
            NotFound: the database holds no project yet (code ``not_initialized``).
            StateIncompatible: the database cannot be reached, is not anvil's, or is newer than this anvil.
        """
        from anvil.engine.storage.postgres import require_driver

        require_driver()
        import psycopg

        url = location.database_url
        if not url:
            raise ValueError("the location names no database")
        conn = connect(url)
        store = cls(location, conn, lock_timeout=lock_timeout)
        try:
            try:
                has_events = migrate(conn, create=create, lock_timeout=lock_timeout)
            except psycopg.OperationalError as exc:
                if not conn.reused:
                    raise unavailable(url, exc) from None
                # Closed while idle in the pool (the server restarted, or something on the way drops
                # idle connections): the others may be too, so start afresh once.
                conn.raw.close()
                forget_idle(url)
                store.conn = conn = connect(url)
                has_events = store._guard(lambda: migrate(conn, create=create, lock_timeout=lock_timeout))
            if not create and (has_events is False or (has_events is None and store.last_event()[0] == 0)):
                raise NotFound(f"the database {display_database_url(url)} holds no anvil project yet: run `anvil "
                               f"init` with {URL_ENV} set, or `anvil db copy --to URL` from an existing project",
                               code="not_initialized")
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        if not self.conn.raw.closed and self.conn.in_transaction:
            self._rollback()
        self.conn.close()

    def _guard(self, action: Any) -> Any:
        import psycopg

        try:
            return action()
        except psycopg.OperationalError as exc:
            raise unavailable(self.url, exc) from None

    # -- reading -------------------------------------------------------------------------------

    def now(self) -> datetime:
        """The database's clock: the one clock every replica agrees on."""
        moment: datetime = self._guard(lambda: self.conn.execute("SELECT clock_timestamp()").fetchone()[0])
        return moment.astimezone(UTC)

    def last_event(self) -> tuple[int, str]:
        row = self.conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), row[1]) if row else (0, GENESIS_HASH)

    def events(self, after: int = 0, until: int | None = None) -> Iterator[Event]:
        """Events with ``after < seq`` (and ``seq <= until`` when given), in order."""
        cursor = self.conn.execute(
            "SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events WHERE seq > ? AND seq <= ? "
            "ORDER BY seq", (after, until if until is not None else 2**62))
        for seq, ts, actor, type_, payload, prev_hash, hash_ in cursor.fetchall():
            yield Event(int(seq), ts, actor, type_, json.loads(payload), prev_hash, hash_)

    # -- writing -------------------------------------------------------------------------------

    def lock(self) -> AbstractContextManager[None]:
        """No file lock on PostgreSQL: writers take the advisory lock inside their transaction."""
        return nullcontext()

    @contextmanager
    def write(self, actor: str, *, optimistic: bool = False) -> Iterator[Transaction]:
        """One atomic mutation under the project's advisory lock, at the database's time.

        With ``optimistic`` the transaction reads first, from one snapshot (``REPEATABLE READ``), and
        takes the lock at its first append (see :meth:`Store.write`): the insert of its first event,
        right after the lock is granted, finds that sequence number taken when another writer
        committed since the snapshot.

        Raises:
            Busy: the writer lock was not granted within the lock timeout (code ``state_busy``).
            StateIncompatible: the database connection failed (code ``database_unavailable``).
            StaleSnapshot: (``optimistic`` only) another writer committed after this one's reads.
        """
        with self._transaction(actor, wait=True, optimistic=optimistic) as tx:
            assert tx is not None
            yield tx

    @contextmanager
    def try_write(self, actor: str) -> Iterator[Transaction | None]:
        """A write transaction if no other writer holds the advisory lock right now, else None."""
        with self._transaction(actor, wait=False) as tx:
            yield tx

    def _lock_sql(self) -> str:
        """One round trip: wait for the advisory lock at most the lock timeout, then lift that limit
        for the rest of the transaction (simple-query statements, run in order, stopping at an error)."""
        return "; ".join(self._lock_statements())

    def _lock_statements(self) -> tuple[str, str, str]:
        """The lock's three statements: the bounded wait's limit, the lock (with the database's time
        when it was granted, for meters), and the limit lifted for the rest of the transaction."""
        timeout = max(1, int(self.lock_timeout * 1000))
        return (f"SET LOCAL lock_timeout = '{timeout}ms'",
                f"SELECT pg_advisory_xact_lock({LOCK_KEY}), clock_timestamp()", "SET LOCAL lock_timeout = 0")

    def _open_pipeline(self) -> None:
        """Send what follows as one pipeline, answered at the transaction's end (a statement whose
        rows are read waits for them): from the first append on, the lock is held, so each round trip
        there would hold every other writer up."""
        if self._pipe is None:
            self.conn.prefetched = {}
            pipe = self.conn.raw.pipeline()
            pipe.__enter__()
            self._pipe = pipe

    def _close_pipeline(self) -> None:
        """Sync the open pipeline and leave pipeline mode.

        Raises:
            psycopg.Error: the first statement of the pipeline that failed.
        """
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            pipe.__exit__(None, None, None)

    def _queue_lock(self) -> None:
        """An optimistic write's lock, sent ahead of its first event in that event's pipeline (no
        round trip of its own): the server takes it, then inserts; a sequence number taken since the
        snapshot fails that insert, which the transaction's end reports as :class:`StaleSnapshot`."""
        self._open_pipeline()
        for statement in self._lock_statements():
            self.conn.execute(statement)
        self._lock_queued = True

    @contextmanager
    def _transaction(self, actor: str, *, wait: bool, optimistic: bool = False) -> Iterator[Transaction | None]:
        import psycopg

        from anvil.engine.storage.postgres import CHANNEL

        conn = self.conn
        tx: Transaction | None = None
        self._pipe, self._lock_queued = None, False
        try:
            row, ended = None, ""
            if optimistic:
                # One snapshot for every read (as SQLite's deferred transaction has), taken by this
                # statement, which also asks whether another writer holds the lock right now.
                cursor = conn.execute(f"BEGIN ISOLATION LEVEL REPEATABLE READ; {OPTIMISTIC_START_SQL}; "
                                      f"{_PREFETCH_SQL}")
                answers = _answers(cursor)
                row = answers[0][0]
                conn.prefetched = {(sql, ()): rows for sql, rows in zip(reads.PREFETCHED, answers[1:], strict=True)}
                if not row[0]:  # a writer is at work: its commit would make these reads stale; wait for it
                    optimistic, row, conn.prefetched = False, None, {}
                    # Ended with the locked start's round trip below. Nothing was written; a ROLLBACK
                    # would make the driver forget its prepared statements.
                    ended = "COMMIT; "
            if row is None and wait:
                # One round trip: the lock (waiting at most the lock timeout), then, in a statement of
                # its own so it sees the last holder's commit, the time and chain head (see _lock_sql).
                try:
                    cursor = conn.execute(f"{ended}BEGIN ISOLATION LEVEL READ COMMITTED; {self._lock_sql()}; "
                                          f"{START_SQL}; {_PREFETCH_SQL}")
                except psycopg.errors.LockNotAvailable:
                    raise _busy(self.lock_timeout) from None
                answers = _answers(cursor)[1:]  # after the lock's own row
                row = (None, *answers[0][0])
                conn.prefetched = {(sql, ()): rows for sql, rows in zip(reads.PREFETCHED, answers[1:], strict=True)}
            elif row is None:
                if ended:
                    conn.execute("COMMIT")
                conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                if not conn.execute("SELECT pg_try_advisory_xact_lock(?)", (LOCK_KEY,)).fetchone()[0]:
                    conn.execute("ROLLBACK")
                    yield None
                    return
                row = (None, *conn.execute(START_SQL).fetchone())
            if row[4] is not None and int(row[4]) > migrations.SCHEMA_VERSION:
                _CURRENT.discard(conn.raw)
                raise newer_schema(int(row[4]))
            tx = Transaction(self, actor, row[1].astimezone(UTC))
            tx.known_head(row[2], row[3])
            tx.known_leases(row[5], row[6])
            if optimistic:
                tx.lock_before_append(self._queue_lock)
            yield tx
            if tx.rollback_only:
                conn.execute("ROLLBACK")
                self._close_pipeline()  # an optimistic dry run whose snapshot went stale is run again, too
                return
            tx.derive()
            _fault("before_commit")
            if tx.appended:  # the notification is delivered at commit; both ride in the events' pipeline
                from anvil.engine.storage.wakes import frees_work

                kind = "" if frees_work(event.type for event in tx.appended) else " quiet"
                self._open_pipeline()
                conn.execute("SELECT pg_notify(?, ?)", (CHANNEL, f"{tx.appended[-1].seq}{kind}"))
                conn.execute("COMMIT")
                self._close_pipeline()
            else:
                conn.execute("COMMIT")
        except BaseException as exc:
            failure = self._failure(exc)
            self._rollback()
            if failure is exc:
                raise
            raise failure from None
        finally:
            conn.prefetched = {}
        if tx is None:
            return
        _fault("committed")
        _fault("mirrored")  # the same crash points as SQLite's (there is no mirror to write here)
        for action in tx.after_commit:
            try:
                action()
            except OSError:
                pass  # caches only (see Transaction.after_commit)
        _fault("after_commit_actions")

    def _failure(self, exc: BaseException) -> BaseException:
        """What a failed transaction reports: the pipeline closed first, its first failed statement
        decides (the lock not granted in time: ``state_busy``; an optimistic write's first event finding
        its sequence number taken, or anything after it refused for that: :class:`StaleSnapshot`; the
        connection lost: ``database_unavailable``), else ``exc`` itself.
        """
        import psycopg

        cause = exc
        if self._pipe is not None:
            try:
                self._close_pipeline()
            except psycopg.Error as pipeline_error:
                cause = pipeline_error if not isinstance(exc, psycopg.Error) else exc
            except BaseException:  # noqa: BLE001 - the connection is unusable; _rollback closes it
                pass
        if isinstance(cause, psycopg.Error) and not isinstance(cause, psycopg.errors.LockNotAvailable):
            _forget_prepared(self.conn.raw)  # statements a failed pipeline skipped were never prepared
        if isinstance(cause, psycopg.errors.LockNotAvailable):
            return _busy(self.lock_timeout)
        if self._lock_queued and isinstance(cause, _stale_errors()):
            return StaleSnapshot()
        if isinstance(cause, psycopg.OperationalError):
            return unavailable(self.url, cause)
        return exc

    def batched_writes(self, *, first_locked: bool) -> AbstractContextManager[None]:
        """One event's insert and its projection's statements go into the transaction's pipeline (opened
        at its first append, answered at its end), so none of them waits for an answer while the writer
        lock is held unless its rows are read; a sequence number taken (an optimistic transaction's
        stale snapshot) is reported at the transaction's end (see :meth:`_failure`)."""
        self._open_pipeline()
        return nullcontext()

    def read_ahead(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Send these reads at once and keep their rows for the transaction's identical statements
        (see :attr:`PgConnection.prefetched`): one round trip for all, wherever the lock is held."""
        conn = self.conn
        if self._pipe is not None:  # after an append: the reads join its pipeline, answered together
            cursors = [conn.raw.execute(translate_placeholders(sql), params or None) for sql, params in statements]
        else:
            with conn.raw.pipeline():
                cursors = [conn.raw.execute(translate_placeholders(sql), params or None) for sql, params in statements]
        for (sql, params), cursor in zip(statements, cursors, strict=True):
            conn.prefetched[(sql, tuple(params))] = cursor.fetchall()

    def insert_event(self, tx: Transaction, row: tuple[Any, ...], *, first_locked: bool) -> None:
        """Insert one event row (in the pipeline of :meth:`batched_writes`, which reports a sequence
        number already taken)."""
        self.conn.execute(EVENT_INSERT, row)

    def _rollback(self) -> None:
        self._lock_queued = False
        try:
            self._close_pipeline()
        except Exception:  # noqa: BLE001 - its failure was reported (see _failure); the rollback follows
            pass
        try:
            if not self.conn.raw.closed and self.conn.in_transaction:
                self.conn.raw.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the connection is gone; the server rolled back
            self.conn.raw.close()

    # -- the mirror: not kept on PostgreSQL (see the postgres module) ----------------------------

    def mirror_is_current(self) -> bool:
        return True

    def catch_up_mirror(self) -> bool:
        return True

    def reconcile_mirror(self) -> int:
        return 0


def _answers(cursor: Any) -> list[list[tuple[Any, ...]]]:
    """The rows of each statement of a simple-query string that returns rows, in order."""
    answers = []
    while True:
        if cursor.description is not None:
            answers.append(cursor.fetchall())
        if not cursor.nextset():
            return answers


def _stale_errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.errors.UniqueViolation, psycopg.errors.SerializationFailure, psycopg.errors.PipelineAborted,
            psycopg.errors.InFailedSqlTransaction)


def _forget_prepared(raw: Any) -> None:
    """After a failed pipeline: the driver recorded as prepared statements the server may never have
    parsed (skipped after the failure), so it forgets them all and the server deallocates them before
    the connection's next statement; a driver without that seam closes the connection (not pooled)."""
    prepared = getattr(raw, "_prepared", None)
    if prepared is not None and callable(getattr(prepared, "clear", None)):
        prepared.clear()
    else:
        raw.close()


def schema_version(conn: PgConnection) -> int | None:
    """The anvil schema version of the database, or None when it holds no anvil schema.

    Raises:
        StateIncompatible: the database holds tables of another application where anvil's would go.
    """
    present = conn.execute("SELECT to_regclass('anvil_schema') IS NOT NULL, to_regclass('events') IS NOT NULL"
                           ).fetchone()
    if not present[0]:
        if present[1]:
            raise StateIncompatible("the database has an `events` table but no anvil schema: it was not written by "
                                    "anvil; nothing was changed in it", code="not_anvil_state")
        return None
    row = conn.execute("SELECT application, version FROM anvil_schema WHERE id = 1").fetchone()
    if row is None or int(row[0]) != migrations.APPLICATION_ID:
        raise StateIncompatible("the database's anvil_schema table was not written by anvil; nothing was changed",
                                code="not_anvil_state")
    return int(row[1])


def _refuse_newer(version: int) -> None:
    if version > migrations.SCHEMA_VERSION:
        raise newer_schema(version)  # the same error as SQLite's: direction, versions, guidance, restart


_CURRENT: weakref.WeakSet[Any] = weakref.WeakSet()
"""Pooled connections that found anvil's schema current: a store opened on one again reads only the
version (one statement instead of the catalogue lookups and the schema row), so a database a newer
anvil migrated meanwhile still fails closed at the next open; a write also reads the version with
the chain head (:data:`HEAD_SQL`)."""


def migrate(conn: PgConnection, *, create: bool, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> bool | None:
    """Bring the database to the current schema under the writer lock; refuse a newer one.

    Without ``create`` a database with no anvil schema is left untouched (``not_initialized``).
    Returns whether the log holds an event when that was read on the way (a connection that found
    the schema current before answers both in one statement), else None.

    Raises:
        StateIncompatible: not anvil's, or newer than this anvil.
        NotFound: no anvil schema and ``create`` not given.
    """
    if conn.raw in _CURRENT:  # this connection found anvil's schema before: its version is the one question left
        row = conn.execute("SELECT (SELECT version FROM anvil_schema WHERE id = 1), EXISTS (SELECT 1 FROM events)"
                           ).fetchone()
        if row is not None and row[0] is not None and int(row[0]) == migrations.SCHEMA_VERSION:
            return bool(row[1])
        _CURRENT.discard(conn.raw)
    version = schema_version(conn)
    if version is not None:
        _refuse_newer(version)
        if version == migrations.SCHEMA_VERSION:
            _CURRENT.add(conn.raw)
            return None
    elif not create:
        raise NotFound("the database holds no anvil project yet: run `anvil init` with ANVIL_DATABASE_URL set, or "
                       "`anvil db copy --to URL` from an existing project", code="not_initialized")
    # A session lock taken before the transaction starts: the transaction then begins after the
    # previous holder committed, so its catalog lookups see the tables that holder created (a
    # transaction that waited for a lock inside itself may still see "no such table" from its cache).
    import psycopg

    conn.execute(f"SET lock_timeout = '{max(1, int(lock_timeout * 1000))}ms'")
    try:
        conn.execute("SELECT pg_advisory_lock(?)", (LOCK_KEY,))
    except psycopg.errors.LockNotAvailable:
        raise _busy(lock_timeout) from None
    finally:
        conn.execute("RESET lock_timeout")
    try:
        _migrate_locked(conn)
    finally:
        conn.execute("SELECT pg_advisory_unlock(?)", (LOCK_KEY,))
    _CURRENT.add(conn.raw)
    return None


def _migrate_locked(conn: PgConnection) -> None:
    conn.execute("BEGIN")
    try:
        version = schema_version(conn)
        if version is None:
            conn.execute(pgschema.SCHEMA_TABLE)
            conn.execute("INSERT INTO anvil_schema (id, application, version) VALUES (1, ?, 0)",
                         (migrations.APPLICATION_ID,))
            version = 0
        _refuse_newer(version)
        for index in range(version, migrations.SCHEMA_VERSION):
            for statement in pgschema.statements(index):
                conn.execute(statement)
            conn.execute("UPDATE anvil_schema SET version = ? WHERE id = 1", (index + 1,))
        if 0 < version < migrations.SCHEMA_VERSION:  # brought forward: fill the derived rows a new schema adds
            refresh_derived(conn, None)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.raw.execute("ROLLBACK")
        raise


def _refuse_existing(url: str, force: bool, confirm: bool) -> None:
    if not force:
        raise Refused("project already initialized (a forced re-init is not done in place on PostgreSQL: create a new "
                      "database)", code="already_initialized")
    if not confirm:
        raise ConfirmationRequired("re-initializing replaces the current state: repeat with --yes (confirm)")
    raise Refused(f"the database {display_database_url(url)} already holds an anvil project: a forced re-init is not "
                  "done in place on PostgreSQL; create a new database (and keep this one as the backup)",
                  code="already_initialized")


def init_database(location: StateLocation, request: Any, result: dict[str, Any], build: Callable[[Transaction], None],
                  *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> dict[str, Any]:
    """``anvil init`` on PostgreSQL: the schema, then the first events in one transaction under the writer lock,
    so of several racing inits exactly one creates the project.

    Raises:
        Refused: the database already holds a project (``already_initialized``).
        ConfirmationRequired: ``force`` without ``confirm``.
        StateIncompatible: the database cannot be reached, is not anvil's, or is newer than this anvil.
    """
    url = location.database_url or ""
    with PgStore.open_database(location, create=True, lock_timeout=lock_timeout) as store:
        if store.last_event()[0]:
            _refuse_existing(url, request.force, request.confirm)
        if request.dry_run:
            return result
        with store.write(request.actor) as tx:
            if store.last_event()[0]:  # another init won while this one waited for the lock
                _refuse_existing(url, request.force, request.confirm)
            build(tx)
    return result
