"""Artifacts: canonical JSON envelopes of a command proof or a progress attestation.

An artifact is exactly the canonical JSON (sorted keys, no spaces, UTF-8) of::

    {"body": {...}, "digest": "<sha256 of the canonical body>", "kind": "anvil.command_proof" |
     "anvil.attestation", "signature": null | {"key_id": ..., "public_key": ..., "value": ...},
     "version": 1}

The body binds the work to one claim (task, claim id, generation, owner, task and PRD revisions,
repository). Any other byte sequence is refused: a re-encoded, edited or truncated artifact never
verifies. An unsigned artifact is its claim owner's word (``claim_owner_self_attested``); a
signature by a key on the project's trust list makes it ``configured_issuer_verified``.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage.canonical import canonical_json, sha256_hex

VERSION = 1
PROOF = "anvil.command_proof"
ATTESTATION = "anvil.attestation"
KINDS = (PROOF, ATTESTATION)
MAX_ARTIFACT_BYTES = 65536
EXCERPT_BYTES = 4096
SELF_ATTESTED = "claim_owner_self_attested"
VERIFIED = "configured_issuer_verified"

_BINDING = {"task_id": str, "claim_id": str, "generation": int, "owner": str, "task_revision": (str, type(None)),
            "prd_revision": (int, type(None)), "repository_id": (str, type(None)), "nonce": str}
BODY_FIELDS: dict[str, dict[str, Any]] = {
    PROOF: {**_BINDING, "cwd": str, "argv": list, "command": str, "exit_code": int, "duration_ms": int,
            "started_at": str, "output_sha256": str, "output_bytes": int, "output_excerpt": str},
    ATTESTATION: {**_BINDING, "claim_start_sha": (str, type(None)), "commit": (str, type(None)),
                  "changed_paths": list, "made_at": str},
}


@dataclass(frozen=True, slots=True)
class Artifact:
    """A structurally valid artifact: its kind, body, digest and signature (None: unsigned)."""

    kind: str
    body: dict[str, Any]
    digest: str
    signature: dict[str, str] | None

    def signed_bytes(self) -> bytes:
        """What a signature covers: the kind, the version and the canonical body."""
        return signing_input(self.kind, self.body)


def signing_input(kind: str, body: dict[str, Any]) -> bytes:
    return f"{kind}.v{VERSION}\n".encode() + canonical_json(body).encode("utf-8")


def envelope(kind: str, body: dict[str, Any], signature: dict[str, str] | None) -> bytes:
    """The artifact's exact bytes."""
    return canonical_json({"body": body, "digest": sha256_hex(canonical_json(body)), "kind": kind,
                           "signature": signature, "version": VERSION}).encode("utf-8")


def excerpt(output: bytes, limit: int = EXCERPT_BYTES) -> str:
    """The last ``limit`` bytes of ``output`` as text (the end of a run says how it went)."""
    tail = output[-limit:]
    return tail.decode("utf-8", errors="replace")


def decode_base64(text: str, what: str) -> bytes:
    """Raises:
        UsageError: ``proof_invalid`` when ``text`` is not strict base64.
    """
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise UsageError(f"{what} is not base64 (send the artifact file's bytes base64-encoded)",
                         code="proof_invalid") from None


def load(data: bytes, kind: str, what: str) -> Artifact:
    """Parse and check one artifact's bytes (structure, canonical form, digest; not the binding).

    Raises:
        UsageError: ``proof_oversized`` or ``proof_invalid``.
        Refused: ``proof_tampered`` when the digest does not match the body.
    """
    if len(data) > MAX_ARTIFACT_BYTES:
        raise UsageError(f"{what} is {len(data)} bytes; the limit is {MAX_ARTIFACT_BYTES}", code="proof_oversized")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{what} is not an anvil artifact (not JSON)", code="proof_invalid") from None
    if not isinstance(document, dict) or set(document) != {"body", "digest", "kind", "signature", "version"} \
            or document["version"] != VERSION or document["kind"] != kind:
        raise UsageError(f"{what} is not an {kind} artifact of version {VERSION}", code="proof_invalid")
    try:
        canonical = canonical_json(document).encode("utf-8")
    except ValueError:
        canonical = b""
    if canonical != data:
        raise UsageError(f"{what} is not in canonical form (was it re-encoded or edited?)", code="proof_invalid")
    body = document["body"]
    fields = BODY_FIELDS[kind]
    if not isinstance(body, dict) or set(body) != set(fields) or not all(
            isinstance(body[name], kinds) and not (kinds is int and isinstance(body[name], bool))
            for name, kinds in fields.items()):
        raise UsageError(f"{what} has a malformed body", code="proof_invalid")
    signature = document["signature"]
    if signature is not None and not (isinstance(signature, dict) and set(signature) == {"key_id", "public_key",
                                                                                           "value"}
                                      and all(isinstance(v, str) for v in signature.values())):
        raise UsageError(f"{what} has a malformed signature block", code="proof_invalid")
    if sha256_hex(canonical_json(body)) != document["digest"]:
        raise Refused(f"{what} was altered: its digest does not match its content", code="proof_tampered")
    return Artifact(kind, body, document["digest"], signature)
