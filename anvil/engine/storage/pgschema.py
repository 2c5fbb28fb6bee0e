"""The schema on PostgreSQL: the same ordered migrations as SQLite, in PostgreSQL's dialect.

Each SQLite migration in :mod:`anvil.engine.storage.migrations` is carried over statement by
statement: table and index definitions are translated (``INTEGER`` becomes ``BIGINT``, text
compares byte-wise like SQLite's ``BINARY`` through the ``"C"`` collation, ``WITHOUT ROWID`` has
no meaning there, an index on an expression gets its parentheses); a statement that moves data
needs its PostgreSQL form in :data:`DATA_STATEMENTS`, except in the migrations older than
:data:`FIRST_VERSION`, since no PostgreSQL database holds data written before anvil could use one.
The version lives in the ``anvil_schema`` table (SQLite keeps it in ``PRAGMA user_version``).
"""

from __future__ import annotations

import re

from anvil.engine.storage import migrations

FIRST_VERSION = 4
"""The first schema a PostgreSQL database could hold data under (see the module docstring)."""

_CLAIM_EVENT = ("FROM events e WHERE e.type = 'claim.acquired' "
                "AND e.payload::jsonb ->> 'claim_id' = claims.id")

DATA_STATEMENTS: dict[tuple[int, int], str] = {
    # 6: a claim's git binding and revisions, from its claim.acquired event (``->>`` is SQLite's
    # json_extract: a JSON null is SQL NULL, an object its JSON text).
    (5, 4): "UPDATE claims SET "
            f"git = (SELECT e.payload::jsonb ->> 'git' {_CLAIM_EVENT}), "
            f"git_target = (SELECT e.payload::jsonb #>> '{{git,target_path}}' {_CLAIM_EVENT}), "
            f"task_revision = (SELECT e.payload::jsonb ->> 'task_revision' {_CLAIM_EVENT}), "
            f"prd_revision = (SELECT (e.payload::jsonb ->> 'prd_revision')::bigint {_CLAIM_EVENT})",
    # 7: confirmed scores, from the tasks.reviewed events that confirmed them and the tasks.scored
    # events that replaced them since.
    (6, 2): "UPDATE tasks SET scores_confirmed_seq = (SELECT MAX(e.seq) FROM events e, jsonb_array_elements_text("
            "COALESCE(e.payload::jsonb -> 'confirmed_scores', '[]'::jsonb)) c(value) WHERE e.type = 'tasks.reviewed' "
            "AND c.value = tasks.id) WHERE scores IS NOT NULL",
    (6, 3): "UPDATE tasks SET scores_confirmed_seq = NULL WHERE scores_confirmed_seq < (SELECT MAX(e.seq) FROM "
            "events e, jsonb_object_keys(e.payload::jsonb -> 'scores') k(key) WHERE e.type = 'tasks.scored' "
            "AND k.key = tasks.id)",
}
"""PostgreSQL forms of data statements: ``(migration index, statement index) -> SQL``."""

PORTABLE_STATEMENTS: frozenset[tuple[int, int]] = frozenset({
    # 8: the two honest trust levels, and who proved each proof: plain SQL both backends run as written.
    (7, 10), (7, 11), (7, 12),
    # 9: every task done so far is finished for its dependents.
    (8, 2),
})
"""Data statements that run unchanged on PostgreSQL: ``(migration index, statement index)``."""

SCHEMA_TABLE = """CREATE TABLE IF NOT EXISTS anvil_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    application BIGINT NOT NULL,
    version INTEGER NOT NULL
)"""

_DDL = re.compile(r"^\s*(CREATE|ALTER|DROP)\b", re.IGNORECASE)
_TYPE = re.compile(r"\b(INTEGER|TEXT)\b(?=\s|,|\)|$)")
_NULL_TEST = re.compile(r"(?<![(\w])(\w+ IS (?:NOT )?NULL)")


def split_sql(script: str) -> list[str]:
    """The statements of a migration script, in order."""
    return [part.strip() for part in script.split(";") if part.strip()]


def translate(statement: str) -> str:
    """One SQLite DDL statement in PostgreSQL's dialect."""
    text = re.sub(r"\)\s*WITHOUT\s+ROWID\s*$", ")", statement, flags=re.IGNORECASE)
    if re.match(r"^\s*CREATE\s+(UNIQUE\s+)?INDEX\b", text, re.IGNORECASE):
        head, _, rest = text.partition("(")
        columns, close, tail = rest.rpartition(")")
        return head + "(" + _NULL_TEST.sub(r"(\1)", columns) + close + tail
    return _TYPE.sub(lambda m: "BIGINT" if m.group(1).upper() == "INTEGER" else 'TEXT COLLATE "C"', text)


def statements(index: int) -> list[str]:
    """The PostgreSQL statements of migration ``index`` (0-based).

    Raises:
        ValueError: a data statement of a migration PostgreSQL databases live through has no
            PostgreSQL form in :data:`DATA_STATEMENTS`.
    """
    out: list[str] = []
    for position, statement in enumerate(split_sql(migrations.MIGRATIONS[index])):
        if _DDL.match(statement):
            out.append(translate(statement))
        elif (index, position) in DATA_STATEMENTS:
            out.append(DATA_STATEMENTS[(index, position)])
        elif (index, position) in PORTABLE_STATEMENTS:
            out.append(statement)
        elif index >= FIRST_VERSION:
            raise ValueError(f"migration {index + 1} statement {position + 1} moves data: give its PostgreSQL form "
                             "in pgschema.DATA_STATEMENTS")
    return out
