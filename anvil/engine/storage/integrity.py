"""Integrity checks: the database file, the hash chain, the ``events.jsonl`` mirror, replay equality.

``verify`` never waits on the writer lock. It reads one database snapshot; mirror lines past that
snapshot belong to writers that committed since and are not judged; a mirror that lacks the
snapshot's newest events is judged only when no writer holds the lock (else they are in flight).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from anvil.engine.storage import migrations, mirror
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.locking import try_writer_lock
from anvil.engine.storage.store import (
    GENESIS_HASH,
    Event,
    Store,
    apply_event,
    event_hash,
    refresh_derived,
    register_functions,
)

MAX_PROBLEMS = 20


def replay_into(conn: sqlite3.Connection, events: list[Event]) -> None:
    """Build a projection from empty by applying ``events`` in order."""
    register_functions(conn)
    for index in range(migrations.SCHEMA_VERSION):
        conn.executescript(migrations.MIGRATIONS[index])
    conn.execute("BEGIN")
    for event in events:
        apply_event(conn, event, derive=False)
    if events:
        refresh_derived(conn, None)
    conn.execute("COMMIT")


def projection_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table's rows in a stable order."""
    return {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in migrations.PROJECTION_TABLES}


def chain_problem(seq: int, expected_seq: int, prev: str, record: tuple[str, str, str, str, str, str]) -> str | None:
    """What is wrong with one event of a chain (None when it links correctly)."""
    ts, actor, type_, payload, prev_hash, hash_ = record
    if seq != expected_seq:
        return f"event {seq}: sequence gap (expected {expected_seq})"
    if prev_hash != prev:
        return f"event {seq}: prev_hash does not match the previous event's hash"
    try:
        canonical = canonical_json(json.loads(payload)) == payload
    except ValueError:
        canonical = False
    if not canonical:
        return f"event {seq}: payload is not canonical JSON"
    if event_hash(seq, ts, actor, type_, payload, prev_hash) != hash_:
        return f"event {seq}: hash does not match its content"
    return None


def check_chain(store: Store) -> tuple[int, list[str]]:
    problems: list[str] = []
    prev, expected_seq, count = GENESIS_HASH, 1, 0
    for seq, *record in store.conn.execute(
            "SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events ORDER BY seq"):
        count += 1
        problem = chain_problem(seq, expected_seq, prev, tuple(record))  # type: ignore[arg-type]
        if problem:
            problems.append(problem)
        prev, expected_seq = record[-1], seq + 1
    return count, problems


def check_mirror(store: Store, head: int) -> tuple[int, list[str]]:
    """Compare the mirror with the snapshot's events ``1..head``; returns (lines checked, problems)."""
    path = store.location.log_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        return 0, [f"events.jsonl cannot be read ({exc.strerror or type(exc).__name__}): {path}"]
    lines, fragment = mirror.split_lines(data)
    db_events = store.events(until=head)
    problems: list[str] = []
    checked = 0
    for number, raw in enumerate(lines, 1):
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            problems.append(f"events.jsonl line {number}: not a JSON line")
            continue
        seq = record.get("seq") if isinstance(record, dict) else None
        if isinstance(seq, int) and seq > head:
            fragment = b""  # the rest was appended after the snapshot
            break
        checked += 1
        expected = next(db_events, None)
        if expected is None or seq != expected.seq or record != expected.to_dict():
            problems.append(f"events.jsonl line {number}: differs from the database event {seq}")
    if checked < head or fragment:
        with try_writer_lock(store.location.state_dir) as idle:
            if idle:  # no writer is appending: what is missing now is missing
                if checked < head:
                    problems.append(f"events.jsonl has {checked} of the database's {head} events")
                if fragment:
                    problems.append("events.jsonl ends with a partial line")
    return checked, problems


def check_replay(store: Store) -> list[str]:
    replayed = sqlite3.connect(":memory:", isolation_level=None)
    try:
        replay_into(replayed, list(store.events()))
        live, rebuilt = projection_rows(store.conn), projection_rows(replayed)
    finally:
        replayed.close()
    return [f"table {table}: replay gives {len(rebuilt[table])} rows, projection has {len(live[table])}"
            + ("" if len(rebuilt[table]) != len(live[table]) else " (contents differ)")
            for table in migrations.PROJECTION_TABLES if live[table] != rebuilt[table]]


def check_database(store: Store) -> list[str]:
    """SQLite's own consistency check of the database file (integrity_check: quick_check of SQLite 3.40
    misreports NULLs in WITHOUT ROWID tables whose key order differs from the column order)."""
    rows = [row[0] for row in store.conn.execute("PRAGMA integrity_check(5)")]
    return [] if rows == ["ok"] else [f"database file: {str(row)[:200]}" for row in rows]


def verify(store: Store) -> dict[str, Any]:
    """Check the database, the log and the projection; report every problem found (bounded).

    Never waits on the writer lock (see the module docstring). On PostgreSQL: the chain and replay
    equality (there is no mirror; see :func:`anvil.engine.storage.pgstore.verify_database`).
    """
    if store.backend == "postgresql":
        return verify_database(store)
    store.catch_up_mirror()
    count = lines = 0
    chain: list[str] = []
    mirrored: list[str] = []
    replay: list[str] = []
    try:
        store.conn.execute("BEGIN")
        try:
            head, _ = store.last_event()  # the first read fixes the snapshot
            damaged = check_database(store)
            count, chain = check_chain(store)
            lines, mirrored = check_mirror(store, head)
            replay = check_replay(store) if not chain else ["replay skipped: the hash chain is broken"]
        finally:
            if store.conn.in_transaction:
                store.conn.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:
        damaged = [f"the database cannot be read ({str(exc)[:200]}): `anvil rebuild --yes` rebuilds it from "
                   "events.jsonl"]
    problems = damaged + chain + mirrored + replay
    return {"ok": not problems, "event_count": count, "mirror_lines": lines,
            "chain_ok": not chain and not damaged, "mirror_ok": not mirrored, "replay_ok": not replay and not damaged,
            "schema_version": migrations.SCHEMA_VERSION,
            "problems": problems[:MAX_PROBLEMS], "problems_omitted": max(0, len(problems) - MAX_PROBLEMS)}


def verify_database(store: Store) -> dict[str, Any]:
    """``verify`` on PostgreSQL: the hash chain and replay equality, in one snapshot.

    There is no ``events.jsonl`` mirror to compare (see :mod:`anvil.engine.storage.postgres`), so
    ``mirror_ok`` is true and ``mirror_lines`` 0; ``pg_dump`` is the backup.
    """
    conn = store.conn
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        count, chain = check_chain(store)
        replay = check_replay(store) if not chain else ["replay skipped: the hash chain is broken"]
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    problems = chain + replay
    return {"ok": not problems, "event_count": count, "mirror_lines": 0, "chain_ok": not chain, "mirror_ok": True,
            "replay_ok": not replay, "schema_version": migrations.SCHEMA_VERSION,
            "problems": problems[:MAX_PROBLEMS], "problems_omitted": max(0, len(problems) - MAX_PROBLEMS)}
