"""The bundle's bounded review gate: independent reviewers, one verdict each per round, rework and
re-review rounds, replanning, finalization (members accepted), and delivery (checkpoint, reconcile)."""

from __future__ import annotations

import json

import pytest

from anvil.ops.scenarios import prove_and_submit
from tests.ops.support import assert_replays, event_types, op, refused, scenario, status, store_of, submit

MEMBERS = ["T001", "T002", "T003"]


def verdict(env: dict[str, str], actor: str, angle: str, decision: str = "approve", round_: int = 1) -> dict:
    return op(env, "record_bundle_review", bundle_id="B1", actor=actor, review_round=round_, angle=angle,
              decision=decision)


def rebuild_and_complete(env: dict[str, str]) -> None:
    """Claim, do, prove and submit every member again, then complete the bundle."""
    for task_id in MEMBERS:
        op(env, "claim_task", task_id=task_id, actor="agent-1")
        prove_and_submit(env, env["ANVIL_ROOT"], task_id=task_id, actor="agent-1", files_changed=[])
    op(env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done", complete=True)


# -- independence ------------------------------------------------------------------------------


@pytest.mark.parametrize("reviewer", ["agent-1", "AGENT-1", "ａｇｅｎｔ-1"])
def test_the_coordinator_cannot_review_its_bundle_however_its_name_is_spelled(anvil_env, reviewer) -> None:
    scenario(anvil_env, "bundle_in_review")
    error = refused(anvil_env, "record_bundle_review", bundle_id="B1", actor=reviewer, review_round=1,
                    angle="correctness", decision="approve")
    assert error.code == "bundle_reviewer_not_independent"


def test_a_worker_who_submitted_member_evidence_cannot_review(anvil_env) -> None:
    scenario(anvil_env, "bundle_claimed")
    for task_id, actor in (("T001", "worker-5"), ("T002", "agent-1"), ("T003", "agent-1")):
        op(anvil_env, "claim_task", task_id=task_id, actor=actor)
        submit(anvil_env, task_id, actor)
    op(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done", complete=True)
    assert refused(anvil_env, "record_bundle_review", bundle_id="B1", actor="Worker-5", review_round=1,
                   angle="tests", decision="approve").code == "bundle_reviewer_not_independent"


def test_one_reviewer_records_one_verdict_per_round(anvil_env) -> None:
    scenario(anvil_env, "bundle_in_review")
    verdict(anvil_env, "reviewer-1", "correctness")
    error = refused(anvil_env, "record_bundle_review", bundle_id="B1", actor="REVIEWER-1", review_round=1,
                    angle="integration", decision="approve")
    assert error.code == "bundle_duplicate_reviewer"


def test_a_round_takes_at_most_max_reviews_verdicts(anvil_env) -> None:
    scenario(anvil_env, "bundle_built")
    op(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done", complete=True)
    for reviewer in ("reviewer-1", "reviewer-2", "reviewer-3"):
        verdict(anvil_env, reviewer, "correctness")
    assert refused(anvil_env, "record_bundle_review", bundle_id="B1", actor="reviewer-4", review_round=1,
                   angle="integration", decision="approve").code == "bundle_review_limit"


def test_verdicts_wait_for_the_coordinator_to_complete_the_bundle(anvil_env) -> None:
    scenario(anvil_env, "bundle_built")
    assert refused(anvil_env, "record_bundle_review", bundle_id="B1", actor="reviewer-1", review_round=1,
                   angle="correctness", decision="approve").code == "bundle_wrong_status"


# -- the gate and finalization -----------------------------------------------------------------


def test_finalizing_needs_every_required_angle_and_two_independent_approvals(anvil_env) -> None:
    scenario(anvil_env, "bundle_in_review")
    verdict(anvil_env, "reviewer-1", "correctness")
    error = refused(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert error.code == "bundle_gate_not_passed" and error.details["gate"]["missing_angles"] == ["integration"]
    verdict(anvil_env, "reviewer-2", "correctness")
    gate = refused(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead").details["gate"]
    assert gate["missing_angles"] == ["integration"] and len(gate["independent_approvers"]) == 2
    result = verdict(anvil_env, "reviewer-3", "Integration")
    assert result["gate"]["passed"] and result["gate"]["covered_angles"] == ["correctness", "integration"]


def test_finalizing_accepts_every_member_and_ends_the_coordinator_claim(anvil_env) -> None:
    scenario(anvil_env, "bundle_reviewed")
    assert refused(anvil_env, "finalize_bundle_review", bundle_id="B1",
                   actor="agent-1").code == "bundle_reviewer_not_independent"
    result = op(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert result["accepted"] == MEMBERS and result["bundle"]["status"] == "approved"
    assert result["bundle"]["claim"] is None and result["gate"]["passed"]
    assert [status(anvil_env, t) for t in MEMBERS] == ["done"] * 3
    reviews = op(anvil_env, "get_task", task_id="T003")["history"]["reviews"]
    assert reviews[0]["decision"] == "accepted" and reviews[0]["reviewer"] == "lead"
    assert op(anvil_env, "get_next_task", actor="agent-9")["task"]["id"] not in MEMBERS  # dependents unblocked
    assert_replays(anvil_env)


def test_finalizing_refuses_members_whose_commands_have_no_passing_proof_and_changes_nothing(anvil_env) -> None:
    scenario(anvil_env, "bundle_unproven")  # members submitted with `pytest -q` and no proofs; gate passed
    before = len(event_types(anvil_env))
    error = refused(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert error.code == "claim_unproven" and "T001" in error.message and "anvil proof run" in error.message
    assert [m["task_id"] for m in error.details["members"]] == MEMBERS
    assert error.details["members"][1]["missing"] == [
        "no passing proof of `python -m unittest -q tests/test_validate.py`"]
    assert len(event_types(anvil_env)) == before
    assert op(anvil_env, "get_bundle", bundle_id="B1")["bundle"]["status"] == "in_review"
    assert [status(anvil_env, t) for t in MEMBERS] == ["needs_review"] * 3
    # the way out: changes asked, the members proven and resubmitted, a new round
    verdict(anvil_env, "reviewer-3", "tests", "needs_changes")
    rebuild_and_complete(anvil_env)
    verdict(anvil_env, "reviewer-1", "correctness", round_=2)
    verdict(anvil_env, "reviewer-2", "integration", round_=2)
    result = op(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert result["accepted"] == MEMBERS and result["evidence_gaps"] == {}


def test_an_advisory_gate_accepts_unproven_members_and_records_their_gaps(anvil_env) -> None:
    scenario(anvil_env, "bundle_unproven")
    op(anvil_env, "configure_project", evidence_gate="advisory", actor="lead")
    result = op(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert result["accepted"] == MEMBERS and sorted(result["evidence_gaps"]) == MEMBERS
    assert result["evidence_gaps"]["T001"] == ["no passing proof of `python -m unittest -q tests/test_store.py`"]
    with store_of(anvil_env) as store:
        recorded = dict(store.conn.execute("SELECT task_id, evidence_gaps FROM reviews").fetchall())
    assert {task: json.loads(gaps) for task, gaps in recorded.items()} == result["evidence_gaps"]
    assert_replays(anvil_env)


def test_proven_members_are_accepted_with_no_gaps(anvil_env) -> None:
    scenario(anvil_env, "bundle_reviewed")  # every member proved its verification commands
    result = op(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")
    assert result["accepted"] == MEMBERS and result["evidence_gaps"] == {}
    with store_of(anvil_env) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM command_proofs WHERE exit_code = 0").fetchone()[0] == 3


def test_needs_changes_reopens_the_members_for_a_re_review_round(anvil_env) -> None:
    scenario(anvil_env, "bundle_in_review")
    verdict(anvil_env, "reviewer-1", "correctness")
    result = verdict(anvil_env, "reviewer-2", "integration", "needs_changes")
    assert result["bundle"]["status"] == "changes_requested" and result["reopened"] == MEMBERS
    assert [status(anvil_env, t) for t in MEMBERS] == ["ready"] * 3
    assert refused(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done",
                   complete=True).code == "bundle_not_ready"
    rebuild_and_complete(anvil_env)
    bundle = op(anvil_env, "get_bundle", bundle_id="B1")["bundle"]
    assert bundle["status"] == "in_review" and bundle["review_round"] == 2
    assert refused(anvil_env, "record_bundle_review", bundle_id="B1", actor="reviewer-1", review_round=1,
                   angle="correctness", decision="approve").code == "bundle_review_round_invalid"
    verdict(anvil_env, "reviewer-1", "correctness", round_=2)  # a new round: the same reviewer may speak again
    verdict(anvil_env, "reviewer-2", "integration", round_=2)
    assert op(anvil_env, "finalize_bundle_review", bundle_id="B1", actor="lead")["bundle"]["status"] == "approved"


def test_the_last_round_asking_for_changes_leaves_the_bundle_to_be_replanned(anvil_env) -> None:
    scenario(anvil_env, "bundle_in_review")
    verdict(anvil_env, "reviewer-1", "correctness", "needs_changes")
    rebuild_and_complete(anvil_env)
    result = verdict(anvil_env, "reviewer-1", "correctness", "needs_changes", round_=2)
    assert result["bundle"]["status"] == "replan_required" and result["reopened"] == []
    assert result["gate"]["rounds_left"] == 0
    assert [status(anvil_env, t) for t in MEMBERS] == ["needs_review"] * 3
    assert refused(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1").code == "bundle_wrong_status"


def test_a_rejection_leaves_the_bundle_to_be_replanned(anvil_env) -> None:
    scenario(anvil_env, "bundle_in_review")
    assert verdict(anvil_env, "reviewer-1", "correctness", "reject")["bundle"]["status"] == "replan_required"


# -- delivery ----------------------------------------------------------------------------------


def test_a_checkpoint_records_the_delivery_reference(anvil_env) -> None:
    scenario(anvil_env, "bundle_approved")
    first = op(anvil_env, "checkpoint_bundle", bundle_id="B1", actor="agent-1", commit_sha="ABCDEF1")
    assert first["checkpoint"]["number"] == 1 and first["checkpoint"]["commit_sha"] == "abcdef1"
    second = op(anvil_env, "checkpoint_bundle", bundle_id="B1", actor="agent-1", pr_url="https://example.com/pr/7")
    assert second["checkpoint"]["number"] == 2 and second["status"] == "approved"
    delivery = op(anvil_env, "get_bundle", bundle_id="B1")["bundle"]["delivery"]
    assert (delivery["commit_sha"], delivery["pr_url"], delivery["merged"]) == (
        "abcdef1", "https://example.com/pr/7", False)
    for bad in ({"commit_sha": "not-hex"}, {"pr_url": "ftp://x"}):
        assert refused(anvil_env, "checkpoint_bundle", bundle_id="B1", actor="agent-1", **bad).code == "invalid_input"


def test_reconciling_is_idempotent_and_never_duplicates_a_checkpoint(anvil_env) -> None:
    scenario(anvil_env, "bundle_approved")
    op(anvil_env, "checkpoint_bundle", bundle_id="B1", actor="agent-1", commit_sha="abcdef1")
    before = len(event_types(anvil_env))
    merged = op(anvil_env, "reconcile_bundle", bundle_id="B1", actor="agent-1", commit_sha="abcdef1", merged=True)
    assert merged["changes"] == ["merged"] and merged["bundle"]["status"] == "merged"
    assert len(event_types(anvil_env)) == before + 1
    again = op(anvil_env, "reconcile_bundle", bundle_id="B1", actor="agent-1", commit_sha="abcdef1", merged=True)
    assert again["changes"] == [] and len(event_types(anvil_env)) == before + 1
    assert len(again["bundle"]["delivery"]["checkpoints"]) == 1
    assert refused(anvil_env, "reconcile_bundle", bundle_id="B1", actor="agent-1",
                   merged=True).code == "delivery_reference_required"
    assert_replays(anvil_env)


def test_a_merged_bundle_releases_its_members_to_new_bundles(anvil_env) -> None:
    scenario(anvil_env, "bundle_approved")
    op(anvil_env, "reconcile_bundle", bundle_id="B1", actor="agent-1", pr_url="https://example.com/pr/7", merged=True)
    bundle = op(anvil_env, "create_bundle", bundle_id="B2", task_ids=["T004"], coordinator="agent-2",
                actor="lead")["bundle"]
    assert bundle["status"] == "planned"
    assert [b["id"] for b in op(anvil_env, "list_bundles", status="merged")["bundles"]] == ["B1"]
