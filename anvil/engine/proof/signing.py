"""Ed25519 keys and signatures for artifacts, and the project's trust list.

The signature library (``cryptography``, already a dependency of the MCP SDK's JWT support) is
imported inside the functions that sign or verify, so no claim, next or plain submit pays for it.
A key is named by its id, ``ed25519:`` and the first 32 hex digits of the SHA-256 of the raw public
key. Private keys are kept as PEM (PKCS#8) text in a file only its owner may read, or in the
``ANVIL_SIGNING_KEY`` environment variable; they never reach the state, a log or an output.

The trust list is part of the event log (``trust.added`` / ``trust.removed``), so a replay of the
log re-checks every signature against the keys trusted at that point of the log. A trusted key
names who signed an artifact; it never upgrades what the artifact says to ``verified``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies

KEY_PREFIX = "ed25519:"


def key_id(public_key: bytes) -> str:
    return KEY_PREFIX + hashlib.sha256(public_key).hexdigest()[:32]


def public_key_bytes(text: str) -> bytes:
    """The raw 32-byte public key from its base64 text (``ed25519:`` prefix allowed).

    Raises:
        UsageError: ``invalid_public_key``.
    """
    raw = text.strip()
    raw = raw[len(KEY_PREFIX):] if raw.startswith(KEY_PREFIX) else raw
    try:
        data = base64.b64decode(raw.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        data = b""
    if len(data) != 32:
        raise UsageError("the public key must be the 32-byte Ed25519 key in base64, as `anvil keys generate` "
                         "prints it", code="invalid_public_key")
    return data


def generate() -> tuple[str, str]:
    """A new key pair: (private key PEM text, public key base64)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode("ascii")
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return pem, base64.b64encode(public).decode("ascii")


def sign_body(private_pem: str, kind: str, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``body`` naming its signer, and the signature over it: what a signed artifact carries (the
    signature covers the ``signer`` field, so removing the signature cannot pass for an unsigned body).

    Raises:
        UsageError: ``invalid_signing_key`` when the text is not an Ed25519 private key.
    """
    from anvil.engine.proof.artifacts import signing_input

    named = {**body, "signer": key_id(_public_bytes(_private_key(private_pem)))}
    return named, sign(private_pem, signing_input(kind, named))


def sign(private_pem: str, message: bytes) -> dict[str, str]:
    """The signature block of ``message``: key id, public key and signature, base64.

    Raises:
        UsageError: ``invalid_signing_key`` when the text is not an Ed25519 private key.
    """
    private = _private_key(private_pem)
    public = _public_bytes(private)
    return {"key_id": key_id(public), "public_key": base64.b64encode(public).decode("ascii"),
            "value": base64.b64encode(private.sign(message)).decode("ascii")}


def _public_bytes(private: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _private_key(private_pem: str) -> Any:
    """Raises:
        UsageError: ``invalid_signing_key`` when the text is not an Ed25519 private key.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        private = serialization.load_pem_private_key(private_pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        private = None
    if not isinstance(private, Ed25519PrivateKey):
        raise UsageError("the signing key is not an unencrypted Ed25519 private key in PEM form (make one with "
                         "`anvil keys generate`)", code="invalid_signing_key")
    return private


def signature_valid(public_key: bytes, message: bytes, signature_b64: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        signature = base64.b64decode(signature_b64.encode("ascii"), validate=True)
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError, binascii.Error, UnicodeEncodeError):
        return False
    return True


def trusted_key(conn: Connection, key: str) -> bytes | None:
    """The public key of ``key`` while it is on the trust list, else None."""
    row = conn.execute("SELECT public_key FROM trusted_keys WHERE key_id = ? AND removed_at IS NULL",
                       (key,)).fetchone()
    return base64.b64decode(row[0]) if row else None


def check_signature(conn: Connection, signature: dict[str, str] | None, message: bytes, what: str) -> str | None:
    """The issuer of an artifact's signature: the trusted key that signed it (None: unsigned).

    A valid signature binds who asserted the artifact; it never makes it more than the asserter's
    word (see :mod:`anvil.engine.proof.artifacts`).

    Raises:
        Refused: ``proof_untrusted_signer`` (a key not on the trust list), ``proof_tampered`` (a
            signature that does not verify).
    """
    if signature is None:
        return None
    public = trusted_key(conn, signature["key_id"])
    if public is None or base64.b64encode(public).decode("ascii") != signature["public_key"]:
        raise Refused(f"{what} is signed by {signature['key_id'][:48]}, which is not on the project's trust list "
                      "(`anvil trust list`; a lead adds keys with `anvil trust add`)", code="proof_untrusted_signer")
    if not signature_valid(public, message, signature["value"]):
        raise Refused(f"{what} was altered: its signature does not verify", code="proof_tampered")
    return signature["key_id"]


def add_trusted(tx: Transaction, public_key_text: str, label: str | None) -> dict[str, Any]:
    """Put a public key on the trust list (adding one already trusted changes nothing)."""
    public = public_key_bytes(public_key_text)
    kid = key_id(public)
    if trusted_key(tx.conn, kid) is not None:
        return {"key_id": kid, "added": False}
    tx.append("trust.added", {"key_id": kid, "public_key": base64.b64encode(public).decode("ascii"),
                              "label": label})
    return {"key_id": kid, "added": True}


def remove_trusted(tx: Transaction, kid: str) -> dict[str, Any]:
    """Take a key off the trust list; proofs it signed before stay accepted.

    Raises:
        Refused: ``key_not_trusted`` when the key is not on the list.
    """
    if trusted_key(tx.conn, kid) is None:
        raise Refused(f"{kid[:48]} is not on the trust list (`anvil trust list`)", code="key_not_trusted")
    tx.append("trust.removed", {"key_id": kid})
    return {"key_id": kid, "removed": True}


def list_trusted(conn: Connection, include_removed: bool) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT key_id, public_key, label, added_by, added_at, removed_at, removed_by FROM "
                        "trusted_keys ORDER BY seq").fetchall()
    keys = ("key_id", "public_key", "label", "added_by", "added_at", "removed_at", "removed_by")
    return [dict(zip(keys, row, strict=True)) for row in rows if include_removed or row[5] is None]


@applies("trust.added")
def _apply_added(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO trusted_keys (key_id, public_key, label, added_by, added_at, seq) VALUES (?,?,?,?,?,?) "
                 "ON CONFLICT (key_id) DO UPDATE SET public_key = excluded.public_key, label = excluded.label, "
                 "added_by = excluded.added_by, added_at = excluded.added_at, removed_at = NULL, removed_by = NULL, "
                 "seq = excluded.seq", (p["key_id"], p["public_key"], p["label"], event.actor, event.ts, event.seq))


@applies("trust.removed")
def _apply_removed(conn: Connection, event: Event) -> None:
    conn.execute("UPDATE trusted_keys SET removed_at = ?, removed_by = ? WHERE key_id = ?",
                 (event.ts, event.actor, event.payload["key_id"]))
