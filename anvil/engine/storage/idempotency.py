"""Idempotent retries: the first result of a keyed call, kept so a retry can return it unchanged.

A key names one request of one operation, whoever sends it: a retry by the same actor (compared by
name key) with the same request digest gets the stored result and writes nothing; the same key with
another digest, or from another actor, is a conflict (a request id is the request's, never shared).

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
        Refused: the key was used with a different request, or by another actor (code
            ``idempotency_conflict``; who used it is not said).
    """
    rows = tx.conn.execute("SELECT actor, request_digest, result FROM idempotency WHERE operation = ? AND key = ? "
                           "ORDER BY seq", (operation, key)).fetchall()
    mine = [row for row in rows if row[0] == actor]
    if not rows:
        return None
    if not mine:
        raise Refused("this idempotency key was already used by another actor: use a fresh key (a UUID) for a new "
                      "request", code="idempotency_conflict", details={"reason": "another_actor"})
    if mine[0][1] != request_digest:
        raise Refused("this idempotency key was already used with a different input", code="idempotency_conflict",
                      details={"reason": "different_input"})
    result: dict[str, Any] = json.loads(mine[0][2])
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
