"""The database connection the domain code talks to, whichever backend holds the state.

Domain modules (project, tasks, PRDs, planning, work) run plain SQL through this narrow interface:
``execute`` / ``executemany`` with ``?`` placeholders, and cursors they read with ``fetchone``,
``fetchall`` or iteration. The SQL they write is the common subset SQLite and PostgreSQL run
identically (``ON CONFLICT`` upserts, ``CASE`` sums, tables instead of JSON functions); anything
backend-specific (schema, pragmas, locking, transactions) stays in the storage modules. A
``sqlite3.Connection`` satisfies this interface as it is, so the embedded path pays nothing; the
PostgreSQL store wraps its driver's connection and translates the placeholders in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    """The result of one statement."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What domain code may call on a connection."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...
