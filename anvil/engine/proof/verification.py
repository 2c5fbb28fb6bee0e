"""Verified proofs: an identity other than the implementer re-ran the contract on the submitted commit.

The verifier's CLI (``anvil verify-task``) checks the submitted commit out in a scratch worktree of
its own clone, runs each contract command there and sends one ``anvil.verification`` artifact per
command. :func:`record` checks them against the task's latest submission and records them as one
``task.verified`` event authored by the verifier: the proofs it holds are ``verified``, bound to
the task, the commit, its tree and the verifier. Nothing here runs a command.

What makes a proof verified is who recorded it, not what the artifact says: the server refuses the
implementer (compared by name key; over HTTP the name is the token's) and a commit other than the
one submitted, and records the caller as the verifier. Over HTTP with per-agent
tokens forging a verified proof therefore needs the verifier's token; locally, identities are
self-declared (see docs/agents.md).

:func:`approved_commit` is what a lander reads: the commit a ``done`` task's approval decided on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import Refused, UsageError
from anvil.engine.identity import Identity, name_key
from anvil.engine.proof.artifacts import VERIFICATION, VERIFIED, load, trust_level
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.vocab import COMPLETING_CATEGORIES
from anvil.engine.work.continuation import argv_command, normal_command

MAX_RESULTS = 50


@dataclass(frozen=True, slots=True)
class VerificationRequest:
    """A verifier's outcomes of the contract commands on one submitted commit."""

    task_id: str
    verifier: Identity
    commit_sha: str
    tree_sha: str
    results: list[bytes] = field(default_factory=list)  # anvil.verification artifacts' bytes
    evidence_id: str | None = None  # the submission the verifier read (refused when a newer one arrived)


def record(tx: Transaction, request: VerificationRequest) -> dict[str, Any]:
    """Record a verifier's outcomes as ``verified`` proofs of the task's latest submission.

    A failing command is recorded too (it refutes the implementer's pass); the result's ``passed``
    says whether every command passed.

    Raises:
        NotFound: no such task.
        UsageError: ``invalid_commit``, ``proof_invalid``, ``proof_oversized``, ``too_many_proofs``,
            ``verification_results_required``.
        Refused: ``not_in_review``, ``evidence_missing``, ``evidence_not_completion``,
            ``verification_stale``, ``verifier_is_implementer``, ``verification_needs_commit``,
            ``verification_commit_mismatch``, ``verification_tree_mismatch``, ``proof_mismatch``,
            ``proof_tampered``, ``proof_duplicate``, ``verification_not_in_contract``,
            ``proof_untrusted_signer``.
    """
    from anvil.engine.git.commits import check_object_id
    from anvil.engine.proof.contract import contract_commands, evaluate, prd_contract
    from anvil.engine.work.decisions import latest_evidence

    commit = str(check_object_id(request.commit_sha, "--commit"))
    tree = str(check_object_id(request.tree_sha, "--tree"))
    task = task_rows.get_task(tx.conn, request.task_id)
    task_id = task["id"]
    if task["status"] != "needs_review":
        raise Refused(f"task {task_id} is {task['status']}, not waiting for review: there is no submission to "
                      "verify (verification re-proves handed-in work before its review)", code="not_in_review")
    evidence = latest_evidence(tx.conn, task_id)
    if evidence is None:
        raise Refused(f"task {task_id} has no evidence to verify", code="evidence_missing")
    if evidence["category"] not in COMPLETING_CATEGORIES:
        raise Refused(f"the latest evidence of task {task_id} is {evidence['category']}, not a hand-in",
                      code="evidence_not_completion")
    if request.evidence_id is not None and request.evidence_id != evidence["id"]:
        raise Refused(f"task {task_id} was submitted again ({evidence['id']}) since you read submission "
                      f"{request.evidence_id[:64]}: run `anvil verify-task {task_id}` again", code="verification_stale")
    if evidence["actor_key"] == request.verifier.key:
        raise Refused(f"{request.verifier.actor} submitted this work, so its own re-run proves nothing new: a "
                      "verifier other than the implementer (a reviewer, the lead or a runner) runs `anvil verify-task "
                      f"{task_id}`", code="verifier_is_implementer")
    if evidence["commit_sha"] is None:
        raise Refused(f"the submission {evidence['id']} of task {task_id} names no commit, so there is nothing to "
                      "check out and verify: the implementer claims with --branch or --worktree and submits from the "
                      "claim's tree (the CLI binds the branch head)", code="verification_needs_commit")
    if commit != evidence["commit_sha"]:
        raise Refused(f"the results ran on commit {commit[:12]}, but submission {evidence['id']} hands in "
                      f"{evidence['commit_sha'][:12]}: verify the submitted commit",
                      code="verification_commit_mismatch")
    if evidence["tree_sha"] is not None and tree != evidence["tree_sha"]:
        raise Refused(f"commit {commit[:12]} has tree {tree[:12]} in your clone, but the submission recorded tree "
                      f"{evidence['tree_sha'][:12]}: the two do not describe the same work",
                      code="verification_tree_mismatch")
    claims, _ = prd_contract(tx.conn, task)
    records = _check_results(tx.conn, request, task_id, commit, tree, contract_commands(task, claims))
    claim = tx.conn.execute("SELECT generation FROM claims WHERE id = ?", (evidence.get("claim_id"),)).fetchone()
    verifier = request.verifier
    tx.append("task.verified", {
        "task_id": task_id, "evidence_id": evidence["id"], "claim_id": evidence.get("claim_id"),
        "generation": claim[0] if claim else 0, "commit_sha": commit, "tree_sha": tree, "verifier": verifier.actor,
        "verifier_role": verifier.role, "verifier_authenticated": verifier.authenticated, "results": records})
    contract = evaluate(tx.conn, task, evidence["id"], required_trust=VERIFIED)
    outcomes = [{"command": r["body"]["command"], "exit_code": r["body"]["exit_code"], "digest": r["digest"],
                 "duration_ms": r["body"]["duration_ms"], "output_sha256": r["body"]["output_sha256"],
                 "issuer_id": r["issuer_id"]} for r in records]
    verified = set(contract["verified_commands"])
    return {"task_id": task_id, "evidence_id": evidence["id"], "commit_sha": commit, "tree_sha": tree,
            "verifier": verifier.actor, "results": outcomes,
            "passed": all(r["exit_code"] == 0 for r in outcomes),
            "failed_commands": [r["command"] for r in outcomes if r["exit_code"] != 0],
            "unverified_commands": [c for c in contract["contract_commands"] if normal_command(c) not in verified],
            "trust_level": contract["trust_level"]}


