"""Finding ids by prefix, for completion in MCP hosts (task, feature and bundle ids).

Matching ignores ASCII case (``t0`` finds ``T001``). Bundles are not part of the schema yet: their
ids complete once a migration creates a ``bundles`` table, and are an empty list until then,
never an error. Whether a table exists is read from the migrations (the schema this code runs),
not from the database's catalogue, so the lookup is the same SQL on every backend.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal, NamedTuple

from anvil.engine.storage import migrations
from anvil.engine.storage.connection import Connection

IdKind = Literal["task", "feature", "bundle"]
_TABLES: dict[str, str] = {"task": "tasks", "feature": "features", "bundle": "bundles"}
MAX_MATCHES = 100
"""The most values one answer carries (the MCP completion limit)."""


class Matches(NamedTuple):
    """Up to :data:`MAX_MATCHES` ids in order, and how many ids match in all."""

    values: list[str]
    total: int


def schema_tables() -> frozenset[str]:
    """The tables the current schema creates."""
    return frozenset(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", "\n".join(migrations.MIGRATIONS)))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def ids_starting_with(conn: Connection, kind: IdKind, prefix: str, limit: int = MAX_MATCHES, *,
                      tables: Collection[str] | None = None) -> Matches:
    """The ``kind`` ids that start with ``prefix`` (ASCII case ignored), in id order.

    Args:
        conn: an open state connection.
        kind: ``task``, ``feature`` or ``bundle``.
        prefix: what the user typed so far (may be empty).
        limit: the most values to return (``total`` still counts every match).
        tables: the tables the schema has (default: :func:`schema_tables`).

    Returns:
        The first ``limit`` matching ids and the number of matches; empty when the schema has no
        table for the kind (bundles, today).

    Raises:
        ValueError: an unknown kind.
    """
    table = _TABLES.get(kind)
    if table is None:
        raise ValueError(f"unknown id kind {kind!r}")
    if table not in (schema_tables() if tables is None else tables):
        return Matches([], 0)
    pattern = _escape_like(prefix[:64].upper()) + "%"
    rows = [row[0] for row in conn.execute(
        f"SELECT DISTINCT id FROM {table} WHERE UPPER(id) LIKE ? ESCAPE '\\' ORDER BY id", (pattern,))]
    return Matches([str(value) for value in rows[:limit]], len(rows))
