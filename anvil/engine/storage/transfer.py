"""Moving a project's state into PostgreSQL with its whole history (``anvil db copy --to URL``).

The event log is copied verbatim (every event row, byte for byte, so the hash chain carries
over) into an empty PostgreSQL database and applied to its projection in the same transaction,
under the database's writer lock. The copy is then verified there: the chain, a replay of the log
into an empty projection, and the copied projection against the source's, row for row.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage import migrations
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Event, Store, apply_event, refresh_derived

BATCH = 500


def target_url(to: str | None, to_env: str | None, env: dict[str, str]) -> str:
    """The target database URL from ``--to URL`` or ``--to-env NAME``.

    Raises:
        UsageError: neither or both given, the variable is unset, the URL is not PostgreSQL's, or a
            URL on the command line carries a password (it would show in process listings).
    """
    from urllib.parse import urlsplit

    from anvil.engine.storage.postgres import is_database_url

    if (to is None) == (to_env is None):
        raise UsageError("pass the target database as --to URL or --to-env NAME (one of them)", code="usage")
    if to_env is not None:
        url = env.get(to_env, "").strip()
        if not url:
            raise UsageError(f"--to-env names {to_env[:64]!r}, which is not set: export the target database's URL in "
                             "it first", code="database_env_unset")
    else:
        url = (to or "").strip()
    if not is_database_url(url):
        raise UsageError("the target must be a postgresql:// URL", code="invalid_database_url")
    try:
        password = urlsplit(url).password
    except ValueError:
        raise UsageError("the target URL cannot be parsed", code="invalid_database_url") from None
    if to is not None and password:
        raise UsageError("--to must not carry a password (it would show in process listings): use PGPASSWORD, "
                         "~/.pgpass, or put the URL in a variable and pass --to-env NAME",
                         code="password_in_database_url")
    return url


def copy_state(source: Store, location: StateLocation, url: str) -> dict[str, Any]:
    """Copy ``source``'s log into the empty database at ``url``, project it there and verify.

    Raises:
        Refused: the target already holds events (code ``database_not_empty``).
        StateIncompatible: the target cannot be reached, is not anvil's or is newer than this anvil.
    """
    from anvil.engine.storage.integrity import projection_rows, verify
    from anvil.engine.storage.pgstore import PgStore
    from anvil.engine.storage.postgres import LOCK_KEY, display_database_url

    rows = source.conn.execute("SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events ORDER BY seq"
                               ).fetchall()
    with PgStore.open_database(location._replace(database_url=url), create=True) as target:
        conn = target.conn
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,))
            if conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]:
                raise Refused(f"the database {display_database_url(url)} already holds an event log; copy into an "
                              "empty database", code="database_not_empty")
            for start in range(0, len(rows), BATCH):
                chunk = rows[start:start + BATCH]
                conn.executemany("INSERT INTO events (seq, ts, actor, type, payload, prev_hash, hash) "
                                 "VALUES (?,?,?,?,?,?,?)", chunk)
                for seq, ts, actor, type_, payload, prev_hash, hash_ in chunk:
                    apply_event(conn, Event(seq, ts, actor, type_, json.loads(payload), prev_hash, hash_),
                                derive=False)
            if rows:
                refresh_derived(conn, None)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        report = verify(target)
        same = projection_rows(source.conn) == projection_rows(target.conn)
    return {"database": display_database_url(url), "events_copied": len(rows),
            "schema_version": migrations.SCHEMA_VERSION, "chain_ok": report["chain_ok"],
            "replay_ok": report["replay_ok"], "projection_equal": same, "ok": report["ok"] and same,
            "problems": report["problems"] + ([] if same else ["the copied projection differs from the source's"])}
