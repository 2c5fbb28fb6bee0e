"""Finding ids by prefix, for completion in MCP hosts (task, feature and bundle ids).

Matching ignores ASCII case (``t0`` finds ``T001``). Bundles are not part of the schema yet: their
ids complete once a ``bundles`` table with an ``id`` column exists, and are an empty list until
then, never an error.
"""

from __future__ import annotations

import sqlite3
from typing import Literal, NamedTuple

IdKind = Literal["task", "feature", "bundle"]
_TABLES: dict[str, str] = {"task": "tasks", "feature": "features", "bundle": "bundles"}
MAX_MATCHES = 100
"""The most values one answer carries (the MCP completion limit)."""


class Matches(NamedTuple):
    """Up to :data:`MAX_MATCHES` ids in order, and how many ids match in all."""

    values: list[str]
    total: int


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _has_id_table(conn: sqlite3.Connection, table: str) -> bool:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is None:
        return False
    return any(row[1] == "id" for row in conn.execute(f"PRAGMA table_info({table})"))


def ids_starting_with(conn: sqlite3.Connection, kind: IdKind, prefix: str, limit: int = MAX_MATCHES) -> Matches:
    """The ``kind`` ids that start with ``prefix`` (ASCII case ignored), in id order.

    Args:
        conn: an open state connection.
        kind: ``task``, ``feature`` or ``bundle``.
        prefix: what the user typed so far (may be empty).
        limit: the most values to return (``total`` still counts every match).

    Returns:
        The first ``limit`` matching ids and the number of matches; empty when the kind has no
        table in this database (bundles, today).

    Raises:
        ValueError: an unknown kind.
    """
    table = _TABLES.get(kind)
    if table is None:
        raise ValueError(f"unknown id kind {kind!r}")
    if not _has_id_table(conn, table):
        return Matches([], 0)
    pattern = _escape_like(prefix[:64]) + "%"
    rows = [row[0] for row in conn.execute(
        f"SELECT DISTINCT id FROM {table} WHERE id LIKE ? ESCAPE '\\' ORDER BY id", (pattern,))]
    return Matches([str(value) for value in rows[:limit]], len(rows))
