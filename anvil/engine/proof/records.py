"""Checking artifacts against the live claim, and keeping what was accepted.

A command proof or attestation counts only for the claim it names: the same task, claim id and
generation, the claim's owner (compared by name key), the task and PRD revisions the claim
started from, and (for a git-bound claim) its repository, with the command run inside the claim's
tree. Each artifact is accepted once (by digest) as ``client_reported``: the implementer's word,
whoever signed it. A signature's issuer is recorded, and signed artifacts are re-checked against
the trust list when their event is applied, so replaying the log re-verifies them.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.errors import Refused, StateIncompatible
from anvil.engine.identity import name_key
from anvil.engine.proof.artifacts import (
    ATTESTATION,
    CLIENT_REPORTED,
    PROOF,
    Artifact,
    load,
    signing_input,
    trust_level,
)
from anvil.engine.storage.connection import Connection
from anvil.engine.work.continuation import argv_command

MAX_PROOFS = 50


def _check_binding(body: dict[str, Any], claim: dict[str, Any], what: str) -> None:
    if body["task_id"] != claim["task_id"]:
        raise Refused(f"{what} was made for task {body['task_id'][:64]}, not {claim['task_id']}",
                      code="proof_mismatch")
    if body["claim_id"] != claim["id"] or body["generation"] != claim["generation"]:
        raise Refused(f"{what} belongs to claim {body['claim_id'][:64]} generation {body['generation']}, not the live "
                      f"claim {claim['id']} generation {claim['generation']}: make it again under this claim",
                      code="proof_stale")
    if name_key(body["owner"]) != claim["actor_key"]:
        raise Refused(f"{what} was made by another actor than the claim's owner", code="proof_mismatch")
    if body["task_revision"] != claim.get("task_revision") or body["prd_revision"] != claim.get("prd_revision"):
        raise Refused(f"{what} was made for another revision of the task or its PRD", code="proof_mismatch")
    git = claim.get("git")
    if git is not None and body["repository_id"] != git["repository_id"]:
        raise Refused(f"{what} was made in another repository than the claim's", code="proof_mismatch")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def verify_proofs(conn: Connection, claim: dict[str, Any], blobs: list[bytes]) -> list[dict[str, Any]]:
    """Check a whole batch of command-proof artifacts for ``claim``; any bad one refuses them all.

    Raises:
        UsageError: ``proof_invalid``, ``proof_oversized``, ``too_many_proofs``.
        Refused: ``proof_tampered``, ``proof_stale``, ``proof_mismatch``, ``proof_duplicate``,
            ``proof_failed``, ``proof_untrusted_signer``.
    """
    from anvil.engine.errors import UsageError
    from anvil.engine.proof.signing import check_signature

    if len(blobs) > MAX_PROOFS:
        raise UsageError(f"at most {MAX_PROOFS} proofs per submission", code="too_many_proofs")
    accepted: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, data in enumerate(blobs, 1):
        what = f"proof {number}"
        artifact = load(data, PROOF, what)
        body = artifact.body
        if argv_command(body["argv"]) != body["command"] or not body["argv"]:
            raise Refused(f"{what} names a command that is not its argv", code="proof_tampered")
        _check_binding(body, claim, what)
        git = claim.get("git")
        if git is not None and not _inside(body["cwd"], git["target_path"]):
            raise Refused(f"{what} ran in {body['cwd'][:200]}, outside the claim's tree {git['target_path'][:200]}",
                          code="proof_mismatch")
        if artifact.digest in seen or conn.execute("SELECT 1 FROM command_proofs WHERE digest = ?",
                                                   (artifact.digest,)).fetchone():
            raise Refused(f"{what} was already submitted (each proof counts once)", code="proof_duplicate")
        seen.add(artifact.digest)
        if body["exit_code"] != 0:
            raise Refused(f"{what}: `{body['command'][:200]}` exited with {body['exit_code']}; fix it and prove it "
                          "again (a failing run is not evidence of completion)", code="proof_failed")
        issuer = check_signature(conn, artifact.signature, artifact.signed_bytes(), what)
        accepted.append(_record(artifact, issuer))
    return accepted


def _record(artifact: Artifact, issuer: str | None) -> dict[str, Any]:
    return {"digest": artifact.digest, "body": artifact.body, "signature": artifact.signature,
            "trust_mode": CLIENT_REPORTED, "issuer_id": issuer}


def proof_receipt(record: dict[str, Any]) -> dict[str, Any]:
    """What a submission reports about an accepted proof (never its output bytes)."""
    body = record["body"]
    return {"digest": record["digest"], "generation": body["generation"],
            "trust_mode": trust_level(record["trust_mode"]), "issuer_id": record["issuer_id"],
            "command": body["command"], "exit_code": body["exit_code"], "output_sha256": body["output_sha256"],
            "duration_ms": body["duration_ms"]}


def verify_attestation(conn: Connection, claim: dict[str, Any], data: bytes) -> dict[str, Any]:
    """Check a progress attestation for ``claim``.

    Raises:
        UsageError: ``proof_invalid``, ``proof_oversized``.
        Refused: ``attestation_unbound`` (a claim without git), ``attestation_empty`` (no change since
            the claim started), ``proof_duplicate`` and the refusals of :func:`verify_proofs`.
    """
    from anvil.engine.proof.signing import check_signature

    what = "the attestation"
    artifact = load(data, ATTESTATION, what)
    body = artifact.body
    _check_binding(body, claim, what)
    git = claim.get("git")
    if git is None:
        raise Refused("the claim has no git binding, so there is nothing to attest against: claim with --branch or "
                      "--worktree, or report progress with --notes", code="attestation_unbound")
    if body["claim_start_sha"] != git["claim_start_sha"]:
        raise Refused(f"{what} starts from another commit than the claim", code="proof_mismatch")
    paths = body["changed_paths"]
    if not all(isinstance(p, dict) and set(p) == {"path", "baseline_sha256", "sha256"} for p in paths) or (
            body["commit"] in (None, body["claim_start_sha"]) and not paths):
        raise Refused(f"{what} shows no change since the claim started", code="attestation_empty")
    if conn.execute("SELECT 1 FROM attestations WHERE digest = ?", (artifact.digest,)).fetchone():
        raise Refused(f"{what} was already recorded (each attestation counts once)", code="proof_duplicate")
    issuer = check_signature(conn, artifact.signature, artifact.signed_bytes(), what)
    record = _record(artifact, issuer)
    record["kind"] = "commit" if body["commit"] not in (None, body["claim_start_sha"]) else "paths"
    return record


def recheck(conn: Connection, kind: str, records: list[dict[str, Any]]) -> None:
    """On applying an event: every signature accepted with it still verifies against the trust list
    as it stands at that point of the log (live, and again on every replay).

    Raises:
        StateIncompatible: ``proof_replay_failed``.
    """
    from anvil.engine.proof.signing import signature_valid, trusted_key

    for record in records:
        if record.get("issuer_id") is None:
            continue
        signature = record["signature"] or {}
        public = trusted_key(conn, str(signature.get("key_id")))
        if public is None or not signature_valid(public, signing_input(kind, record["body"]),
                                                 str(signature.get("value"))):
            raise StateIncompatible("a signed proof in the event log does not verify against the trust list at that "
                                    "point of the log (was the log edited, or the trust list changed outside it?)",
                                    code="proof_replay_failed")


def consume_attestation(conn: Connection, claim_id: str) -> dict[str, Any] | None:
    """The oldest accepted, unconsumed attestation of ``claim_id`` (to be consumed by a renewal)."""
    row = conn.execute("SELECT digest, generation, kind, trust_mode FROM attestations WHERE claim_id = ? AND "
                       "consumed_seq IS NULL ORDER BY recorded_seq LIMIT 1", (claim_id,)).fetchone()
    return None if row is None else {"source": "attestation", "digest": row[0], "generation": row[1], "kind": row[2],
                                     "trust_mode": trust_level(row[3])}


def changed_paths_json(record: dict[str, Any]) -> str:
    return json.dumps(record["body"]["changed_paths"], sort_keys=True)
