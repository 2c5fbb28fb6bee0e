"""Reporting handlers: progress, completion evidence, review decisions and manual status changes.

Calls go through the real operation pipeline (``invoke``) or the in-process CLI.
"""

from __future__ import annotations

import pytest

from tests.ops.support import mini_prd, mini_task, op, refused, scenario, set_config, status, submit


def test_submitting_evidence_ends_the_claim_and_names_the_next_ready_task(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    result = submit(anvil_env, "T001", "agent-1", generation=1, files_changed=["shortlink/store.py"])
    assert result["task_status"] == "needs_review" and result["evidence_id"].startswith("EV")
    assert result["next_ready"]["id"] == "T002", "T004 still waits on T001"
    assert op(anvil_env, "get_task", task_id="T001")["claim"] is None
    assert op(anvil_env, "get_project_summary")["active_claim_count"] == 0


@pytest.mark.parametrize(("approve", "decision", "to_status", "next_ready"), [
    (True, "accepted", "done", "T004"),  # done unblocks T004 (critical)
    (False, "rejected", "drafted", "T002"),
], ids=["approve", "reject"])
def test_a_review_decision_marks_the_task_done_or_sends_it_back_to_drafted(anvil_env, approve, decision,
                                                                           to_status, next_ready) -> None:
    scenario(anvil_env, "submitted")
    result = op(anvil_env, "apply_review_decision", task_id="T001", approve=approve, actor="lead",
                reason=None if approve else "the schema file is missing")
    assert (result["decision"], result["to_status"], result["next_ready"]["id"]) == (decision, to_status, next_ready)
    assert status(anvil_env, "T001") == to_status


def test_rejecting_without_a_reason_is_refused_with_reason_required(anvil_env, cli) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="  ")
    result = cli("apply", "T001", "--reject", "--actor", "lead", "--json")
    assert (error.code, error.exit_code) == ("reason_required", 2)
    assert result.code == 2 and result.json()["error"]["code"] == "reason_required"
    assert status(anvil_env, "T001") == "needs_review"


def test_a_reviewer_cannot_decide_on_their_own_evidence_unless_the_config_allows_it(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="agent-1")
    assert (error.code, error.exit_code) == ("self_review_forbidden", 5)
    set_config(anvil_env, self_review=True)
    assert op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="agent-1")["to_status"] \
        == "done"


@pytest.mark.parametrize("category", ["diagnostic", "advisory", "blocked"])
def test_evidence_that_is_not_completion_is_a_note_that_keeps_the_claim_and_the_status(anvil_env, category) -> None:
    scenario(anvil_env, "claimed")
    note = submit(anvil_env, "T001", "agent-1", category=category, generation=1)
    assert (note["task_status"], note["claim_ended"], note["next_ready"]) == ("claimed", False, None)
    shown = op(anvil_env, "get_task", task_id="T001")
    assert shown["status"] == "claimed" and shown["claim"]["claimed_by"] == "agent-1"
    assert shown["history"]["evidence"][0]["category"] == category
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert error.code == "not_in_review" and "still being worked on" in error.message
    op(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1)  # the work goes on
    done = submit(anvil_env, "T001", "agent-1", generation=1)
    assert (done["task_status"], done["claim_ended"]) == ("needs_review", True)
    unproven = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert unproven.code == "claim_unproven"  # "pytest -q" as text proves nothing
    op(anvil_env, "configure_project", evidence_gate="advisory", actor="lead")
    assert op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")["to_status"] == "done"


