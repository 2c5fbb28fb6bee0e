"""Reporting work: progress notes, completion evidence, and the task's recent history."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import Refused, UsageError
from anvil.engine.identity import name_key
from anvil.engine.project import project_row
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.vocab import COMPLETING_CATEGORIES, EVIDENCE_CATEGORIES
from anvil.engine.work.claims import (
    Fence,
    active_claim,
    active_claim_read,
    fencing_required,
    held_claim,
    held_claim_of,
)


@dataclass(frozen=True, slots=True)
class ProgressNote:
    """A progress note on a task: free text, with an optional phase label and detail."""

    task_id: str
    actor: str
    notes: str | None
    phase: str | None = None
    detail: str | None = None
    attestation: bytes | None = None  # an attestation artifact's bytes (progress.attested)
    any_task: bool = True  # the caller may note any task nobody holds (a reviewer, a lead, or unauthenticated)


@dataclass(frozen=True, slots=True)
class EvidenceSubmission:
    """Evidence a claim holder submits: what was run and changed, and what kind of evidence it is."""

    task_id: str
    actor: str
    commands_run: list[str]
    files_changed: list[str] = field(default_factory=list)
    output_excerpt: str | None = None
    pr_url: str | None = None
    commit_sha: str | None = None
    category: str = "completion"
    proofs: list[bytes] = field(default_factory=list)  # command-proof artifacts' bytes
    tree_sha: str | None = None  # the tree of ``commit_sha`` (the CLI reads both from the claim branch)


def submit_progress(tx: Transaction, note: ProgressNote, fence: Fence) -> dict[str, Any]:
    """Record a progress note, or verify and record an attestation (``progress.attested``).

    When the task is claimed only its holder (live generation) may write. A task nobody holds takes
    notes from its last claimer, and from callers with ``any_task`` (a reviewer or lead token, or a
    caller no token authenticated), except where the project requires fencing and the task has been
    claimed before: an unfenced note there could be a run fenced out by a release or an expiry. Free
    text never authorizes anything; an accepted attestation may be consumed once by the next renewal.

    Raises:
        UsageError: ``notes_required`` (neither notes nor an attestation); ``fencing_required``.
        Refused: as :func:`anvil.engine.work.claims.held_claim` and
            :func:`anvil.engine.proof.records.verify_attestation`; ``not_owner`` for an agent's note on
            an unclaimed task it was not the last to claim.
    """
    task = task_rows.get_task(tx.conn, note.task_id)
    task_id = task["id"]
    live = active_claim(tx.conn, task_id)
    if live is not None or fence.given or note.attestation is not None:
        live = held_claim(tx.conn, task_id, note.actor, fence)
    elif fencing_required(tx.conn) and tx.conn.execute("SELECT 1 FROM claims WHERE task_id = ? LIMIT 1",
                                                       (task_id,)).fetchone() is not None:
        # After a claim ended, an unfenced note could be the old run still writing: fenced out too.
        raise UsageError(f"this project requires fencing and task {task_id} has been claimed before: a note names "
                         "the generation (or claim id) of the live claim; claim the task first",
                         code="fencing_required")
    if live is None and not note.any_task:
        last = tx.conn.execute("SELECT actor_key FROM claims WHERE task_id = ? ORDER BY generation DESC LIMIT 1",
                               (task_id,)).fetchone()
        if last is None or last[0] != name_key(note.actor):
            raise Refused(f"task {task_id} is not claimed: only its last claimer, a reviewer or a lead may add notes "
                          "to it (claim it first)", code="not_owner")
    if note.attestation is None and not (note.notes or "").strip():
        raise UsageError("progress needs --notes, or an attestation (--attestation-file)", code="notes_required")
    generation = live["generation"] if live else None
    attestation = None
    if note.attestation is not None and live is not None:
        from anvil.engine.proof.records import verify_attestation

        record = verify_attestation(tx.conn, live, note.attestation)
        event = tx.append("progress.attested", {"task_id": task_id, "actor": note.actor, "claim_id": live["id"],
                                                "generation": generation, "notes": note.notes,
                                                "phase": note.phase, "detail": note.detail, "attestation": record})
        attestation = {"digest": record["digest"], "generation": generation, "kind": record["kind"],
                       "trust_mode": record["trust_mode"], "issuer_id": record["issuer_id"],
                       "changed_paths": len(record["body"]["changed_paths"]), "commit": record["body"]["commit"]}
    else:
        event = tx.append("progress.noted", {"task_id": task_id, "actor": note.actor, "notes": note.notes,
                                             "phase": note.phase, "detail": note.detail, "generation": generation})
    return {"recorded": True, "task_id": task_id, "seq": event.seq, "generation": generation,
            "event_action": event.type, "attestation": attestation}


@applies("progress.attested")
def _apply_attested(conn: Connection, event: Event) -> None:
    from anvil.engine.proof.artifacts import ATTESTATION, trust_level
    from anvil.engine.proof.records import changed_paths_json, recheck

    p = event.payload
    record = p["attestation"]
    recheck(conn, ATTESTATION, [record])
    conn.execute("INSERT INTO progress (seq, task_id, actor, generation, notes, phase, detail, recorded_at) "
                 "VALUES (?,?,?,?,?,?,?,?)", (event.seq, p["task_id"], p["actor"], p["generation"],
                                              p["notes"] or f"attested {record['kind']} {record['digest'][:12]}",
                                              p["phase"], p["detail"], event.ts))
    conn.execute("INSERT INTO attestations (digest, task_id, claim_id, generation, kind, trust_mode, issuer_id, "
                 "changed_paths, recorded_seq) VALUES (?,?,?,?,?,?,?,?,?)",
                 (record["digest"], p["task_id"], p["claim_id"], p["generation"], record["kind"],
                  trust_level(record["trust_mode"]), record["issuer_id"], changed_paths_json(record), event.seq))


@applies("progress.noted")
def _apply_progress(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO progress (seq, task_id, actor, generation, notes, phase, detail, recorded_at) "
                 "VALUES (?,?,?,?,?,?,?,?)", (event.seq, p["task_id"], p["actor"], p["generation"], p["notes"],
                                              p["phase"], p["detail"], event.ts))


def submit_evidence(tx: Transaction, evidence: EvidenceSubmission, fence: Fence) -> dict[str, Any]:
    """Record evidence from the claim holder.

    Completion evidence (``completion``, ``promotion_quality``) hands the work to review: the claim
    ends and the task waits in ``needs_review``. Any other category (``diagnostic``, ``blocked``,
    ``advisory``) is a record only: the holder keeps the claim and the task keeps its status, so the
    work can go on (or be marked blocked with ``anvil task-status``) and end in completion evidence.

    Command-proof artifacts are verified as one batch before the single evidence event: one bad
    artifact refuses the submission. Each proven command joins ``commands_run``.

    Raises:
        UsageError: no command and no proof, an unknown category, or an invalid artifact.
        Refused: no live claim held by ``actor`` (see :func:`anvil.engine.work.claims.held_claim`), or
            an artifact refused by :func:`anvil.engine.proof.records.verify_proofs`.
    """
    from anvil.engine.work.continuation import normal_command

    if evidence.category not in EVIDENCE_CATEGORIES:
        raise UsageError("category must be one of " + ", ".join(EVIDENCE_CATEGORIES), code="invalid_category")
    commit, tree = _commit_of(evidence)
    # The task and its live claim in one round trip where reads cost one each.
    tx.store.read_ahead([task_rows.task_read(evidence.task_id), active_claim_read(evidence.task_id)])
    task = task_rows.get_task(tx.conn, evidence.task_id)
    live = held_claim_of(tx.conn, task, evidence.actor, fence)
    task_id = live["task_id"]
    completes = evidence.category in COMPLETING_CATEGORIES
    proofs: list[dict[str, Any]] = []
    if evidence.proofs:
        from anvil.engine.proof.records import verify_proofs

        proofs = verify_proofs(tx.conn, live, evidence.proofs)
    git = live.get("git")
    enforcing = (project_row(tx.store)["config"].get("evidence_gate") or "enforcing") == "enforcing"
    if git is not None and completes and enforcing:
        _check_committed(task_id, git, commit)
    from anvil.engine.proof.contract import contract_commands, prd_contract

    contract = contract_commands(task, prd_contract(tx.conn, task)[0])
    proven = {normal_command(r["body"]["command"]) for r in proofs if r["body"]["exit_code"] == 0}
    unproven = [c for c in contract if normal_command(c) not in proven]
    commands = [c for c in evidence.commands_run if c.strip()]
    listed = {normal_command(c) for c in commands}
    for record in proofs:
        if normal_command(record["body"]["command"]) not in listed:
            commands.append(record["body"]["command"])
            listed.add(normal_command(record["body"]["command"]))
    if not commands:
        raise UsageError("evidence needs at least one command that was run (--command) or a proof (--proof)",
                         code="no_commands")
    if completes and enforcing:
        _check_proven(task, live, contract, unproven)
    evidence_id = f"EV{tx.next_seq():08X}"  # unique: the sequence number of its event
    tx.append("evidence.submitted", {
        "evidence_id": evidence_id, "task_id": task_id, "claim_id": live["id"], "generation": live["generation"],
        "actor": evidence.actor, "category": evidence.category, "commands_run": commands,
        "files_changed": task_rows.normalise_files(evidence.files_changed), "output_excerpt": evidence.output_excerpt,
        "pr_url": evidence.pr_url, "commit_sha": commit, "tree_sha": tree, "branch": git["branch"] if git else None,
        "command_proofs": proofs, "ends_claim": completes})
    from anvil.engine.proof.records import proof_receipt

    status = "needs_review" if completes else task["status"]
    return {"evidence_id": evidence_id, "task_id": task_id, "task_status": status, "claim_ended": completes,
            "claim_id": live["id"], "generation": live["generation"], "commands_run": commands,
            "claim_bound_command_proofs": [proof_receipt(r) for r in proofs], "hook_command_proofs": [],
            "missing_claim_bound_proofs": unproven,
            "missing_legacy_evidence": [c for c in contract if normal_command(c) not in listed],
            "commit_sha": commit}


def _commit_of(evidence: EvidenceSubmission) -> tuple[str | None, str | None]:
    """The submission's commit and tree, checked to be object ids.

    Raises:
        UsageError: ``invalid_commit``.
    """
    from anvil.engine.git.commits import check_object_id

    commit = check_object_id(evidence.commit_sha, "--commit")
    tree = check_object_id(evidence.tree_sha, "--tree")
    if tree is not None and commit is None:
        raise UsageError("a tree (--tree) is the tree of a commit: pass the commit too (--commit)",
                         code="invalid_commit", details={"field": "tree_sha"})
    return commit, tree


def _check_proven(task: dict[str, Any], claim: dict[str, Any], contract: list[str], unproven: list[str]) -> None:
    """Under the enforcing evidence gate, completion evidence carries a passing proof of every command
    of the task's evidence contract (approval would refuse it otherwise, after the claim had ended).

    Raises:
        Refused: ``submission_unproven``, naming the commands that prove the rest for this claim
            (``details["next_commands"]``: argv lists; the CLI adds the route it was called on).
    """
    from anvil.engine.prd.commands import command_problem
    from anvil.engine.work.continuation import continuation, normal_command

    # A command no proof can run is left to the lead (approval names it); demanding it here would
    # leave the agent nothing to do.
    missing = [c for c in unproven if command_problem(c) is None]
    if not missing:
        return
    steps = continuation(task, claim, contract)
    wanted = {normal_command(c) for c in missing}
    prove = [step["argv"] for step in steps["prove"] if normal_command(step["command"]) in wanted]
    submit = list(steps["submit"])
    shown = ", ".join(f"`{c[:200]}`" for c in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5
                                                             else "")
    import shlex

    run = "; ".join(shlex.join(argv) for argv in [*prove, submit])
    raise Refused(f"task {task['id']}'s completion evidence lacks a passing proof of {shown}: under the enforcing "
                  f"evidence gate the submission is refused (nothing was written; the claim stays live). Prove each "
                  f"command, then submit the proofs: {run}", code="submission_unproven",
                  details={"missing": missing[:50], "next_commands": [*prove, submit],
                           **({"cd": steps["cd"]} if steps.get("cd") else {})})


def _check_committed(task_id: str, git: dict[str, Any], commit: str | None) -> None:
    """Under the enforcing evidence gate, completion evidence of a git-bound claim names a commit of
    work done under the claim.

    Raises:
        Refused: ``commit_required`` (no commit named), ``no_work_committed`` (the claim-start commit).
    """
    branch = str(git["branch"])[:120]
    if commit is None:
        raise Refused(f"task {task_id}'s claim works on branch {branch}: its completion evidence names the commit "
                      "the work is on, which the review decides on and a verifier re-proves. Submit with the anvil "
                      "CLI from the claim's tree (it reads the branch head), or pass commit_sha and tree_sha "
                      "(`git rev-parse HEAD HEAD^{tree}`)", code="commit_required", details={"field": "commit_sha"})
    if commit == git["claim_start_sha"]:
        raise Refused(f"the head of {branch} is still the commit the claim started from ({commit[:12]}): no work "
                      "was committed under this claim. Commit the work on the claim branch, then submit (work an "
                      "earlier claim of yours left in that commit already: say so with `git commit --allow-empty -m "
                      "'resume'`)", code="no_work_committed")


@applies("evidence.submitted")
def _apply_evidence(conn: Connection, event: Event) -> None:
    p = event.payload
    actor_key = name_key(p["actor"])
    conn.execute("INSERT INTO evidence (id, task_id, claim_id, actor, category, commands_run, files_changed, "
                 "output_excerpt, pr_url, commit_sha, submitted_at, seq, actor_key, tree_sha, branch) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (p["evidence_id"], p["task_id"], p["claim_id"], p["actor"], p["category"],
                  json.dumps(p["commands_run"]), json.dumps(p["files_changed"]), p["output_excerpt"], p["pr_url"],
                  p["commit_sha"], event.ts, event.seq, actor_key, p.get("tree_sha"), p.get("branch")))
    proofs = p.get("command_proofs") or []
    if proofs:
        from anvil.engine.proof.artifacts import PROOF, trust_level
        from anvil.engine.proof.records import recheck

        recheck(conn, PROOF, proofs)
        conn.executemany("INSERT INTO command_proofs (digest, evidence_id, task_id, claim_id, generation, command, "
                         "exit_code, trust_mode, issuer_id, output_sha256, seq, proved_by, proved_by_key) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         [(r["digest"], p["evidence_id"], p["task_id"], p["claim_id"], p["generation"],
                           r["body"]["command"], r["body"]["exit_code"], trust_level(r["trust_mode"]), r["issuer_id"],
                           r["body"]["output_sha256"], event.seq, p["actor"], actor_key) for r in proofs])
    if not p.get("ends_claim", True):  # a record only (events written before the field ended every claim)
        return
    conn.execute("UPDATE claims SET status = 'completed', ended_at = ?, end_reason = ? WHERE id = ?",
                 (event.ts, event.type, p["claim_id"]))
    conn.execute("DELETE FROM claim_files WHERE claim_id = ?", (p["claim_id"],))
    task_rows.set_status(conn, p["task_id"], "needs_review", event.seq)


HISTORY_LIMIT = 5


def history(conn: Connection, task_id: str, limit: int = HISTORY_LIMIT) -> dict[str, Any]:
    """The task's recent record, newest first: evidence, review decisions, progress notes and landings
    (a landing's commits; a bounce's reason with its conflicting paths and the tasks that touched them,
    or the failing command and its excerpt).

    Reviewers read the evidence they decide on; the next agent on a rejected task reads why. Each
    evidence entry lists its proofs with their trust level and who proved them; the latest one also
    carries ``trust``: what its proofs amount to against the task's contract (``level`` verified,
    client_reported or unproven; the trust approval requires; the commands verified, only reported
    and refuted by a verifier). A review names the commit it decided on.
    """
    from anvil.engine.project import DEFAULT_CONFIG
    from anvil.engine.proof.contract import evaluate, proofs_of, required_trust

    evidence = [
        {"id": r[0], "actor": r[1], "category": r[2], "commands_run": json.loads(r[3]),
         "files_changed": json.loads(r[4]), "output_excerpt": r[5], "pr_url": r[6], "commit_sha": r[7],
         "submitted_at": r[8], "tree_sha": r[9], "branch": r[10], "trust": None,
         "proofs": [{k: p[k] for k in ("command", "exit_code", "trust_mode", "proved_by", "issuer_id", "commit_sha")}
                    for p in proofs_of(conn, r[0])]}
        for r in conn.execute("SELECT id, actor, category, commands_run, files_changed, output_excerpt, pr_url, "
                              "commit_sha, submitted_at, tree_sha, branch FROM evidence WHERE task_id = ? ORDER BY seq "
                              "DESC LIMIT ?", (task_id, limit))]
    if evidence:
        row = conn.execute("SELECT config FROM project").fetchone()
        config = {**DEFAULT_CONFIG, **(json.loads(row[0]) if row else {})}
        enforcing = (config.get("evidence_gate") or "enforcing") == "enforcing"
        contract = evaluate(conn, task_rows.get_task(conn, task_id), evidence[0]["id"],
                            required_trust=required_trust(config, enforcing))
        evidence[0]["trust"] = {key: contract[key] for key in (
            "trust_level", "required_trust", "contract_commands", "verified_commands", "client_reported_commands",
            "failed_verifications", "gaps")}
    reviews = [
        {"reviewer": r[0], "decision": r[1], "reason": r[2], "reason_code": r[3], "evidence_id": r[4],
         "reviewed_at": r[5], "reviewer_role": r[6], "reviewer_authenticated": bool(r[7]), "commit_sha": r[8]}
        for r in conn.execute("SELECT reviewer, decision, reason, reason_code, evidence_id, reviewed_at, "
                              "reviewer_role, reviewer_authenticated, commit_sha FROM reviews WHERE task_id = ? ORDER "
                              "BY seq DESC LIMIT ?", (task_id, limit))]
    progress = [
        {"actor": r[0], "notes": r[1], "phase": r[2], "detail": r[3], "generation": r[4], "recorded_at": r[5]}
        for r in conn.execute("SELECT actor, notes, phase, detail, generation, recorded_at FROM progress "
                              "WHERE task_id = ? ORDER BY seq DESC LIMIT ?", (task_id, limit))]
    landings = [
        {"outcome": r[0], "landed_commit": r[1], "approved_commit": r[2], "reason": r[3], "lander": r[4],
         "recorded_at": r[5], **(json.loads(r[6]) if r[6] and r[0] == "bounced" else {})}
        for r in conn.execute("SELECT outcome, landed_commit, approved_commit, reason, lander, recorded_at, detail "
                              "FROM landings WHERE task_id = ? AND outcome != 'started' ORDER BY seq DESC LIMIT ?",
                              (task_id, limit))]
    return {"evidence": evidence, "reviews": reviews, "progress": progress, "landings": landings}
