"""Deciding on work: the few manual status changes, and review decisions on submitted evidence."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import AuthFailed, Refused, UsageError
from anvil.engine.identity import Identity
from anvil.engine.planning.readiness import readiness_problems
from anvil.engine.project import project_row
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.vocab import COMPLETING_CATEGORIES, QUALITY_FINDINGS
from anvil.engine.work.bundles.rows import live_bundle_of, live_bundle_read
from anvil.engine.work.claims import NO_FENCE, Fence, active_claim, held_claim

ALLOWED_TRANSITIONS: dict[str, tuple[str, ...]] = {
    "drafted": ("ready",), "ready": ("drafted",), "in_progress": ("blocked",), "claimed": ("blocked",),
    "blocked": ("in_progress",),
}


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """A reviewer's decision on a task's latest evidence; the reviewer is whoever makes the call."""

    task_id: str
    approve: bool
    reviewer: Identity
    reason: str | None = None
    reason_code: str | None = None
    quality_findings: tuple[str, ...] = ()  # a rejection's typed findings: they make it count as quality
    strict: bool | None = None  # True: the verification commands enforce whatever the project's gate


def update_status(tx: Transaction, task_id: str, to_status: str, caller: Identity,
                  reason: str | None, fence: Fence = NO_FENCE) -> dict[str, Any]:
    """Apply one of the few manual transitions (drafted<->ready, block and unblock).

    Blocking and unblocking a claimed task is its holder's, fenced like renew, progress, submit and
    release: a generation or claim id that is not the live claim is refused, and so is a change
    without one when the project requires fencing. Moving a task between drafted and ready is
    planning, which an authenticated caller needs the lead role for.

    Raises:
        Refused: the transition is not allowed, the readiness gate fails, the task is held by
            another actor, or the fencing token is stale (``stale_generation``).
        UsageError: the project requires fencing and none was given (``fencing_required``).
        AuthFailed: ``forbidden_by_role`` for a planning transition by an authenticated non-lead.
    """
    task = task_rows.get_task(tx.conn, task_id)
    task_id, current = task["id"], task["status"]
    allowed = ALLOWED_TRANSITIONS.get(current, ())
    if to_status not in allowed:
        targets = ", ".join(allowed) or "none"
        raise Refused(f"cannot move task {task_id} from {current} to {to_status}; allowed from {current}: "
                      f"{targets}", code="transition_not_allowed")
    if current in ("drafted", "ready") and not caller.may("lead"):
        raise AuthFailed(f"moving a task between drafted and ready is planning: it needs the lead role (your "
                         f"token's role is {caller.role})", code="forbidden_by_role")
    if to_status == "ready":
        problems = readiness_problems(task)
        if problems:
            raise Refused(f"task {task_id} is not ready: {'; '.join(problems)}", code="readiness_gate")
    if fence.given or active_claim(tx.conn, task_id) is not None:
        held_claim(tx.conn, task_id, caller.actor, fence)
    tx.append("task.status_changed", {"task_id": task_id, "from": current, "to": to_status, "reason": reason})
    return {"task_id": task_id, "from_status": current, "to_status": to_status}


@applies("task.status_changed")
def _apply_status(conn: Connection, event: Event) -> None:
    task_rows.set_status(conn, event.payload["task_id"], event.payload["to"], event.seq)


EVIDENCE_COLUMNS = ("id", "actor", "category", "actor_key", "commit_sha", "tree_sha", "branch", "claim_id")


def latest_evidence(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """The task's newest evidence: id, author, category, the commit, tree and branch it names, its claim."""
    row = conn.execute(*_latest_evidence_read(task_id)).fetchone()
    return None if row is None else dict(zip(EVIDENCE_COLUMNS, row, strict=True))


def _latest_evidence_read(task_id: str) -> tuple[str, tuple[str]]:
    return (f"SELECT {', '.join(EVIDENCE_COLUMNS)} FROM evidence WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
            (task_id,))


def decide_review(tx: Transaction, request: ReviewRequest) -> dict[str, Any]:
    """Approve (needs_review -> accepted -> done) or reject (back to drafted) submitted work: the
    rules of :func:`plan_review`, then its event.

    Raises:
        Refused: as :func:`plan_review`.
        UsageError: as :func:`plan_review`.
    """
    return record_review(tx, plan_review(tx, request, project_row(tx.store)["config"]))


@dataclass(frozen=True, slots=True)
class PlannedReview:
    """A decision :func:`plan_review` found allowed, not written yet: its event and its answer."""

    payload: dict[str, Any]
    result: dict[str, Any]


def record_review(tx: Transaction, planned: PlannedReview) -> dict[str, Any]:
    """Append the decision :func:`plan_review` planned in this transaction; returns its answer."""
    tx.append("review.decided", planned.payload)
    return planned.result


