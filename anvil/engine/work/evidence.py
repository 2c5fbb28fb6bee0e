"""Reporting work: progress notes, completion evidence, and the task's recent history."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import UsageError
from anvil.engine.identity import name_key
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.vocab import COMPLETING_CATEGORIES, EVIDENCE_CATEGORIES
from anvil.engine.work.claims import Fence, active_claim, held_claim


@dataclass(frozen=True, slots=True)
class ProgressNote:
    """A progress note on a task: free text, with an optional phase label and detail."""

    task_id: str
    actor: str
    notes: str
    phase: str | None = None
    detail: str | None = None


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


def submit_progress(tx: Transaction, note: ProgressNote, fence: Fence) -> dict[str, Any]:
    """Record a progress note; when the task is claimed only its holder (live generation) may write."""
    task = task_rows.get_task(tx.conn, note.task_id)
    task_id = task["id"]
    live = active_claim(tx.conn, task_id)
    if live is not None or fence.given:
        live = held_claim(tx.conn, task_id, note.actor, fence)
    event = tx.append("progress.noted", {"task_id": task_id, "actor": note.actor, "notes": note.notes,
                                         "phase": note.phase, "detail": note.detail,
                                         "generation": live["generation"] if live else None})
    return {"recorded": True, "task_id": task_id, "seq": event.seq,
            "generation": live["generation"] if live else None}


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

    Raises:
        Refused: no live claim held by ``actor`` (see :func:`anvil.engine.work.claims.held_claim`).
    """
    if not any(command.strip() for command in evidence.commands_run):
        raise UsageError("evidence needs at least one command that was run", code="no_commands")
    if evidence.category not in EVIDENCE_CATEGORIES:
        raise UsageError("category must be one of " + ", ".join(EVIDENCE_CATEGORIES), code="invalid_category")
    live = held_claim(tx.conn, evidence.task_id, evidence.actor, fence)
    task_id = live["task_id"]
    completes = evidence.category in COMPLETING_CATEGORIES
    evidence_id = f"EV{tx.next_seq():08X}"  # unique: the sequence number of its event
    tx.append("evidence.submitted", {
        "evidence_id": evidence_id, "task_id": task_id, "claim_id": live["id"], "generation": live["generation"],
        "actor": evidence.actor, "category": evidence.category, "commands_run": evidence.commands_run,
        "files_changed": task_rows.normalise_files(evidence.files_changed), "output_excerpt": evidence.output_excerpt,
        "pr_url": evidence.pr_url, "commit_sha": evidence.commit_sha, "ends_claim": completes})
    status = "needs_review" if completes else task_rows.get_task(tx.conn, task_id)["status"]
    return {"evidence_id": evidence_id, "task_id": task_id, "task_status": status, "claim_id": live["id"],
            "generation": live["generation"], "claim_ended": completes}


@applies("evidence.submitted")
def _apply_evidence(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO evidence (id, task_id, claim_id, actor, category, commands_run, files_changed, "
                 "output_excerpt, pr_url, commit_sha, submitted_at, seq, actor_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (p["evidence_id"], p["task_id"], p["claim_id"], p["actor"], p["category"],
                  json.dumps(p["commands_run"]), json.dumps(p["files_changed"]), p["output_excerpt"], p["pr_url"],
                  p["commit_sha"], event.ts, event.seq, name_key(p["actor"])))
    if not p.get("ends_claim", True):  # a record only (events written before the field ended every claim)
        return
    conn.execute("UPDATE claims SET status = 'completed', ended_at = ?, end_reason = ? WHERE id = ?",
                 (event.ts, event.type, p["claim_id"]))
    conn.execute("DELETE FROM claim_files WHERE claim_id = ?", (p["claim_id"],))
    task_rows.set_status(conn, p["task_id"], "needs_review", event.seq)


HISTORY_LIMIT = 5


def history(conn: Connection, task_id: str, limit: int = HISTORY_LIMIT) -> dict[str, Any]:
    """The task's recent record, newest first: evidence, review decisions and progress notes.

    Reviewers read the evidence they decide on; the next agent on a rejected task reads why.
    """
    evidence = [
        {"id": r[0], "actor": r[1], "category": r[2], "commands_run": json.loads(r[3]),
         "files_changed": json.loads(r[4]), "output_excerpt": r[5], "pr_url": r[6], "commit_sha": r[7],
         "submitted_at": r[8]}
        for r in conn.execute("SELECT id, actor, category, commands_run, files_changed, output_excerpt, pr_url, "
                              "commit_sha, submitted_at FROM evidence WHERE task_id = ? ORDER BY seq DESC LIMIT ?",
                              (task_id, limit))]
    reviews = [
        {"reviewer": r[0], "decision": r[1], "reason": r[2], "reason_code": r[3], "evidence_id": r[4],
         "reviewed_at": r[5], "reviewer_role": r[6], "reviewer_authenticated": bool(r[7])}
        for r in conn.execute("SELECT reviewer, decision, reason, reason_code, evidence_id, reviewed_at, "
                              "reviewer_role, reviewer_authenticated FROM reviews WHERE task_id = ? ORDER BY seq DESC "
                              "LIMIT ?", (task_id, limit))]
    progress = [
        {"actor": r[0], "notes": r[1], "phase": r[2], "detail": r[3], "generation": r[4], "recorded_at": r[5]}
        for r in conn.execute("SELECT actor, notes, phase, detail, generation, recorded_at FROM progress "
                              "WHERE task_id = ? ORDER BY seq DESC LIMIT ?", (task_id, limit))]
    return {"evidence": evidence, "reviews": reviews, "progress": progress}
