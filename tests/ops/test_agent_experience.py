"""What agents and reviewers meet in the loop: honest offers, visible history, clean refusals."""

from __future__ import annotations

from pathlib import Path

from tests.ops.support import op, refused, scenario


def test_next_offers_nothing_until_the_prd_is_approved_and_says_so(anvil_env) -> None:
    scenario(anvil_env, "unapproved")
    offer = op(anvil_env, "get_next_task", actor="agent-1")
    assert offer["task"] is None and "not approved" in offer["reason"]
    assert op(anvil_env, "get_project_status")["ready_queue_depth"] == 0
    assert op(anvil_env, "get_dependency_graph")["ready_to_claim"] == []
    assert op(anvil_env, "claim_next_task", actor="agent-1")["claim"] is None


def test_claim_next_hands_each_agent_a_different_task(anvil_env) -> None:
    scenario(anvil_env, "ready")
    first = op(anvil_env, "claim_next_task", actor="agent-1")["claim"]
    second = op(anvil_env, "claim_next_task", actor="agent-2")["claim"]
    assert first["task_id"] == "T001" and second["task_id"] != first["task_id"]
    assert op(anvil_env, "get_task", task_id=second["task_id"])["claim"]["claimed_by"] == "agent-2"


def test_reviewers_and_the_next_agent_see_evidence_and_rejection_reasons(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    task = op(anvil_env, "get_task", task_id="T001")
    assert task["history"]["evidence"][0]["commands_run"] == ["pytest -q"]
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="no migration test")
    rejected = op(anvil_env, "get_task", task_id="T001")["history"]["reviews"][0]
    assert (rejected["decision"], rejected["reason"]) == ("rejected", "no migration test")
    packet = op(anvil_env, "generate_work_packet", task_id="T001")["content"]
    assert "no migration test" in packet


def test_find_decisions_on_a_file_judges_that_files_tasks(anvil_env) -> None:
    root = scenario(anvil_env, "planned")
    verification = "**Verification:**\n- `python -m pytest -q tests/test_store.py`"
    other = (root / "docs" / "prd.md").read_text().replace(verification, "")
    (root / "other.md").write_text(other, encoding="utf-8")
    found = op(anvil_env, "find_decisions", file="other.md")
    missing = [d["location"] for d in found["decisions"] if d["kind"] == "missing_field"]
    assert missing and all(location.startswith("T001") for location in missing)


def test_blank_actors_and_empty_evidence_are_refused(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    assert refused(anvil_env, "claim_task", task_id="T002", actor="   ").code == "invalid_actor"
    error = refused(anvil_env, "submit_completion_evidence", task_id="T001", actor="agent-1", commands_run=[" "])
    assert (error.code, error.exit_code) == ("no_commands", 2)


def test_placeholder_criteria_do_not_pass_the_readiness_gate(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    text = (root / "docs" / "prd.md").read_text()
    start = text.index("**Acceptance criteria:**", text.index("### T002"))
    end = text.index("**Verification:**", start)
    (root / "docs" / "prd.md").write_text(text[:start] + "**Acceptance criteria:**\n- TBD\n" + text[end:])
    for name, args in (("parse_prd", {"file": "docs/prd.md"}), ("plan_tasks", {})):
        op(anvil_env, name, **args)
    reviewed = op(anvil_env, "review_tasks")
    assert {"task_id": "T002", "problems": ["no acceptance criteria"]} in reviewed["blocked"]


def test_approving_reports_the_decisions_still_open(anvil_env) -> None:
    scenario(anvil_env, "parsed")
    op(anvil_env, "review_prd")
    approved = op(anvil_env, "review_prd", approve=True)
    assert approved["open_decisions"] == 1, "the sample PRD has one open question"


def test_init_refuses_a_project_root_that_does_not_exist(anvil_env) -> None:
    env = {**anvil_env, "ANVIL_ROOT": str(Path(anvil_env["ANVIL_ROOT"]) / "typo")}
    error = refused(env, "init_project")
    assert (error.code, error.exit_code) == ("root_missing", 2)


def test_a_stale_generation_names_the_live_one(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    error = refused(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=2)
    assert error.code == "stale_generation" and "generation 1" in error.message


def test_a_project_can_require_fencing_tokens(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    op(anvil_env, "configure_project", require_fencing=True)
    assert refused(anvil_env, "renew_claim", task_id="T001", actor="agent-1").code == "fencing_required"
    assert op(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1)["renewed"] is True
    taken = op(anvil_env, "release_task", task_id="T001", actor="lead", confirm=True)
    assert taken["released"] is True, "a confirmed takeover needs no token"
