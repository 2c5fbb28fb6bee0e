"""PostgreSQL storage: the same hash-chained log and projection, shared by agents on many machines.

Selected by ``ANVIL_DATABASE_URL=postgresql://...``. One database holds one project. Every
mutation is one transaction that first takes a transaction-scoped advisory lock on the project
(``pg_advisory_xact_lock``), so writers are serialised across processes and machines exactly as the
SQLite store's file lock serialises them on one machine; a writer that waits longer than the lock
timeout gets ``state_busy`` (exit 9, nothing written). The transaction's time is the database's
``clock_timestamp()`` read after the lock is granted: with several replicas there is one clock.

The log is not mirrored to a local ``events.jsonl`` (replicas on several machines share no file):
``anvil verify`` checks the hash chain and replays the log into an empty projection to compare, and
``pg_dump`` is the backup. The psycopg driver is imported only here, so the SQLite path never loads it.
The connection string is shown only through :func:`display_database_url`, which drops the password.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

URL_ENV = "ANVIL_DATABASE_URL"
SCHEMES = ("postgresql", "postgres")
LOCK_KEY = 0x616E766C  # "anvl": the advisory lock every writer of the database takes
POOL_SIZE = 16
"""Idle connections kept per database: a server runs up to 8 writes and 24 reads at once, and opening a
connection costs the server a process start, so a busy replica should rarely open one."""


def is_database_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return value.strip().lower().startswith(tuple(f"{scheme}://" for scheme in SCHEMES))


def display_database_url(url: str) -> str:
    """``url`` as it may be shown: scheme, user, host, port and database; never a password or query."""
    try:
        parts = urlsplit(url.strip())
        host, port, user = parts.hostname or "", parts.port, parts.username
    except ValueError:
        return "<unparseable database URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = (f"{user}@" if user else "") + (f"{host}:{port}" if port is not None else host)
    return f"{parts.scheme}://{netloc}{parts.path}"


def same_database(first: str, second: str) -> bool:
    """Whether two connection strings name the same database (user, host, port and name; not the password)."""
    def key(url: str) -> tuple[str, str, int, str] | None:
        try:
            parts = urlsplit(url.strip())
            return (parts.username or "", (parts.hostname or "").lower(), parts.port or 5432, parts.path.strip("/"))
        except ValueError:
            return None

    return key(first) is not None and key(first) == key(second)


@lru_cache(maxsize=512)
def translate_placeholders(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (and a literal ``%`` doubled), outside quoted text."""
    out: list[str] = []
    quote: str | None = None
    for char in sql:
        if quote:
            if char == quote:
                quote = None
            out.append("%%" if char == "%" else char)
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
    return "".join(out)


class PgConnection:
    """A psycopg connection behind the domain code's connection interface (``?`` placeholders)."""

    def __init__(self, raw: Any, url: str, *, reused: bool = False):
        self.raw = raw
        self.url = url
        self.reused = reused  # taken from the pool: the server may have closed it while it sat idle
        self.prefetched: dict[tuple[str, tuple[Any, ...]], list[tuple[Any, ...]]] = {}
        """Rows of reads (by statement and parameters) the transaction fetched ahead in one round trip
        (its start's, or :meth:`PgStore.read_ahead`'s), each answered once from here; forgotten at the
        first statement that is not a ``SELECT``."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if self.prefetched:
            rows = self.prefetched.pop((sql, tuple(parameters)), None)
            if rows is not None:
                return Fetched(rows)
            if not sql.lstrip()[:9].upper().startswith(("SELECT", "SAVEPOINT", "RELEASE")):
                self.prefetched.clear()  # a write may change what was fetched
        return self.raw.execute(translate_placeholders(sql), tuple(parameters) if parameters else None)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        self.prefetched.clear()  # only writes run many times over
        rows = [tuple(p) for p in parameters]
        cursor = self.raw.cursor()
        if rows:
            cursor.executemany(translate_placeholders(sql), rows)
        return cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self.raw.info.transaction_status != TransactionStatus.IDLE)

    def close(self) -> None:
        release(self)


class Fetched:
    """A cursor's reading side over rows fetched already (see :attr:`PgConnection.prefetched`)."""

    def __init__(self, rows: list[tuple[Any, ...]]):
        self.rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.rows)

    def __iter__(self) -> Any:
        return iter(self.rows)


_POOL: dict[str, list[Any]] = {}
_POOL_GUARD = threading.Lock()
_CLOSE_AT_EXIT: list[bool] = []  # non-empty once forget_pool is registered to run at exit


