"""Per-agent access tokens: issued to a name with a role, kept only as digests, revoked by events.

A token reads ``anvil_<id>_<secret>``: ``id`` is public (``tk`` and the sequence number of the
event that granted it; it names the token in lists and revocations), ``secret`` is 256 random
bits. The state keeps the SHA-256 digest of the whole token, never the token: the
``token.granted`` event carries the digest (so replaying the log rebuilds the table), the token
itself is returned once, to the caller of :func:`issue`, and nowhere else. Presented tokens
are looked up by id and compared by digest in constant time.

While a project holds an unrevoked token, an HTTP server serving it authenticates every request by
token (see :mod:`anvil.ops.access`); over HTTP only a lead's own token may issue tokens, so a
shared-token caller can never switch the server to per-agent tokens and lock the others out. Each
request reads the table again, so a revocation is in force from the next request on, on every
replica.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from anvil.engine.errors import NotFound, Refused, UsageError
from anvil.engine.identity import Identity, authenticated, name_key
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies, format_ts
from anvil.engine.vocab import ROLES

PREFIX = "anvil_"
_TOKEN = re.compile(r"^anvil_(tk[0-9]{6,12})_[A-Za-z0-9_-]{43}$")
_DURATION = re.compile(r"^([1-9][0-9]{0,5})([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_LIFETIME = timedelta(days=3660)
TOKEN_COLUMNS = ("token_id", "actor", "role", "created_at", "created_by", "expires_at", "revoked_at", "revoked_by")


def digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_lifetime(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m`` or ``2w`` as a duration.

    Raises:
        UsageError: ``invalid_duration`` (not of that form, or longer than ten years).
    """
    match = _DURATION.match(text.strip().lower())
    lifetime = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)]) if match else None
    if lifetime is None or lifetime > MAX_LIFETIME:
        raise UsageError("--expires takes a duration such as 90m, 12h, 30d or 2w (at most 3660d)",
                         code="invalid_duration")
    return lifetime


@dataclass(frozen=True, slots=True)
class Grant:
    """What a lead asks for: a token for ``actor`` with ``role``, valid for ``lifetime`` (None: until revoked)."""

    actor: str
    role: str
    lifetime: timedelta | None = None


def issue(tx: Transaction, grant: Grant) -> dict[str, Any]:
    """Issue a new token; the returned ``token`` is the only copy that will ever exist.

    An actor may hold several live tokens (to rotate without a gap), all of one role.

    Raises:
        UsageError: an unknown role.
        Refused: ``token_role_conflict`` when the actor holds live tokens of another role.
    """
    if grant.role not in ROLES:
        raise UsageError(f"role must be one of {', '.join(ROLES)}", code="invalid_input")
    key = name_key(grant.actor)
    other = tx.conn.execute("SELECT role FROM tokens WHERE actor_key = ? AND revoked_at IS NULL AND role != ? "
                            "AND (expires_at IS NULL OR expires_at > ?) LIMIT 1",
                            (key, grant.role, tx.ts)).fetchone()
    if other is not None:
        raise Refused(f"this name holds live tokens with the {other[0]} role; revoke them first (`anvil token "
                      "revoke NAME`) to change its role", code="token_role_conflict")
    token_id = f"tk{tx.next_seq():06d}"
    token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    expires = format_ts(tx.now + grant.lifetime) if grant.lifetime else None
    tx.append("token.granted", {"token_id": token_id, "actor": grant.actor, "role": grant.role,
                                "digest": digest(token), "expires_at": expires})
    return {"token_id": token_id, "actor": grant.actor, "role": grant.role, "token": token,
            "created_at": tx.ts, "expires_at": expires}


def revoke(tx: Transaction, actor: str, token_id: str | None) -> dict[str, Any]:
    """Revoke the actor's live tokens (or only ``token_id``); in force from the next request.

    Revoking a name that holds no live token changes nothing and succeeds (offboarding scripts can
    repeat it); naming a token id that is not live for that name is an error.

    Raises:
        NotFound: ``token_not_found`` when ``token_id`` names no live token of ``actor``.
    """
    sql = "SELECT token_id FROM tokens WHERE actor_key = ? AND revoked_at IS NULL"
    params: list[Any] = [name_key(actor)]
    if token_id is not None:
        sql += " AND token_id = ?"
        params.append(token_id)
    ids = [row[0] for row in tx.conn.execute(sql + " ORDER BY token_id", params)]
    if not ids and token_id is not None:
        raise NotFound("no unrevoked token of this name has that id (see `anvil token list --all`)",
                       code="token_not_found")
    if ids:
        tx.append("token.revoked", {"token_ids": ids, "actor": actor})
    return {"actor": actor, "revoked": ids, "count": len(ids)}


def _status(row: dict[str, Any], now: str) -> str:
    if row["revoked_at"]:
        return "revoked"
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return "expired"
    return "active"