def _check_results(conn: Connection, request: VerificationRequest, task_id: str, commit: str, tree: str,
                   commands: list[str]) -> list[dict[str, Any]]:
    """Load and check every result artifact; any bad one refuses them all."""
    from anvil.engine.proof.signing import check_signature

    if not request.results:
        raise UsageError(f"no results to record: run `anvil verify-task {task_id}` (it runs the contract's commands "
                         "on the submitted commit and sends their outcomes)", code="verification_results_required")
    if len(request.results) > MAX_RESULTS:
        raise UsageError(f"at most {MAX_RESULTS} results per verification", code="too_many_proofs")
    wanted = {normal_command(c) for c in commands}
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, data in enumerate(request.results, 1):
        what = f"result {number}"
        artifact = load(data, VERIFICATION, what)
        body = artifact.body
        if not body["argv"] or argv_command(body["argv"]) != body["command"]:
            raise Refused(f"{what} names a command that is not its argv", code="proof_tampered")
        if body["task_id"] != task_id or body["commit"] != commit or body["tree"] != tree:
            raise Refused(f"{what} was made for another task, commit or tree than this verification",
                          code="proof_mismatch")
        if normal_command(body["command"]) not in wanted:
            raise Refused(f"{what}: `{body['command'][:200]}` is not a command of task {task_id}'s evidence contract",
                          code="verification_not_in_contract")
        if artifact.digest in seen or conn.execute("SELECT 1 FROM command_proofs WHERE digest = ?",
                                                   (artifact.digest,)).fetchone():
            raise Refused(f"{what} was already recorded (each result counts once)", code="proof_duplicate")
        seen.add(artifact.digest)
        issuer = check_signature(conn, artifact.signature, artifact.signed_bytes(), what)
        records.append({"digest": artifact.digest, "body": body, "signature": artifact.signature,
                        "trust_mode": VERIFIED, "issuer_id": issuer})
    return records


@applies("task.verified")
def _apply_verified(conn: Connection, event: Event) -> None:
    from anvil.engine.proof.records import recheck

    p = event.payload
    recheck(conn, VERIFICATION, p["results"])
    conn.executemany(
        "INSERT INTO command_proofs (digest, evidence_id, task_id, claim_id, generation, command, exit_code, "
        "trust_mode, issuer_id, output_sha256, seq, commit_sha, tree_sha, proved_by, proved_by_key, proved_by_role, "
        "proved_by_authenticated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(r["digest"], p["evidence_id"], p["task_id"], p["claim_id"] or "", p["generation"], r["body"]["command"],
          r["body"]["exit_code"], trust_level(r["trust_mode"]), r["issuer_id"], r["body"]["output_sha256"], event.seq,
          p["commit_sha"], p["tree_sha"], p["verifier"], name_key(p["verifier"]), p["verifier_role"],
          int(bool(p["verifier_authenticated"]))) for r in p["results"]])


def approved_commit(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """The commit a task's approval decided on: ``{commit, tree, branch, evidence_id, review_seq,
    reviewer, verified_commands}``, or None when the task is not approved (done) or its approval
    names no commit (work submitted outside a git mode).

    A lander merges exactly this commit; when the claim branch has moved past it since, the approval
    is stale for landing (re-review or re-verify first). ``verified_commands`` are the contract
    commands verified on it before approval.
    """
    task = conn.execute("SELECT status FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if task is None or task[0] != "done":
        return None
    row = conn.execute("SELECT r.commit_sha, r.tree_sha, e.branch, r.evidence_id, r.seq, r.reviewer FROM reviews r "
                       "LEFT JOIN evidence e ON e.id = r.evidence_id WHERE r.task_id = ? ORDER BY r.seq DESC LIMIT 1",
                       (task_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    latest: dict[str, tuple[str, int]] = {}  # the latest verified outcome of each command on that commit
    for command, exit_code in conn.execute("SELECT command, exit_code FROM command_proofs WHERE evidence_id = ? AND "
                                           "trust_mode = ? AND commit_sha = ? ORDER BY seq, digest",
                                           (row[3], VERIFIED, row[0])):
        latest[normal_command(command)] = (command, exit_code)
    verified = sorted(command for command, exit_code in latest.values() if exit_code == 0)
    return {"commit": row[0], "tree": row[1], "branch": row[2], "evidence_id": row[3], "review_seq": row[4],
            "reviewer": row[5], "verified_commands": verified}