def require_driver() -> None:
    """Check that the PostgreSQL driver is installed before anything needs it.

    Raises:
        StateIncompatible: ``database_driver_missing`` (``ANVIL_DATABASE_URL`` is set but psycopg is not
            installed: ``pip install 'anvil[postgres]'``).
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        from anvil.engine.errors import StateIncompatible

        raise StateIncompatible("ANVIL_DATABASE_URL names a PostgreSQL database, but its driver is not installed: "
                                "pip install 'anvil[postgres]' (psycopg 3), or unset ANVIL_DATABASE_URL to use the "
                                "embedded SQLite state", code="database_driver_missing") from None


def connect(url: str) -> PgConnection:
    """A connection to ``url`` in autocommit mode (transactions are explicit), reused when one is idle.

    Raises:
        StateIncompatible: the database cannot be reached or refuses the connection (the message
            shows the URL without its password).
    """
    with _POOL_GUARD:
        idle = _POOL.get(url) or []
        while idle:
            raw = idle.pop()
            if not raw.closed and not raw.broken:
                return PgConnection(raw, url, reused=True)
            raw.close()
    require_driver()
    import psycopg

    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise unavailable(url, exc) from None
    return PgConnection(raw, url)


def forget_idle(url: str) -> None:
    """Close the idle pooled connections to ``url`` (one of them turned out dead: the server restarted,
    or something on the way dropped idle connections)."""
    with _POOL_GUARD:
        idle = _POOL.pop(url, [])
    for raw in idle:
        raw.close()


def release(conn: PgConnection) -> None:
    """Give ``conn`` back to the pool when it is healthy and idle, else close it."""
    from psycopg.pq import TransactionStatus

    raw = conn.raw
    if raw.closed:
        return
    if raw.info.transaction_status == TransactionStatus.IDLE:
        with _POOL_GUARD:
            if not _CLOSE_AT_EXIT:
                import atexit

                atexit.register(forget_pool)  # close them at exit rather than leave them to the collector
                _CLOSE_AT_EXIT.append(True)
            idle = _POOL.setdefault(conn.url, [])
            if len(idle) < POOL_SIZE:
                idle.append(raw)
                return
    raw.close()


def forget_pool() -> None:
    """Close every idle pooled connection and change listener (before dropping or copying a database)."""
    with _POOL_GUARD:
        idle = [raw for conns in _POOL.values() for raw in conns]
        _POOL.clear()
    for raw in idle:
        raw.close()
    _stop_listeners()


def unavailable(url: str, exc: BaseException) -> Exception:
    from anvil.engine.errors import StateIncompatible

    reason = _reason(exc)
    return StateIncompatible(f"the PostgreSQL database {display_database_url(url)} cannot be used ({reason}); check "
                             f"that the server runs and {URL_ENV} is right", code="database_unavailable",
                             details={"database": display_database_url(url)})


def _reason(exc: BaseException) -> str:
    """A bounded, secret-free reason: the driver's first line with anything like a password removed."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = re.sub(r"\S+://\S+", "<url>", text)
    text = re.sub(r"(?i)password\s*=\s*\S+", "password=<hidden>", text)
    return text[:200]


CHANNEL = "anvil_changes"
"""The ``LISTEN``/``NOTIFY`` channel a PostgreSQL store notifies in every committing transaction."""


class PgFeed:
    """Change notification on PostgreSQL: writers ``NOTIFY`` inside their transaction (delivered at
    commit, to every listener on any machine; a commit that frees no work says ``quiet``). The
    waiters of one process share one listening connection (:class:`_Listener`); each reads the head
    once the listener listens and again after every notification it cares about, so no change is
    missed and a waiter costs the server no connection of its own."""

    def __init__(self, url: str):
        self.url = url

    def head(self) -> int:
        """The newest committed event sequence.

        Raises:
            StateIncompatible: the database cannot be reached (a pooled connection found closed is
                replaced once first).
        """
        return self._look(None)[0]

    def _look(self, since: int | None) -> tuple[int, bool]:
        """The head, and (``since`` given) whether an event after ``since`` may free work."""
        require_driver()
        import psycopg

        conn = connect(self.url)
        try:
            try:
                return _look(conn.raw, since)
            except psycopg.OperationalError as exc:
                conn.raw.close()
                if not conn.reused:
                    raise unavailable(self.url, exc) from None
                forget_idle(self.url)
                conn = connect(self.url)
                return _look(conn.raw, since)
        except psycopg.OperationalError as exc:
            conn.raw.close()
            raise unavailable(self.url, exc) from None
        finally:
            conn.close()

    def wait(self, after_seq: int, timeout: float, *, work: bool = False) -> int:
        """Block until an event after ``after_seq`` is committed (``work``: one that may free work) or
        ``timeout`` seconds pass; returns the head.

        Raises:
            StateIncompatible: the database cannot be reached.
        """
        import time

        deadline = time.monotonic() + max(timeout, 0.0)  # wait_for_change bounds it
        listener = _listener(self.url)
        since = after_seq
        while True:
            listener.start()  # again after its connection failed: the look below covers what it missed
            epoch = listener.ready(deadline)
            head, freed = self._look(since if work else None)
            if head > since and work and not freed:
                since = head  # only quiet commits so far: look past them next time
            remaining = deadline - time.monotonic()
            if (head > after_seq and (not work or head > since)) or remaining <= 0:
                return head
            listener.sleep(max(head, since), work, epoch, remaining)

    def notify(self, seq: int, *, work: bool = True) -> None:
        """Nothing to do: a PostgreSQL store notifies inside the committing transaction."""


