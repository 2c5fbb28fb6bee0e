"""Browser sessions: a bearer token exchanged once for a signed, expiring cookie any replica can check.

A session cookie is ``<payload>.<mac>`` (both base64url): the payload names the credential it
came from (``shared`` for a server's shared token, or a per-agent token's public id such as
``tk000042``), when it was issued and when it expires; the MAC is HMAC-SHA256 over the payload
with a key derived from that credential's digest and the server's session secret. The digest alone
is not enough: per-agent token digests are in the event log, and whoever can read the log must not
be able to mint a session. The secret is ``ANVIL_BOARD_SESSION_SECRET`` (32 characters or more;
every replica of a deployment sets the same one, so any of them checks any cookie), else a random
one each server process makes for itself (a browser then logs in again on another replica or after
a restart). No session is stored anywhere. The cookie never contains a token, a digest or the
secret, and a revoked or expired per-agent token ends its sessions on the next request, because
the key is only derived for a live token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

from anvil.engine.storage.connection import Connection

SESSION_SECONDS = 12 * 3600
SHARED_SUBJECT = "shared"
MAX_COOKIE_CHARS = 400
_LABEL = b"anvil board session v1"
_TOKEN_ID = re.compile(r"^anvil_(tk[0-9]{6,12})_")
_SUBJECT = re.compile(r"^(shared|tk[0-9]{6,12})$")
SECRET_ENV = "ANVIL_BOARD_SESSION_SECRET"
MIN_SECRET_CHARS = 32
_PROCESS_SECRET = secrets.token_bytes(32)


class TokenHolder(NamedTuple):
    """A live per-agent token's session key and whom it names."""

    key: bytes
    actor: str
    role: str


def server_secret(env: Mapping[str, str]) -> bytes:
    """The session secret: ``ANVIL_BOARD_SESSION_SECRET`` when it is long enough, else this process's own."""
    value = env.get(SECRET_ENV, "").strip()
    return hashlib.sha256(value.encode("utf-8")).digest() if len(value) >= MIN_SECRET_CHARS else _PROCESS_SECRET


def session_key(secret_digest: bytes, server: bytes) -> bytes:
    """The MAC key of sessions issued for the credential whose digest is ``secret_digest``, under the
    server's session secret ``server`` (:func:`server_secret`)."""
    return hmac.new(server, _LABEL + b"\0" + secret_digest, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def seal(key: bytes, subject: str, now: int, lifetime: int = SESSION_SECONDS) -> str:
    """A session cookie value for ``subject``, valid from ``now`` (epoch seconds) for ``lifetime`` seconds."""
    payload = json.dumps({"v": 1, "sub": subject, "iat": now, "exp": now + lifetime, "n": secrets.token_hex(8)},
                         separators=(",", ":"), sort_keys=True).encode("ascii")
    body = _b64(payload)
    return f"{body}.{_b64(hmac.new(key, body.encode('ascii'), hashlib.sha256).digest())}"


def _payload(cookie: str) -> dict[str, Any] | None:
    if not cookie or len(cookie) > MAX_COOKIE_CHARS or cookie.count(".") != 1:
        return None
    try:
        payload = json.loads(_unb64(cookie.split(".", 1)[0]))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def subject_of(cookie: str) -> str | None:
    """The credential a cookie claims to come from (unverified: only to pick the key), or None."""
    payload = _payload(cookie)
    subject = payload.get("sub") if payload else None
    return subject if isinstance(subject, str) and _SUBJECT.match(subject) else None


def unseal(cookie: str, key: bytes, now: int) -> dict[str, Any] | None:
    """The payload of a cookie signed with ``key`` and not expired at ``now``, else None."""
    payload = _payload(cookie)
    if payload is None:
        return None
    body, _, mac = cookie.partition(".")
    try:
        presented = _unb64(mac)
    except ValueError:
        return None
    expected = hmac.new(key, body.encode("ascii"), hashlib.sha256).digest()
    if not hmac.compare_digest(presented, expected):
        return None
    expires = payload.get("exp")
    if not isinstance(expires, int) or expires <= now:
        return None
    return payload


def token_id_of(token: str) -> str | None:
    """The public id of a per-agent token (``anvil_<id>_<secret>``), or None for any other string."""
    match = _TOKEN_ID.match(token)
    return match.group(1) if match else None


def live_token(conn: Connection, token_id: str, now: str, server: bytes) -> TokenHolder | None:
    """The session key and holder of the per-agent token ``token_id`` while it is live, else None."""
    row = conn.execute("SELECT digest, actor, role, expires_at, revoked_at FROM tokens WHERE token_id = ?",
                       (token_id,)).fetchone()
    if row is None:
        return None
    stored, actor, role, expires_at, revoked_at = row
    if revoked_at is not None or (expires_at is not None and expires_at <= now):
        return None
    return TokenHolder(session_key(bytes.fromhex(stored), server), actor, role)