def test_a_review_decision_on_a_task_not_in_review_says_what_to_do(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    again = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert again.code == "not_in_review" and "already accepted" in again.message
    fresh = refused(anvil_env, "apply_review_decision", task_id="T002", approve=True, actor="lead")
    assert "nobody has handed in work on it yet" in fresh.message


def test_a_rejection_without_a_reason_names_the_field_and_the_cli_names_the_flag(anvil_env, cli) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead")
    assert (error.code, error.details) == ("reason_required", {"field": "reason"})
    line = cli("apply", "T001", "--reject", "--actor", "lead").stderr
    assert line.startswith("anvil: error: a rejection needs a reason") and "(--reason) [reason_required]" in line


@pytest.mark.parametrize(("state", "task_id", "steps"), [
    ("ready", "T002", [("drafted", "lead"), ("ready", "lead")]),
    ("claimed", "T001", [("blocked", "agent-1"), ("in_progress", "agent-1"), ("blocked", "agent-1")]),
], ids=["drafted-ready", "block-unblock"])
def test_update_task_status_applies_the_allowed_transitions(anvil_env, state, task_id, steps) -> None:
    scenario(anvil_env, state)
    for to_status, actor in steps:
        before = status(anvil_env, task_id)
        result = op(anvil_env, "update_task_status", task_id=task_id, to_status=to_status, actor=actor)
        assert (result["from_status"], result["to_status"]) == (before, to_status)
        assert status(anvil_env, task_id) == to_status


@pytest.mark.parametrize(("state", "task_id", "to_status", "allowed"), [
    ("ready", "T001", "blocked", "drafted"),
    ("ready", "T001", "in_progress", "drafted"),
    ("claimed", "T001", "ready", "blocked"),
    ("submitted", "T001", "ready", "none"),
], ids=["ready-blocked", "ready-in-progress", "claimed-ready", "needs-review-ready"])
def test_other_transitions_are_refused_naming_the_allowed_targets(anvil_env, state, task_id, to_status,
                                                                  allowed) -> None:
    scenario(anvil_env, state)
    error = refused(anvil_env, "update_task_status", task_id=task_id, to_status=to_status, actor="agent-1")
    assert (error.code, error.exit_code) == ("transition_not_allowed", 5)
    assert error.message.endswith(f": {allowed}")


def test_moving_a_task_to_ready_checks_the_readiness_gate(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    (root / "mini.md").write_text(mini_prd(mini_task("T001").split("**Verification:**")[0]), encoding="utf-8")
    op(anvil_env, "parse_prd", file="mini.md")
    op(anvil_env, "plan_tasks", use_llm=False)
    error = refused(anvil_env, "update_task_status", task_id="T001", to_status="ready", actor="lead")
    assert error.code == "readiness_gate" and "verification" in error.message


def test_blank_actors_and_empty_evidence_are_refused(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    assert refused(anvil_env, "claim_task", task_id="T002", actor="   ").code == "invalid_actor"
    error = refused(anvil_env, "submit_completion_evidence", task_id="T001", actor="agent-1", commands_run=[" "])
    assert (error.code, error.exit_code) == ("no_commands", 2)


def test_strict_holds_an_advisory_project_to_the_verification_proofs_for_one_approval(anvil_env) -> None:
    scenario(anvil_env, "unproven_advisory")  # T001 submitted with its command listed, not proven
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead", strict=True)
    assert error.code == "claim_unproven" and status(anvil_env, "T001") == "needs_review"
    for relaxed in (None, False):  # the project's gate decides: advisory records the gap
        result = op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead",
                    strict=relaxed, dry_run=True)
        assert result["evidence_gaps"] == ["no passing proof of `python -m unittest -q tests/test_store.py`"]


def test_strict_false_never_relaxes_an_enforcing_gate(anvil_env) -> None:
    scenario(anvil_env, "unproven")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead", strict=False)
    assert error.code == "claim_unproven"


def test_a_rejection_naming_quality_findings_counts_as_quality_whatever_the_asserted_reason(anvil_env) -> None:
    scenario(anvil_env, "unproven")  # an evidence reason would not count here; findings are about the work
    result = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead",
                reason="the store ignores duplicates", reason_code="evidence",
                quality_findings=["correctness", "tests"])
    assert result["reason_code"] == "quality" and result["quality_findings"] == ["correctness", "tests"]
    assert result["rejection"]["category"] == "quality" and result["rejection"]["counting"] is True


@pytest.mark.parametrize(("approve", "findings"), [(False, ["style-ish"]), (True, ["tests"])])
def test_unknown_findings_and_findings_on_an_approval_are_refused(anvil_env, approve, findings) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=approve, actor="lead",
                    reason="x", quality_findings=findings)
    assert error.code == "invalid_input" and error.details == {"field": "quality_findings"}
    assert status(anvil_env, "T001") == "needs_review"


