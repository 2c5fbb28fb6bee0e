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
POOL_SIZE = 4


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

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        return self.raw.execute(translate_placeholders(sql), tuple(parameters) if parameters else None)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
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
    """Close every idle pooled connection (before dropping or copying a database)."""
    with _POOL_GUARD:
        idle = [raw for conns in _POOL.values() for raw in conns]
        _POOL.clear()
    for raw in idle:
        raw.close()


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
    commit, to every listener on any machine); a waiter ``LISTEN``s on its own connection and reads
    the head after listening and after every notification, so no change is missed."""

    def __init__(self, url: str):
        self.url = url

    def head(self) -> int:
        """The newest committed event sequence.

        Raises:
            StateIncompatible: the database cannot be reached (a pooled connection found closed is
                replaced once first).
        """
        require_driver()
        import psycopg

        conn = connect(self.url)
        try:
            try:
                return _head(conn.raw)
            except psycopg.OperationalError as exc:
                conn.raw.close()
                if not conn.reused:
                    raise unavailable(self.url, exc) from None
                forget_idle(self.url)
                conn = connect(self.url)
                return _head(conn.raw)
        except psycopg.OperationalError as exc:
            conn.raw.close()
            raise unavailable(self.url, exc) from None
        finally:
            conn.close()

    def wait(self, after_seq: int, timeout: float) -> int:
        """Block until an event after ``after_seq`` is committed or ``timeout`` seconds pass; returns the head.

        Raises:
            StateIncompatible: the database cannot be reached.
        """
        import time

        require_driver()
        import psycopg

        deadline = time.monotonic() + max(timeout, 0.0)  # wait_for_change bounds it
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as raw:
                raw.execute(f"LISTEN {CHANNEL}")
                while True:
                    head = _head(raw)
                    remaining = deadline - time.monotonic()
                    if head > after_seq or remaining <= 0:
                        return head
                    for _ in raw.notifies(timeout=remaining, stop_after=1):
                        pass
        except psycopg.OperationalError as exc:
            raise unavailable(self.url, exc) from None

    def notify(self, seq: int) -> None:
        """Nothing to do: a PostgreSQL store notifies inside the committing transaction."""


def _head(raw: Any) -> int:
    """The newest committed event sequence on an autocommit connection; 0 before ``anvil init`` made the log."""
    import psycopg

    try:
        row = raw.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0