def plan_review(tx: Transaction, request: ReviewRequest, config: dict[str, Any]) -> PlannedReview:
    """Check a review decision against every rule and build its event, reading only (``config``: the
    project's). Recorded by :func:`record_review` in the same transaction, before anything else changes.

    Nobody decides on evidence they submitted (names compared by key, whatever their spelling)
    unless the project allows self-review. The decision records the reviewer's name, role and
    whether a token authenticated it.

    Raises:
        Refused: not in needs_review, self-review without the config allowing it, evidence that
            cannot complete a task, or ``claim_unproven`` (the evidence contract: named claims and
            artifacts always, the verification commands under an enforcing gate or ``strict``).
        UsageError: a rejection without a reason; unknown quality findings, or any on an approval.
    """
    unknown = [f for f in request.quality_findings if f not in QUALITY_FINDINGS]
    if unknown:
        raise UsageError(f"unknown quality finding {unknown[0][:40]!r}: use {', '.join(QUALITY_FINDINGS)}",
                         code="invalid_input", details={"field": "quality_findings"})
    # The task, its bundle and its newest evidence in one round trip where reads cost one each.
    tx.store.read_ahead([task_rows.task_read(request.task_id), live_bundle_read(request.task_id),
                         _latest_evidence_read(request.task_id)])
    task = task_rows.get_task(tx.conn, request.task_id)
    task_id, approve, reviewer, reason = task["id"], request.approve, request.reviewer.actor, request.reason
    if task["status"] != "needs_review":
        raise Refused(f"task {task_id} is {task['status']}, not waiting for review: {_not_in_review(task)}",
                      code="not_in_review")
    bundle = live_bundle_of(tx.conn, task_id)
    if bundle is not None:
        raise Refused(f"task {task_id} is a member of bundle {bundle['id']}: it is reviewed through the bundle's "
                      "review gate (`anvil bundle review`, `anvil bundle finalize`)", code="reviewed_by_bundle")
    evidence = latest_evidence(tx.conn, task_id)
    if evidence is None:
        raise Refused(f"task {task_id} has no evidence to review", code="evidence_missing")
    if evidence["actor_key"] == request.reviewer.key and not config.get("self_review", False):
        raise Refused("reviewers cannot decide on evidence they submitted (enable self_review in the project "
                      "config to allow it)", code="self_review_forbidden")
    from anvil.engine.proof.contract import evaluate, required_trust

    enforcing = (config.get("evidence_gate") or "enforcing") == "enforcing" or request.strict is True
    contract = evaluate(tx.conn, task, evidence["id"], required_trust=required_trust(config, enforcing))
    gaps: list[str] = []
    basis: list[str] = []
    reason_code = None
    asserted = request.reason_code
    if approve:
        if evidence["category"] not in COMPLETING_CATEGORIES:
            raise Refused(f"the latest evidence is {evidence['category']}, which cannot complete a task",
                          code="evidence_not_completion")
        if request.quality_findings:
            raise UsageError("quality findings describe a rejection: reject the work (approve false) with them, or "
                             "approve without them", code="invalid_input", details={"field": "quality_findings"})
        enforced = contract["enforced_gaps"] + (contract["command_gaps"] if enforcing else [])
        if enforced:
            raise unproven(task_id, evidence["id"], enforced, contract["required_trust"])
        gaps = contract["gaps"]
        to_status, decision = "done", "accepted"
    else:
        if not (reason or "").strip():
            raise UsageError("a rejection needs a reason saying what must change", code="reason_required",
                             details={"field": "reason"})
        to_status, decision = "drafted", "rejected"
        basis = rejection_basis(tx.conn, asserted, contract, evidence["id"])
        # Evidence and process rejections do not count against the implementer's accept rate, so the
        # assertion must hold on the record (see rejection_basis); typed findings are about the work
        # itself. Anything else is quality, which counts.
        reason_code = asserted if basis and not request.quality_findings else "quality"
        gaps = contract["gaps"]
    payload: dict[str, Any] = {
        "task_id": task_id, "reviewer": reviewer, "decision": decision, "reviewer_role": request.reviewer.role,
        "reviewer_authenticated": request.reviewer.authenticated, "reason": reason, "reason_code": reason_code,
        "asserted_reason_code": asserted, "evidence_gaps": gaps, "evidence_id": evidence["id"],
        "to_status": to_status, "quality_findings": list(request.quality_findings),
        "commit_sha": evidence["commit_sha"], "tree_sha": evidence["tree_sha"],
        "trust_level": contract["trust_level"], **({"basis": basis} if not approve else {})}
    return PlannedReview(payload, {
        "task_id": task_id, "decision": decision, "from_status": "needs_review", "to_status": to_status,
        "reviewer": reviewer, "evidence_id": evidence["id"], "reason_code": reason_code, "evidence_gaps": gaps,
        "quality_findings": list(request.quality_findings),
        "basis": basis if not approve and reason_code != "quality" else [], "commit_sha": evidence["commit_sha"],
        "trust_level": contract["trust_level"]})


