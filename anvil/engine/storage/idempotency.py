"""Idempotent retries: the first result of a keyed call, kept so a retry can return it unchanged.

Keys are scoped per actor and operation. A retry with the same key and the same request digest
gets the stored result and writes nothing; the same key with another digest is a conflict.

A record is an event (``idempotency.recorded``) appended in the call's own transaction, and the
``idempotency`` table is its projection: the hash chain covers every stored result, so a row
forged into the table is a replay difference that ``anvil verify`` reports.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.errors import Refused
from anvil.engine.storage.canonical import canonical_json
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies

EVENT = "idempotency.recorded"


def recall(tx: Transaction, actor: str, operation: str, key: str, request_digest: str) -> dict[str, Any] | None:
    """The result first returned for this key, or None when the key is new.

    Raises:
        Refused: the key was used with a different request (code ``idempotency_conflict``).
    """
    row = tx.conn.execute("SELECT request_digest, result FROM idempotency WHERE actor = ? AND operation = ? "
                          "AND key = ?", (actor, operation, key)).fetchone()
    if row is None:
        return None
    if row[0] != request_digest:
        raise Refused("this idempotency key was already used with a different input", code="idempotency_conflict")
    result: dict[str, Any] = json.loads(row[1])
    return result


def remember(tx: Transaction, actor: str, operation: str, key: str, request_digest: str,
             result: dict[str, Any]) -> None:
    """Keep ``result`` as the answer to every retry with this key, in the caller's transaction."""
    tx.append(EVENT, {"operation": operation, "key": key, "request_digest": request_digest, "result": result},
              actor=actor)


@applies(EVENT)
def _apply_recorded(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO idempotency (actor, operation, key, request_digest, result, created_at, seq) "
                 "VALUES (?,?,?,?,?,?,?)", (event.actor, p["operation"], p["key"], p["request_digest"],
                                            canonical_json(p["result"]), event.ts, event.seq))
