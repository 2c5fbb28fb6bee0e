"""Doing the work: progress notes, completion evidence, status changes and review decisions."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.claims import active_claim, held_claim
from anvil.engine.errors import Refused, UsageError
from anvil.engine.project import project_row
from anvil.engine.readiness import readiness_problems
from anvil.engine.store import Event, Store, Transaction, applies

EVIDENCE_CATEGORIES = ("completion", "diagnostic", "blocked", "advisory", "promotion_quality")
COMPLETING = frozenset({"completion", "promotion_quality"})
REASON_CODES = ("quality", "evidence", "process")
ALLOWED_TRANSITIONS: dict[str, tuple[str, ...]] = {
    "drafted": ("ready",), "ready": ("drafted",), "in_progress": ("blocked",), "claimed": ("blocked",),
    "blocked": ("in_progress",),
}


def submit_progress(tx: Transaction, task_id: str, actor: str, notes: str, phase: str | None, detail: str | None,
                    generation: int | None, claim_id: str | None) -> dict[str, Any]:
    """Record a progress note; when the task is claimed only its holder (live generation) may write."""
    task = task_rows.get_task(tx.conn, task_id)
    live = active_claim(tx.conn, task_id)
    if live is not None or generation is not None or claim_id is not None:
        live = held_claim(tx.conn, task_id, actor, generation, claim_id)
    event = tx.append("progress.noted", {"task_id": task["id"], "actor": actor, "notes": notes, "phase": phase,
                                         "detail": detail, "generation": live["generation"] if live else None})
    return {"recorded": True, "task_id": task_id, "seq": event.seq,
            "generation": live["generation"] if live else None}


@applies("progress.noted")
def _apply_progress(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO progress (seq, task_id, actor, generation, notes, phase, detail, recorded_at) "
                 "VALUES (?,?,?,?,?,?,?,?)", (event.seq, p["task_id"], p["actor"], p["generation"], p["notes"],
                                              p["phase"], p["detail"], event.ts))


def submit_evidence(tx: Transaction, task_id: str, actor: str, *, commands_run: list[str], files_changed: list[str],
                    output_excerpt: str | None, pr_url: str | None, commit_sha: str | None, category: str,
                    generation: int | None, claim_id: str | None) -> dict[str, Any]:
    """Record completion evidence from the claim holder; the claim ends and the task awaits review.

    Raises:
        Refused: no live claim held by ``actor`` (see :func:`anvil.engine.claims.held_claim`).
    """
    if not any(command.strip() for command in commands_run):
        raise UsageError("evidence needs at least one command that was run", code="no_commands")
    if category not in EVIDENCE_CATEGORIES:
        raise UsageError("category must be one of " + ", ".join(EVIDENCE_CATEGORIES), code="invalid_category")
    live = held_claim(tx.conn, task_id, actor, generation, claim_id)
    evidence_id = f"EV{tx.next_seq():08X}"  # unique: the sequence number of its event
    tx.append("evidence.submitted", {
        "evidence_id": evidence_id, "task_id": task_id, "claim_id": live["id"], "generation": live["generation"],
        "actor": actor, "category": category, "commands_run": commands_run, "files_changed": files_changed,
        "output_excerpt": output_excerpt, "pr_url": pr_url, "commit_sha": commit_sha})
    return {"evidence_id": evidence_id, "task_id": task_id, "task_status": "needs_review",
            "claim_id": live["id"], "generation": live["generation"]}


@applies("evidence.submitted")
def _apply_evidence(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO evidence (id, task_id, claim_id, actor, category, commands_run, files_changed, "
                 "output_excerpt, pr_url, commit_sha, submitted_at, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                 (p["evidence_id"], p["task_id"], p["claim_id"], p["actor"], p["category"],
                  json.dumps(p["commands_run"]), json.dumps(p["files_changed"]), p["output_excerpt"], p["pr_url"],
                  p["commit_sha"], event.ts, event.seq))
    conn.execute("UPDATE claims SET status = 'completed', ended_at = ?, end_reason = ? WHERE id = ?",
                 (event.ts, event.type, p["claim_id"]))
    conn.execute("DELETE FROM claim_files WHERE claim_id = ?", (p["claim_id"],))
    task_rows.set_status(conn, p["task_id"], "needs_review", event.seq)


def update_status(tx: Transaction, task_id: str, to_status: str, actor: str, reason: str | None) -> dict[str, Any]:
    """Apply one of the few manual transitions (drafted<->ready, block and unblock).

    Raises:
        Refused: the transition is not allowed, the readiness gate fails, or the task is held
            by another actor.
    """
    task = task_rows.get_task(tx.conn, task_id)
    current = task["status"]
    allowed = ALLOWED_TRANSITIONS.get(current, ())
    if to_status not in allowed:
        targets = ", ".join(allowed) or "none"
        raise Refused(f"cannot move task {task_id} from {current} to {to_status}; allowed from {current}: "
                      f"{targets}", code="transition_not_allowed")
    if to_status == "ready":
        problems = readiness_problems(task)
        if problems:
            raise Refused(f"task {task_id} is not ready: {'; '.join(problems)}", code="readiness_gate")
    live = active_claim(tx.conn, task_id)
    if live is not None and live["actor"] != actor:
        raise Refused(f"task {task_id} is claimed by another actor", code="not_owner")
    tx.append("task.status_changed", {"task_id": task_id, "from": current, "to": to_status, "reason": reason})
    return {"task_id": task_id, "from_status": current, "to_status": to_status}


@applies("task.status_changed")
def _apply_status(conn: sqlite3.Connection, event: Event) -> None:
    task_rows.set_status(conn, event.payload["task_id"], event.payload["to"], event.seq)


def latest_evidence(conn: sqlite3.Connection, task_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT id, actor, category FROM evidence WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
                       (task_id,)).fetchone()
    return None if row is None else {"id": row[0], "actor": row[1], "category": row[2]}


def decide_review(tx: Transaction, store: Store, task_id: str, *, approve: bool, reviewer: str, reason: str | None,
                  reason_code: str | None) -> dict[str, Any]:
    """Approve (needs_review -> accepted -> done) or reject (back to drafted) submitted work.

    Raises:
        Refused: not in needs_review, self-review without the config allowing it, or evidence that
            cannot complete a task.
        UsageError: a rejection without a reason.
    """
    task = task_rows.get_task(tx.conn, task_id)
    if task["status"] != "needs_review":
        raise Refused(f"task {task_id} is {task['status']}, not needs_review: submit evidence first",
                      code="not_in_review")
    evidence = latest_evidence(tx.conn, task_id)
    if evidence is None:
        raise Refused(f"task {task_id} has no evidence to review", code="evidence_missing")
    if evidence["actor"] == reviewer and not project_row(store)["config"].get("self_review", False):
        raise Refused("reviewers cannot decide on evidence they submitted (enable self_review in the project "
                      "config to allow it)", code="self_review_forbidden")
    if approve:
        if evidence["category"] not in COMPLETING:
            raise Refused(f"the latest evidence is {evidence['category']}, which cannot complete a task",
                          code="evidence_not_completion")
        to_status, decision = "done", "accepted"
    else:
        if not (reason or "").strip():
            raise UsageError("a rejection needs a reason", code="reason_required")
        to_status, decision = "drafted", "rejected"
    tx.append("review.decided", {"task_id": task_id, "reviewer": reviewer, "decision": decision,
                                 "reason": reason, "reason_code": (reason_code or "quality") if not approve else None,
                                 "evidence_id": evidence["id"], "to_status": to_status})
    return {"task_id": task_id, "decision": decision, "from_status": "needs_review", "to_status": to_status,
            "reviewer": reviewer, "evidence_id": evidence["id"]}


@applies("review.decided")
def _apply_review(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO reviews (seq, task_id, reviewer, decision, reason, reason_code, evidence_id, "
                 "reviewed_at) VALUES (?,?,?,?,?,?,?,?)", (event.seq, p["task_id"], p["reviewer"], p["decision"],
                                                          p["reason"], p["reason_code"], p["evidence_id"], event.ts))
    task_rows.set_status(conn, p["task_id"], p["to_status"], event.seq)


HISTORY_LIMIT = 5


def history(conn: sqlite3.Connection, task_id: str, limit: int = HISTORY_LIMIT) -> dict[str, Any]:
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
         "reviewed_at": r[5]}
        for r in conn.execute("SELECT reviewer, decision, reason, reason_code, evidence_id, reviewed_at FROM reviews "
                              "WHERE task_id = ? ORDER BY seq DESC LIMIT ?", (task_id, limit))]
    progress = [
        {"actor": r[0], "notes": r[1], "phase": r[2], "detail": r[3], "generation": r[4], "recorded_at": r[5]}
        for r in conn.execute("SELECT actor, notes, phase, detail, generation, recorded_at FROM progress "
                              "WHERE task_id = ? ORDER BY seq DESC LIMIT ?", (task_id, limit))]
    return {"evidence": evidence, "reviews": reviews, "progress": progress}