def unproven(task_id: str, evidence_id: str, missing: list[str], trust: str) -> Refused:
    """The ``claim_unproven`` refusal of approving ``task_id``: what is missing, the trust level the
    gate requires, and the command that proves it (``anvil verify-task`` for ``verified``)."""
    shown = "; ".join(missing[:5]) + (f"; and {len(missing) - 5} more" if len(missing) > 5 else "")
    if trust == "verified":
        fix = ["anvil", "verify-task", task_id]
        how = (f"The gate requires verified proofs (require_verified is on): a verifier other than the implementer "
               f"(a reviewer, the lead or a runner) re-proves the submitted commit with `anvil verify-task {task_id}`")
    else:
        fix = ["anvil", "proof", "run", task_id, "--", "CMD"]
        how = (f"The gate accepts client_reported proofs (require_verified is off): the implementer proves each "
               f"command (`anvil proof run {task_id} -- CMD`) and submits the artifacts (`anvil submit {task_id} "
               "--proof FILE`)")
    return Refused(f"task {task_id}'s evidence contract is unproven at the {trust} level: {shown}. {how}",
                   code="claim_unproven", details={"missing": missing[:50], "evidence_id": evidence_id,
                                                   "required_trust": trust, "next_command": fix})


def rejection_basis(conn: Connection, asserted: str | None, contract: dict[str, Any], evidence_id: str) -> list[str]:
    """The recorded facts that make an asserted ``evidence`` or ``process`` rejection true; empty when
    none holds (the rejection is then ``quality``, which counts against the accept rate).

    - ``evidence``: the evidence contract has a gap (a verification command without a passing
      claim-bound proof, an unproven named claim or a missing artifact).
    - ``process``: the submission changed a file outside the files its claim declared (when it
      declared any), or recorded no changed file at all.
    """
    if asserted == "evidence":
        return list(contract["gaps"][:20])
    if asserted != "process":
        return []
    changed = contract["changed_files"]
    if not changed:
        return ["the submission records no changed file"]
    row = conn.execute("SELECT c.expected_files FROM evidence e JOIN claims c ON c.id = e.claim_id WHERE e.id = ?",
                       (evidence_id,)).fetchone()
    declared = set(task_rows.normalise_files(json.loads(row[0]))) if row else set()
    outside = [path for path in task_rows.normalise_files(changed) if declared and path not in declared]
    return [f"changed {path} outside the claim's declared files" for path in outside[:20]]


def _not_in_review(task: dict[str, Any]) -> str:
    """What to do about a review decision on a task that is not waiting for one."""
    status = task["status"]
    if status in ("done", "accepted"):
        return "its work was already accepted; there is nothing left to decide"
    if status in ("claimed", "in_progress", "blocked"):
        return "it is still being worked on; its holder hands the work in with anvil submit"
    if status == "ready":
        return "nobody has handed in work on it yet (anvil claim, then anvil submit)"
    return "it has no submitted work (it is planned, not done); review happens after anvil submit"


@applies("review.decided")
def _apply_review(conn: Connection, event: Event) -> None:
    p = event.payload
    gaps = p.get("evidence_gaps")
    conn.execute("INSERT INTO reviews (seq, task_id, reviewer, decision, reason, reason_code, evidence_id, "
                 "reviewed_at, reviewer_role, reviewer_authenticated, evidence_gaps, asserted_reason_code, commit_sha, "
                 "tree_sha) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                 (event.seq, p["task_id"], p["reviewer"], p["decision"], p["reason"], p["reason_code"],
                  p["evidence_id"], event.ts, p.get("reviewer_role"), int(bool(p.get("reviewer_authenticated"))),
                  json.dumps(gaps) if gaps else None, p.get("asserted_reason_code"), p.get("commit_sha"),
                  p.get("tree_sha")))
    task_rows.set_status(conn, p["task_id"], p["to_status"], event.seq)


def rejection_report(tx: Transaction, task_id: str, basis: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The rejection just recorded on ``task_id`` and what it did to its author's accept rate.

    ``rejection`` says how it was classified (only ``quality`` counts against the accept rate), the
    recorded facts an ``evidence`` or ``process`` classification rests on (``basis``, see
    :func:`rejection_basis`), and what happens next (``next_step``).
    ``rejection_metrics`` is the author's accept-rate governor as of the decision (so an evidence or
    process rejection is seen not to lower the rate).
    """
    from anvil.engine.work.offers import governor

    row = tx.conn.execute("SELECT r.reason, r.reason_code, r.evidence_id, r.reviewed_at, e.actor FROM reviews r "
                          "LEFT JOIN evidence e ON e.id = r.evidence_id WHERE r.task_id = ? ORDER BY r.seq DESC "
                          "LIMIT 1", (task_id,)).fetchone()
    category = row[1] or "quality"
    rejection = {"category": category, "counting": category == "quality", "reason": row[0],
                 "evidence_id": row[2], "author": row[4], "reviewed_at": row[3], "basis": list(basis),
                 "next_step": REJECTED_NEXT_STEP.format(task_id=task_id)}
    metrics = governor(tx.store, row[4], tx.now)
    return {"rejection": rejection, "rejection_metrics": {**metrics, "counting": rejection["counting"]}}


REJECTED_NEXT_STEP = ("{task_id} is back in drafted and nobody can claim it until a lead returns it to the queue "
                      "(`anvil review tasks`, or `anvil task-status {task_id} ready`) once its plan is right; the "
                      "reason stays in its history (`anvil show {task_id}`)")
"""What happens after a rejection, told with it."""

