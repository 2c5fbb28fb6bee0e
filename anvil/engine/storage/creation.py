"""Putting a whole new database in place: a fresh state (``init``) or one rebuilt from the log.

A new database is always built complete in a temporary file first. Where no database exists it
is renamed into place. Where one exists, it is first copied to a backup and then overwritten in
place through SQLite's backup API, in one transaction: the file keeps its identity, so a process
that still has the old database open sees the new content and never deletes the new database's
write-ahead log when it closes (SQLite removes ``state.db-wal`` by name). A file that SQLite cannot
read at all is moved to the backup instead.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from anvil.engine import progress
from anvil.engine.errors import StateIncompatible
from anvil.engine.storage import migrations, mirror
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import (
    Clock,
    Event,
    Store,
    Transaction,
    _connect,
    _fault,
    _fsync_path,
    apply_event,
    migrate,
    refresh_derived,
    system_clock,
)

SIDECARS = ("-wal", "-shm")


def _temp_path(location: StateLocation, kind: str) -> Path:
    for leftover in location.state_dir.glob(f".state.db.{kind}-*"):
        leftover.unlink(missing_ok=True)  # a crashed earlier attempt (the writer lock is held)
    return location.state_dir / f".state.db.{kind}-{os.getpid()}"


def build_database(temp: Path, fill: Callable[[sqlite3.Connection], None]) -> None:
    """Create a complete anvil database at ``temp``: the schema, then ``fill`` in one transaction.

    Raises:
        Exception: whatever ``fill`` raises (``temp`` is removed).
    """
    conn = _connect(str(temp), "rwc")
    try:
        migrate(conn, fresh=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            fill(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA journal_mode=WAL")
    except BaseException:
        conn.close()
        for path in (temp, *(Path(f"{temp}{s}") for s in SIDECARS)):
            path.unlink(missing_ok=True)
        raise
    conn.close()  # the only connection: the WAL is checkpointed into the file and removed
    _fsync_path(temp)


def install_database(location: StateLocation, temp: Path, backup: Path | None) -> Path | None:
    """With the writer lock held: make the database at ``temp`` the state's; returns the backup made.

    Raises:
        StateIncompatible: a database exists and no ``backup`` path was given.
    """
    db = location.db_path
    if not db.exists():
        os.replace(temp, db)
        _fsync_path(location.state_dir)
        return None
    if backup is None:
        raise StateIncompatible("the state directory already holds a database", code="state_exists")
    try:
        live = _connect(str(db), "rw")
        try:
            if live.execute("PRAGMA application_id").fetchone()[0] != migrations.APPLICATION_ID:
                raise sqlite3.DatabaseError("not an anvil database")  # empty or foreign: keep the file itself
            copy = _connect(str(backup), "rwc")
            try:
                live.backup(copy)
            finally:
                copy.close()
            fresh = _connect(str(temp), "rw")
            try:
                # one write transaction on the live file
                fresh.backup(live, pages=1024, progress=lambda _status, remaining, total: progress.report(
                    "copying the state", total - remaining, total))
            finally:
                fresh.close()
        finally:
            live.close()
    except sqlite3.DatabaseError:
        # Not an anvil database SQLite can read (empty, damaged, foreign): keep the file itself as the backup.
        for suffix in ("", *SIDECARS):
            side = Path(f"{db}{suffix}")
            if side.exists():
                os.replace(side, Path(f"{backup}{suffix}"))
        os.replace(temp, db)
        _fsync_path(location.state_dir)
        return backup
    for suffix in ("", *SIDECARS):
        Path(f"{temp}{suffix}").unlink(missing_ok=True)
    return backup


def create_state(location: StateLocation, actor: str, build: Callable[[Transaction], None], *,
                 clock: Clock = system_clock, backup: Path | None = None) -> None:
    """Create the state's database in one step; the caller holds the writer lock.

    ``build`` appends the first events. They are written to a temporary database that takes the
    place of ``state.db`` only once complete (a database already there is first copied to
    ``backup``), so a crash leaves the old state or the whole new one, never a database without
    its project; the mirror follows (caught up on the next open if a crash comes first).

    Raises:
        StateIncompatible: the mirror cannot be written, or a database is there and no backup named.
        AnvilError: whatever ``build`` raises (nothing is left behind).
    """
    temp = _temp_path(location, "init")
    appended: list[Event] = []

    def fill(conn: sqlite3.Connection) -> None:
        tx = Transaction(Store(location, conn, clock), actor, clock())
        build(tx)
        tx.derive()
        appended.extend(tx.appended)

    build_database(temp, fill)
    data = mirror.encode(appended)
    try:
        handle = mirror.open_for_append(location.log_path, len(data))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    try:
        _fault("init_built")
        install_database(location, temp, backup)
    except BaseException:
        handle.close()
        temp.unlink(missing_ok=True)
        raise
    _fault("init_installed")
    try:
        mirror.write_all(handle, data)
    except OSError:
        pass  # the database is whole; the mirror is caught up by the next writer


def replace_from_events(location: StateLocation, events: list[Event], backup: Path) -> Path | None:
    """With the writer lock held: rebuild the database by replaying ``events``; returns the backup made."""
    temp = _temp_path(location, "rebuild")

    def fill(conn: sqlite3.Connection) -> None:
        for number, event in enumerate(events):
            if not number & 1023:
                progress.report("replaying the event log", number, len(events))
            conn.execute("INSERT INTO events (seq, ts, actor, type, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
                         (event.seq, event.ts, event.actor, event.type, canonical_json(event.payload),
                          event.prev_hash, event.hash))
            apply_event(conn, event, derive=False)
        if events:
            refresh_derived(conn, None)

    build_database(temp, fill)
    return install_database(location, temp, backup)


def move_aside(location: StateLocation, backup_dir: Path, keep: tuple[str, ...]) -> None:
    """Move every entry of the state directory except ``keep`` into ``backup_dir``."""
    for entry in location.state_dir.iterdir():
        if entry.name not in keep:
            shutil.move(str(entry), str(backup_dir / entry.name))