def listing(conn: Connection, now: str, *, actor: str | None, include_ended: bool) -> list[dict[str, Any]]:
    """Every token (metadata only, never a digest), newest first; ended ones with ``include_ended``."""
    sql = f"SELECT {', '.join(TOKEN_COLUMNS)} FROM tokens"
    params: list[Any] = []
    if actor is not None:
        sql += " WHERE actor_key = ?"
        params.append(name_key(actor))
    rows = [dict(zip(TOKEN_COLUMNS, r, strict=True)) for r in conn.execute(sql + " ORDER BY seq DESC", params)]
    out = []
    for row in rows:
        row["status"] = _status(row, now)
        if include_ended or row["status"] == "active":
            out.append(row)
    return out


def in_use(conn: Connection) -> bool:
    """Whether this project holds a token that was not revoked (then every HTTP request must present a
    live one). Revoking every token hands a server that has a shared token back to it; a server never
    falls open for it (:class:`anvil.ops.access.Gatekeeper`)."""
    return conn.execute("SELECT 1 FROM tokens WHERE revoked_at IS NULL LIMIT 1").fetchone() is not None


def verify(conn: Connection, presented: str, now: datetime) -> Identity | None:
    """The identity ``presented`` stands for, or None (unknown, malformed, revoked or expired)."""
    token_id = presented_id(presented)
    if token_id is None:
        return None
    row = conn.execute(f"SELECT {_VERIFY_COLUMNS} FROM tokens WHERE token_id = ?", (token_id,)).fetchone()
    return _identity(presented, token_id, row, now)


def presented_id(presented: str) -> str | None:
    """The public id of a well-formed token (``tk...``), or None when ``presented`` is not one."""
    match = _TOKEN.match(presented)
    return match.group(1) if match else None


_VERIFY_COLUMNS = "digest, actor, role, expires_at, revoked_at"
_GATE_SQL = ("SELECT EXISTS (SELECT 1 FROM tokens WHERE revoked_at IS NULL), t.digest, t.actor, t.role, "
             "t.expires_at, t.revoked_at{clock} FROM (SELECT 1 AS one) AS one LEFT JOIN tokens AS t ON t.token_id = ?")


@dataclass(frozen=True, slots=True)
class GateReading:
    """What one request's admission read, in one statement: whether tokens are in use, the presented
    token's row (None: no such id, or nothing presented) and the database's clock (None: not asked)."""

    in_use: bool
    row: tuple[Any, ...] | None
    clock: datetime | None


def gate_reading(conn: Connection, token_id: str | None, *, database_clock: bool) -> GateReading:
    """One statement answering what admitting a request needs: tokens in use, ``token_id``'s row and,
    with ``database_clock`` (PostgreSQL's ``clock_timestamp()``, the clock every replica agrees on), now."""
    sql = _GATE_SQL.format(clock=", clock_timestamp()" if database_clock else "")
    row = conn.execute(sql, (token_id,)).fetchone()
    token_row = tuple(row[1:6]) if row[1] is not None else None
    return GateReading(bool(row[0]), token_row, row[6].astimezone(UTC) if database_clock else None)


def verify_read(presented: str, reading: GateReading, now: datetime) -> Identity | None:
    """:func:`verify` on a :class:`GateReading` made for ``presented``'s id (no further statement)."""
    token_id = presented_id(presented)
    if token_id is None:
        return None
    return _identity(presented, token_id, reading.row, now)


def _identity(presented: str, token_id: str, row: Any, now: datetime) -> Identity | None:
    if row is None:
        hmac.compare_digest(digest(presented), digest(presented))  # same work whether or not the id exists
        return None
    stored, actor, role, expires_at, revoked_at = row
    if not hmac.compare_digest(digest(presented), stored):
        return None
    if revoked_at is not None or (expires_at is not None and expires_at <= format_ts(now)):
        return None
    return authenticated(actor, role, token_id)


def live(conn: Connection, token_id: str, now: str) -> bool:
    """Whether the token ``token_id`` is still neither revoked nor expired at ``now`` (a stored timestamp)."""
    row = conn.execute("SELECT expires_at, revoked_at FROM tokens WHERE token_id = ?", (token_id,)).fetchone()
    return row is not None and row[1] is None and (row[0] is None or row[0] > now)


@applies("token.granted")
def _apply_granted(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO tokens (token_id, actor, actor_key, role, digest, created_at, created_by, expires_at, "
                 "seq) VALUES (?,?,?,?,?,?,?,?,?)",
                 (p["token_id"], p["actor"], name_key(p["actor"]), p["role"], p["digest"], event.ts, event.actor,
                  p["expires_at"], event.seq))


@applies("token.revoked")
def _apply_revoked(conn: Connection, event: Event) -> None:
    conn.executemany("UPDATE tokens SET revoked_at = ?, revoked_by = ? WHERE token_id = ?",
                     [(event.ts, event.actor, token_id) for token_id in event.payload["token_ids"]])
