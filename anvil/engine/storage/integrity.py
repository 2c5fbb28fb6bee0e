"""Integrity checks: the hash chain, the ``events.jsonl`` mirror and replay equality."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from anvil.engine.storage import migrations
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.store import GENESIS_HASH, Event, Store, apply_event, event_hash, register_functions

MAX_PROBLEMS = 20


def replay_into(conn: sqlite3.Connection, events: list[Event]) -> None:
    """Build a projection from empty by applying ``events`` in order."""
    register_functions(conn)
    for index in range(migrations.SCHEMA_VERSION):
        conn.executescript(migrations.MIGRATIONS[index])
    conn.execute("BEGIN")
    for event in events:
        apply_event(conn, event)
    conn.execute("COMMIT")


def projection_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table's rows in a stable order."""
    return {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in migrations.PROJECTION_TABLES}


def check_chain(store: Store) -> tuple[int, list[str]]:
    problems: list[str] = []
    prev, expected_seq, count = GENESIS_HASH, 1, 0
    for seq, ts, actor, type_, payload, prev_hash, hash_ in store.conn.execute(
            "SELECT seq, ts, actor, type, payload, prev_hash, hash FROM events ORDER BY seq"):
        count += 1
        if seq != expected_seq:
            problems.append(f"event {seq}: sequence gap (expected {expected_seq})")
        if prev_hash != prev:
            problems.append(f"event {seq}: prev_hash does not match the previous event's hash")
        if canonical_json(json.loads(payload)) != payload:
            problems.append(f"event {seq}: payload is not canonical JSON")
        if event_hash(seq, ts, actor, type_, payload, prev_hash) != hash_:
            problems.append(f"event {seq}: hash does not match its content")
        prev, expected_seq = hash_, seq + 1
    return count, problems


def check_mirror(store: Store, size: int) -> tuple[int, list[str]]:
    """Compare the first ``size`` bytes of the mirror (what it held with the snapshot) to the log."""
    problems: list[str] = []
    db_events = {e.seq: e.to_dict() for e in store.events()}
    lines = 0
    try:
        with open(store.location.log_path, "rb") as handle:
            content = handle.read(size).decode("utf-8", errors="replace")
            for number, line in enumerate(content.splitlines(), 1):
                lines += 1
                try:
                    record = json.loads(line)
                except ValueError:
                    problems.append(f"events.jsonl line {number}: not JSON")
                    continue
                seq = record.get("seq") if isinstance(record, dict) else None
                if not isinstance(seq, int) or db_events.get(seq) != record:
                    problems.append(f"events.jsonl line {number}: differs from the database event {seq}")
    except FileNotFoundError:
        pass
    if lines != len(db_events):
        problems.append(f"events.jsonl has {lines} events, the database {len(db_events)}")
    return lines, problems


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


def verify(store: Store) -> dict[str, Any]:
    """Check the log and projection; report every problem found (bounded).

    The checks read one snapshot, taken under the writer lock together with the mirror's size, so
    writers running meanwhile never look like damage.
    """
    with store.lock():
        store.conn.execute("BEGIN")
        store.last_event()  # the first read fixes the snapshot
        try:
            size = store.location.log_path.stat().st_size
        except FileNotFoundError:
            size = 0
    try:
        count, chain = check_chain(store)
        lines, mirror = check_mirror(store, size)
        replay = check_replay(store) if not chain else ["replay skipped: the hash chain is broken"]
    finally:
        store.conn.execute("COMMIT")
    problems = chain + mirror + replay
    return {"ok": not problems, "event_count": count, "mirror_lines": lines,
            "chain_ok": not chain, "mirror_ok": not mirror, "replay_ok": not replay,
            "schema_version": migrations.SCHEMA_VERSION,
            "problems": problems[:MAX_PROBLEMS], "problems_omitted": max(0, len(problems) - MAX_PROBLEMS)}