class _Listener:
    """One ``LISTEN`` connection per process and database, shared by its waiters (a thread reads the
    notifications until the pool is forgotten or the connection fails; the next waiter starts it again)."""

    def __init__(self, url: str):
        self.url = url
        self.cond = threading.Condition()
        self.any_seq = self.work_seq = 0
        self.epoch = 0  # bumped whenever listening starts or stops: waiters look again then
        self.listening = False
        self.stopped = False
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the listening thread unless it runs (it ends when its connection fails)."""
        with self.cond:
            if self.thread is None or not self.thread.is_alive():
                self.error = None
                self.thread = threading.Thread(target=self._run, name="anvil-pg-listen", daemon=True)
                self.thread.start()

    def ready(self, deadline: float) -> int:
        """Wait until the connection listens; returns the epoch of that listening.

        Raises:
            StateIncompatible: it could not listen before ``deadline`` (or 10 s).
        """
        with self.cond:
            self.cond.wait_for(lambda: self.listening or self.error is not None,
                               timeout=max(0.0, min(deadline - _now(), 10.0)) or 10.0)
            if not self.listening:
                raise unavailable(self.url, self.error or TimeoutError("the change listener did not start"))
            return self.epoch

    def sleep(self, seen: int, work: bool, epoch: int, seconds: float) -> None:
        """Sleep until a notification past ``seen`` (of work, with ``work``) arrives, listening stops or
        restarts (leaving ``epoch``), or ``seconds`` pass."""
        with self.cond:
            self.cond.wait_for(lambda: self.epoch != epoch or (self.work_seq if work else self.any_seq) > seen,
                               timeout=seconds)

    def _run(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as raw:
                raw.execute(f"LISTEN {CHANNEL}")
                with self.cond:
                    self.listening, self.error = True, None
                    self.epoch += 1
                    self.cond.notify_all()
                while not self.stopped:
                    for note in raw.notifies(timeout=1.0):
                        seq_text, _, kind = note.payload.partition(" ")
                        with self.cond:
                            seq = int(seq_text) if seq_text.isdigit() else self.any_seq + 1
                            self.any_seq = max(self.any_seq, seq)
                            if kind != "quiet":
                                self.work_seq = max(self.work_seq, seq)
                            self.cond.notify_all()
        except (psycopg.Error, OSError) as exc:
            with self.cond:
                self.error = exc
        finally:
            with self.cond:
                self.listening = False
                self.epoch += 1
                self.cond.notify_all()


def _now() -> float:
    import time

    return time.monotonic()


_LISTENERS: dict[str, _Listener] = {}


def _listener(url: str) -> _Listener:
    with _POOL_GUARD:
        found = _LISTENERS.get(url)
        if found is None or found.stopped:
            found = _LISTENERS[url] = _Listener(url)
        return found


def _stop_listeners(url: str | None = None) -> None:
    """End the listening connections (to ``url``, or all): before a database is dropped or copied."""
    with _POOL_GUARD:
        stopping = [_LISTENERS.pop(key) for key in list(_LISTENERS) if url is None or key == url]
    for listener in stopping:
        listener.stopped = True  # each leaves within a second (its notifications are read a second at a time)
    for listener in stopping:
        if listener.thread is not None and listener.thread is not threading.current_thread():
            listener.thread.join(timeout=2)


def _look(raw: Any, since: int | None) -> tuple[int, bool]:
    """The head and (``since`` given) whether an event after ``since`` may free work, in one statement."""
    import psycopg

    from anvil.engine.storage.wakes import WORK_SINCE_SQL

    try:
        if since is None:
            return _head(raw), False
        row = raw.execute(f"SELECT COALESCE(MAX(seq), 0), EXISTS ({WORK_SINCE_SQL.replace('?', '%s')}) FROM events",
                          (since,)).fetchone()
    except psycopg.errors.UndefinedTable:
        return 0, False
    return int(row[0]), bool(row[1])


def _head(raw: Any) -> int:
    """The newest committed event sequence on an autocommit connection; 0 before ``anvil init`` made the log."""
    import psycopg

    try:
        row = raw.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0
