"""Rebuild the database from the ``events.jsonl`` mirror (``anvil rebuild``).

The mirror's hash chain is checked line by line first; a broken chain is refused, naming the
first sequence number that does not link. The new database is built in a temporary file by
replaying every event and renamed into place under the writer lock; a database that was there is
kept beside it as ``state.db.bak-<time>``. ``anvil verify`` runs on the result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import ConfirmationRequired, NotFound, Refused, StateIncompatible
from anvil.engine.storage import mirror
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.locking import DEFAULT_LOCK_TIMEOUT, writer_lock
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import GENESIS_HASH, Clock, Event, Store, format_ts, system_clock

EVENT_KEYS = ("seq", "ts", "actor", "type", "payload", "prev_hash", "hash")


@dataclass(frozen=True, slots=True)
class RebuildRequest:
    """Whether the replacement of an existing database was confirmed, and whether to only check."""

    confirm: bool = False
    dry_run: bool = False


def broken(line: int, seq: int, why: str) -> StateIncompatible:
    return StateIncompatible(f"events.jsonl line {line} breaks the hash chain at event {seq} ({why}); refusing to "
                             "rebuild from it", code="log_chain_broken",
                             details={"first_bad_seq": seq, "line": line})


def read_log(location: StateLocation) -> tuple[list[Event], bool]:
    """The mirror's events, their hash chain checked; and whether a partial last line was dropped.

    Raises:
        NotFound: there is no mirror (``log_missing``; ``not_initialized`` when there is no state at all).
        StateIncompatible: it cannot be read, or its chain is broken (``log_chain_broken``).
    """
    from anvil.engine.storage.integrity import chain_problem

    path = location.log_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not location.db_path.exists():
            raise NotFound(f"the project at {location.root} is not initialized: there is no event log to rebuild "
                           "from", code="not_initialized") from None
        raise NotFound(f"there is no event log at {path} to rebuild from", code="log_missing") from None
    except OSError as exc:
        raise mirror.unreadable(path, exc) from exc
    lines, fragment = mirror.split_lines(data)
    events: list[Event] = []
    prev = GENESIS_HASH
    for number, raw in enumerate(lines, 1):
        expected = len(events) + 1
        try:
            record = json.loads(raw.decode("utf-8"))
            if not isinstance(record, dict) or set(record) != set(EVENT_KEYS) or not isinstance(record["payload"],
                                                                                                 dict):
                raise ValueError("not an event")
            seq, ts, actor, type_ = record["seq"], record["ts"], record["actor"], record["type"]
            prev_hash, hash_ = record["prev_hash"], record["hash"]
            payload_json = canonical_json(record["payload"])
            problem = chain_problem(seq, expected, prev, (ts, actor, type_, payload_json, prev_hash, hash_))
        except (UnicodeDecodeError, ValueError, TypeError):
            raise broken(number, expected, "not an event line") from None
        if problem:
            raise broken(number, expected, problem.partition(": ")[2])
        events.append(Event(seq, ts, actor, type_, record["payload"], prev_hash, hash_))
        prev = hash_
    return events, bool(fragment.strip())


def rebuild(location: StateLocation, request: RebuildRequest, *, clock: Clock = system_clock,
            lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> dict[str, Any]:
    """Rebuild ``state.db`` from the mirror, then verify it.

    Raises:
        NotFound: no mirror.
        StateIncompatible: the mirror is unreadable or its chain is broken; nothing is changed.
        ConfirmationRequired: a database exists and the replacement was not confirmed.
        Busy: the writer lock was not granted in time.
    """
    from anvil.engine.storage.integrity import verify

    if location.database_url:
        raise Refused("`anvil rebuild` rebuilds the embedded SQLite state from events.jsonl; a PostgreSQL state has no "
                      "mirror: restore it from its pg_dump backup", code="rebuild_not_applicable")
    events, dropped = read_log(location)
    exists = location.db_path.exists()
    if exists and not request.confirm:
        raise ConfirmationRequired("a database exists: rebuilding replaces it (it is kept as a backup): repeat "
                                   "with --yes (confirm: true)")
    result: dict[str, Any] = {"rebuilt": False, "event_count": len(events), "partial_line_dropped": dropped,
                              "backup": None, "verified": False, "problems": []}
    if request.dry_run:
        return result
    from anvil.engine.storage.creation import replace_from_events

    with writer_lock(location.state_dir, lock_timeout):
        stamp = format_ts(clock()).replace(":", "")
        backup = location.state_dir / f"{location.db_path.name}.bak-{stamp}"
        suffix = 1
        while backup.exists():
            suffix += 1
            backup = location.state_dir / f"{location.db_path.name}.bak-{stamp}-{suffix}"
        made = replace_from_events(location, events, backup)
        result["backup"] = str(made) if made else None
    result["rebuilt"] = True
    with Store.open(location, clock=clock, lock_timeout=lock_timeout) as store:
        report = verify(store)
    result.update(verified=report["ok"], problems=report["problems"])
    return result
