"""Artifacts: canonical JSON envelopes of a command proof, a progress attestation or a verification.

An artifact is exactly the canonical JSON (sorted keys, no spaces, UTF-8) of::

    {"body": {...}, "digest": "<sha256 of the canonical body>", "kind": "anvil.command_proof" |
     "anvil.attestation" | "anvil.verification", "signature": null | {"key_id": ..., "public_key": ...,
     "value": ...}, "version": 2}

The body of a proof or an attestation binds the work to one claim (task, claim id, generation,
owner, task and PRD revisions, repository); a verification's body binds one command's outcome to
the task, the submitted commit and its tree (the verifier is whoever records it). Every body names its ``signer``:
the key id of the signature the artifact carries, or null for an unsigned one. The signature
covers the body, so an artifact whose signature was removed, whose body names another signer, or
whose body does not match its signature is refused as tampered, never read as unsigned. Any other
byte sequence is refused too: a re-encoded, edited or truncated artifact never verifies.

The digest only says the body was not damaged: anyone can recompute it. What a proof made by the
implementer says is its ``client_reported`` word, signed or not (a signature binds who asserted
it, never that it is true). ``verified`` is never a property of an artifact: it is what the state
records when an identity other than the implementer re-ran the command on the exact submitted
commit and recorded the outcome under its own name (``verify_task``).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.storage.canonical import canonical_json, sha256_hex

VERSION = 2
LEGACY_VERSION = 1  # bodies without a signer, kept in event logs written before version 2
PROOF = "anvil.command_proof"
ATTESTATION = "anvil.attestation"
VERIFICATION = "anvil.verification"
KINDS = (PROOF, ATTESTATION, VERIFICATION)
MAX_ARTIFACT_BYTES = 65536
EXCERPT_BYTES = 4096
CLIENT_REPORTED = "client_reported"
VERIFIED = "verified"
LEGACY_TRUST = {"claim_owner_self_attested": CLIENT_REPORTED, "configured_issuer_verified": CLIENT_REPORTED}
"""Trust names of event logs written before the two honest levels: both were the implementer's word."""


def trust_level(recorded: str) -> str:
    """The trust level a recorded name means today (old names map to ``client_reported``)."""
    return LEGACY_TRUST.get(recorded, recorded)


_OPTIONAL_TEXT = (str, type(None))
_BINDING = {"task_id": str, "claim_id": str, "generation": int, "owner": str, "task_revision": _OPTIONAL_TEXT,
            "prd_revision": (int, type(None)), "repository_id": _OPTIONAL_TEXT, "nonce": str,
            "signer": _OPTIONAL_TEXT}
_RUN = {"cwd": str, "argv": list, "command": str, "exit_code": int, "duration_ms": int, "started_at": str,
        "output_sha256": str, "output_bytes": int, "output_excerpt": str}
BODY_FIELDS: dict[str, dict[str, Any]] = {
    PROOF: {**_BINDING, **_RUN},
    ATTESTATION: {**_BINDING, "claim_start_sha": _OPTIONAL_TEXT, "commit": _OPTIONAL_TEXT,
                  "changed_paths": list, "made_at": str},
    VERIFICATION: {**_RUN, "task_id": str, "commit": str, "tree": str, "nonce": str, "timeout_seconds": int,
                   "signer": _OPTIONAL_TEXT},
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
    """What a signature covers; a body without a ``signer`` is of the legacy version (old event logs)."""
    version = VERSION if "signer" in body else LEGACY_VERSION
    return f"{kind}.v{version}\n".encode() + canonical_json(body).encode("utf-8")


def envelope(kind: str, body: dict[str, Any], signature: dict[str, str] | None) -> bytes:
    """The artifact's exact bytes. An unsigned body that does not name its signer names none
    (``signer: null``); a signed one must name it (:func:`anvil.engine.proof.signing.sign_body`).

    Raises:
        ValueError: a signature over a body that does not name its signer.
    """
    if "signer" not in body:
        if signature is not None:
            raise ValueError("a signed body names its signer: sign it with signing.sign_body")
        body = {**body, "signer": None}
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
        UsageError: ``proof_oversized`` or ``proof_invalid`` (also an artifact of an older version).
        Refused: ``proof_tampered`` when the digest does not match the body, or the signature the
            body names is missing or another one than it carries.
    """
    if len(data) > MAX_ARTIFACT_BYTES:
        raise UsageError(f"{what} is {len(data)} bytes; the limit is {MAX_ARTIFACT_BYTES}", code="proof_oversized")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{what} is not an anvil artifact (not JSON)", code="proof_invalid") from None
    if not isinstance(document, dict) or set(document) != {"body", "digest", "kind", "signature", "version"} \
            or document["kind"] != kind:
        raise UsageError(f"{what} is not an {kind} artifact", code="proof_invalid")
    if document["version"] != VERSION:
        raise UsageError(f"{what} is an {kind} artifact of version {str(document['version'])[:8]}, not {VERSION}: "
                         "make it again with this anvil (`anvil proof run`, `anvil attest`)", code="proof_invalid")
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
    carried = signature["key_id"] if signature is not None else None
    if body["signer"] != carried:
        why = ("its body says it is signed by a key whose signature it no longer carries (was the signature "
               "removed?)" if carried is None else "it carries a signature its body does not name")
        raise Refused(f"{what} was altered: {why}", code="proof_tampered")
    return Artifact(kind, body, document["digest"], signature)