def test_item_6_an_unfenced_note_after_a_release_is_refused_when_the_project_requires_fencing(anvil_env) -> None:
    """Issue 24 item 6 (seed 002): once a run is released, an old client without a fencing token writes
    nothing more; a task never claimed still takes notes, and the next claim's holder notes fenced."""
    scenario(anvil_env, "claimed")
    op(anvil_env, "configure_project", require_fencing=True, actor="lead")
    op(anvil_env, "release_task", task_id="T001", actor="agent-1", generation=1)
    late = refused(anvil_env, "submit_progress", task_id="T001", actor="agent-1", notes="still going")
    assert late.code == "fencing_required" and "claimed before" in late.message
    assert refused(anvil_env, "submit_progress", task_id="T001", actor="agent-1", notes="still going",
                   generation=1).code == "stale_generation"
    assert op(anvil_env, "submit_progress", task_id="T002", actor="planner", notes="never claimed")["recorded"]
    op(anvil_env, "claim_task", task_id="T001", actor="agent-2")
    assert op(anvil_env, "submit_progress", task_id="T001", actor="agent-2", notes="mine", generation=2)["recorded"]
    op(anvil_env, "configure_project", require_fencing=False, actor="lead")
    op(anvil_env, "release_task", task_id="T001", actor="agent-2", generation=2)
    assert op(anvil_env, "submit_progress", task_id="T001", actor="anyone", notes="fine")["recorded"], \
        "without require_fencing a task nobody holds takes notes from anyone, as the reference's does"


def test_a_batch_review_decides_each_task_as_its_own_event_and_writes_nothing_for_a_refused_one(anvil_env) -> None:
    from tests.ops.support import store_of

    scenario(anvil_env, "submitted")
    with store_of(anvil_env) as store:
        head = store.last_event()[0]
    result = op(anvil_env, "apply_review_decisions", task_ids=["T001", "T002", "T404"], approve=True, actor="lead")
    assert [d["task_id"] for d in result["decided"]] == ["T001"] and result["decided"][0]["to_status"] == "done"
    assert {(r["task_id"], r["code"]) for r in result["refused"]} == {("T002", "not_in_review"),
                                                                      ("T404", "task_not_found")}
    assert (result["decided_count"], result["refused_count"]) == (1, 2)
    with store_of(anvil_env) as store:
        written = [e.type for e in store.events(after=head)]
    assert written.count("review.decided") == 1
    assert status(anvil_env, "T002") == "ready"


def test_a_batch_naming_a_task_twice_decides_it_once_and_refuses_the_repeat(anvil_env) -> None:
    from tests.ops.support import store_of

    scenario(anvil_env, "submitted")
    with store_of(anvil_env) as store:
        head = store.last_event()[0]
    result = op(anvil_env, "apply_review_decisions", task_ids=["T001", "t001", "T404"], approve=True, actor="lead")
    assert [d["task_id"] for d in result["decided"]] == ["T001"]
    assert [(r["task_id"], r["code"]) for r in result["refused"]] == [("t001", "not_in_review"),
                                                                      ("T404", "task_not_found")]
    with store_of(anvil_env) as store:
        assert [e.type for e in store.events(after=head)].count("review.decided") == 1
    assert result["next_ready"] is not None, "read after the commit, which finished T001"


def test_a_batch_review_refuses_self_review_per_task_and_keeps_the_work_in_review(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    result = op(anvil_env, "apply_review_decisions", task_ids=["T001"], approve=True, actor="agent-1")
    assert result["decided"] == [] and result["refused"][0]["code"] == "self_review_forbidden"
    assert status(anvil_env, "T001") == "needs_review"
