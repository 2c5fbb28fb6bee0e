"""The bundle's bounded review gate: independent verdicts per round, then finalization.

A round opens when the coordinator completes the bundle. Each reviewer records one verdict per
round on one angle; reviewers are independent: distinct people (compared by name key), none of
them the coordinator, a past coordinator claim holder, or anyone who submitted evidence on a
member. A round takes at most ``max_reviews`` verdicts. ``needs_changes`` sends the members back
to work for a re-review round while the policy has one left; ``reject``, or ``needs_changes`` in
the last round, leaves the bundle waiting to be replanned (and superseded). Finalization needs
every required angle approved, at least :data:`~anvil.engine.work.bundles.rows.MIN_APPROVALS`
independent approvals and no blocking verdict; it accepts every member (task done) on the
finalizer's name, who must be independent too. Each member's evidence is held to its contract
as a single task's approval is (:func:`anvil.engine.proof.contract.evaluate`): named claims and
artifacts always, the verification commands while the project's evidence gate is enforcing; an
advisory gate records the gaps on each member's acceptance instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import Refused
from anvil.engine.identity import Identity, name_key
from anvil.engine.project import project_row
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Event, Transaction, applies
from anvil.engine.work.bundles import rows
from anvil.engine.work.bundles.lifecycle import normalise_angles
from anvil.engine.work.decisions import latest_evidence


@dataclass(frozen=True, slots=True)
class BundleVerdictRequest:
    """One reviewer's verdict on one angle of a bundle's review round."""

    bundle_id: str
    reviewer: Identity
    review_round: int
    angle: str
    decision: str
    notes: str | None = None


def _independent(conn: Connection, bundle: dict[str, Any], who: Identity, doing: str) -> None:
    if who.key in rows.implementer_keys(conn, bundle):
        raise Refused(f"{who.actor} implemented bundle {bundle['id']} (its coordinator, or the author of a member's "
                      f"evidence) and cannot {doing} it: ask an independent reviewer",
                      code="bundle_reviewer_not_independent")


def record(tx: Transaction, request: BundleVerdictRequest) -> dict[str, Any]:
    """Record one independent verdict in the bundle's open review round.

    Raises:
        NotFound: no such bundle.
        UsageError: ``bundle_policy_invalid`` for an angle that is not a label.
        Refused: ``bundle_wrong_status`` (no round open), ``bundle_review_round_invalid``,
            ``bundle_reviewer_not_independent``, ``bundle_duplicate_reviewer``, ``bundle_review_limit``.
    """
    bundle = rows.get_bundle(tx.conn, request.bundle_id)
    bundle_id, round_ = bundle["id"], bundle["review_round"]
    (angle,) = normalise_angles([request.angle])
    if bundle["status"] != "in_review":
        raise Refused(f"bundle {bundle_id} is {bundle['status']}: verdicts are recorded while a review round is "
                      "open (after its coordinator completes it)", code="bundle_wrong_status")
    if request.review_round != round_:
        raise Refused(f"review round {request.review_round} is not open on bundle {bundle_id}: the open round is "
                      f"{round_}", code="bundle_review_round_invalid")
    reviewer = request.reviewer
    _independent(tx.conn, bundle, reviewer, "review")
    current = [v for v in rows.reviews(tx.conn, bundle_id) if v["round"] == round_]
    if any(v["reviewer_key"] == reviewer.key for v in current):
        raise Refused(f"{reviewer.actor} already recorded a verdict in round {round_} of bundle {bundle_id}; each "
                      "verdict needs a different reviewer", code="bundle_duplicate_reviewer")
    if len(current) >= int(bundle["policy"]["max_reviews"]):
        raise Refused(f"round {round_} of bundle {bundle_id} has its {bundle['policy']['max_reviews']} verdicts "
                      "already", code="bundle_review_limit")
    to_status, reopened = "in_review", []
    if request.decision == "needs_changes" and round_ < rows.max_rounds(bundle["policy"]):
        to_status = "changes_requested"
        reopened = [m["task_id"] for m in rows.members(tx.conn, bundle_id) if m["status"] == "needs_review"]
    elif request.decision != "approve":
        to_status = "replan_required"
    tx.append("bundle.review_recorded", {
        "bundle_id": bundle_id, "round": round_, "reviewer": reviewer.actor, "reviewer_role": reviewer.role,
        "reviewer_authenticated": reviewer.authenticated, "angle": angle, "decision": request.decision,
        "notes": request.notes, "to_status": to_status, "reopened": reopened})
    return {"reopened": reopened}


@applies("bundle.review_recorded")
def _apply_review(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("INSERT INTO bundle_reviews (seq, bundle_id, round, reviewer, reviewer_key, angle, decision, notes, "
                 "reviewer_role, reviewer_authenticated, reviewed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                 (event.seq, p["bundle_id"], p["round"], p["reviewer"], name_key(p["reviewer"]), p["angle"],
                  p["decision"], p["notes"], p["reviewer_role"], int(bool(p["reviewer_authenticated"])), event.ts))
    conn.execute("UPDATE bundles SET status = ?, updated_seq = ? WHERE id = ?",
                 (p["to_status"], event.seq, p["bundle_id"]))
    for task_id in p["reopened"]:
        task_rows.set_status(conn, task_id, "ready", event.seq)


def finalize(tx: Transaction, bundle_id: str, caller: Identity) -> dict[str, Any]:
    """Close a passed review gate: every member is accepted (done) and the bundle is approved.

    Raises:
        NotFound: no such bundle.
        Refused: ``bundle_wrong_status``, ``bundle_gate_not_passed`` (missing angles, too few
            independent approvals, or a blocking verdict), ``bundle_reviewer_not_independent``,
            ``bundle_not_ready``, ``claim_unproven`` (a member's evidence contract is unproven; the
            details list each such member and what it lacks).
    """
    bundle = rows.get_bundle(tx.conn, bundle_id)
    bundle_id = bundle["id"]
    if bundle["status"] != "in_review":
        raise Refused(f"bundle {bundle_id} is {bundle['status']}: only a bundle in review can be finalized",
                      code="bundle_wrong_status")
    implementers = rows.implementer_keys(tx.conn, bundle)
    gate = rows.gate(bundle, rows.reviews(tx.conn, bundle_id), implementers)
    if not gate["passed"]:
        problems = ([f"missing approved angles: {', '.join(gate['missing_angles'])}"] if gate["missing_angles"]
                    else []) + ([f"{len(gate['blocking'])} blocking verdict(s)"] if gate["blocking"] else [])
        if len(gate["independent_approvers"]) < gate["required_approvals"]:
            problems.append(f"{len(gate['independent_approvers'])} of {gate['required_approvals']} independent "
                            "approvals")
        raise Refused(f"the review gate of bundle {bundle_id} has not passed: {'; '.join(problems)}",
                      code="bundle_gate_not_passed", details={"gate": gate})
    _independent(tx.conn, bundle, caller, "finalize")
    blockers = rows.readiness(tx.conn, bundle_id)
    if blockers:
        raise Refused(f"bundle {bundle_id} has members that are no longer complete (first: {blockers[0]['task_id']})",
                      code="bundle_not_ready", details={"members": blockers[:12]})
    gaps, unproven, trust = _contracts(tx, bundle_id)
    if unproven:
        first = unproven[0]
        if trust == "verified":
            how = ("the gate requires verified proofs (require_verified is on): a verifier other than the implementer "
                   f"re-proves each member's submitted commit (`anvil verify-task {first['task_id']}`)")
        else:
            how = ("a needs_changes verdict reopens the members, so the coordinator proves each command (`anvil proof "
                   "run TASK -- CMD`) and submits the artifacts (`anvil submit TASK --proof FILE`)")
        raise Refused(f"bundle {bundle_id} has members whose evidence contract is unproven at the {trust} level "
                      f"(first: {first['task_id']}: {first['missing'][0]}): {how}", code="claim_unproven",
                      details={"members": unproven[:12], "required_trust": trust})
    accepted = []
    for member in rows.members(tx.conn, bundle_id):
        if member["status"] != "needs_review":
            continue
        evidence = latest_evidence(tx.conn, member["task_id"]) or {}
        tx.append("review.decided", {"task_id": member["task_id"], "reviewer": caller.actor, "decision": "accepted",
                                     "reviewer_role": caller.role, "reviewer_authenticated": caller.authenticated,
                                     "reason": f"accepted with bundle {bundle_id} (review round {gate['round']})",
                                     "reason_code": None, "evidence_id": evidence.get("id"), "to_status": "done",
                                     "evidence_gaps": gaps.get(member["task_id"], []),
                                     "commit_sha": evidence.get("commit_sha"), "tree_sha": evidence.get("tree_sha")})
        accepted.append(member["task_id"])
    live = rows.coordinator_claim(tx.conn, bundle_id)
    tx.append("bundle.finalized", {"bundle_id": bundle_id, "round": gate["round"], "finalized_by": caller.actor,
                                   "approvers": gate["independent_approvers"], "accepted": accepted,
                                   "claim_id": live["id"] if live else None})
    return {"accepted": accepted, "evidence_gaps": gaps}


def _contracts(tx: Transaction, bundle_id: str) -> tuple[dict[str, list[str]], list[dict[str, Any]], str]:
    """Each member's evidence against its contract: the gaps of each member that has any, the
    members whose gaps refuse approval (``{task_id, missing}``) under the project's evidence gate,
    and the trust level the gate requires."""
    from anvil.engine.proof.contract import evaluate, required_trust

    config = project_row(tx.store)["config"]
    enforcing = (config.get("evidence_gate") or "enforcing") == "enforcing"
    trust = required_trust(config, enforcing)
    gaps: dict[str, list[str]] = {}
    unproven: list[dict[str, Any]] = []
    for member in rows.members(tx.conn, bundle_id):
        if member["status"] != "needs_review":
            continue
        task = task_rows.get_task(tx.conn, member["task_id"])
        evidence = tx.conn.execute("SELECT id FROM evidence WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
                                   (task["id"],)).fetchone()
        contract = evaluate(tx.conn, task, evidence[0], required_trust=trust)
        if contract["gaps"]:
            gaps[task["id"]] = contract["gaps"]
        missing = contract["enforced_gaps"] + (contract["command_gaps"] if enforcing else [])
        if missing:
            unproven.append({"task_id": task["id"], "missing": missing[:20]})
    return gaps, unproven, trust


@applies("bundle.finalized")
def _apply_finalized(conn: Connection, event: Event) -> None:
    p = event.payload
    conn.execute("UPDATE bundles SET status = 'approved', updated_seq = ? WHERE id = ?", (event.seq, p["bundle_id"]))
    if p["claim_id"]:
        conn.execute("UPDATE bundle_claims SET status = 'completed', ended_at = ?, end_reason = ? WHERE id = ?",
                     (event.ts, event.type, p["claim_id"]))
    conn.execute("UPDATE bundle_members SET authorized_generation = NULL WHERE bundle_id = ?", (p["bundle_id"],))
