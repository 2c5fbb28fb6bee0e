"""Behaviour of the execution loop: next, claim, renew, progress, submit, release, review, reads.

Calls go through the real operation pipeline (``invoke``) or the in-process CLI. Leases expire by
moving the engine clock (``ANVIL_TEST_NOW_OFFSET``), never by sleeping.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.integrity import verify
from anvil.engine.storage.store import system_clock
from anvil.engine.work import offers as queue
from tests.ops.support import event_types, op, refused, scenario, store_of

# -- helpers -----------------------------------------------------------------------------------


def next_id(env: dict[str, str], **args: object) -> str | None:
    task = op(env, "get_next_task", **args)["task"]
    return task["id"] if task else None


def status(env: dict[str, str], task_id: str) -> str:
    return op(env, "get_task", task_id=task_id)["status"]


def set_config(env: dict[str, str], **values: object) -> None:
    """Test-only: there is no operation that changes the project config, so edit the row."""
    with store_of(env) as store:
        (raw,) = store.conn.execute("SELECT config FROM project").fetchone()
        store.conn.execute("UPDATE project SET config = ?", (json.dumps({**json.loads(raw), **values}),))


def submit(env: dict[str, str], task_id: str, actor: str, **args: object) -> dict:
    return op(env, "submit_completion_evidence", task_id=task_id, actor=actor, commands_run=["pytest -q"], **args)


def finish(env: dict[str, str], task_id: str, actor: str = "agent-1", reviewer: str = "lead") -> None:
    op(env, "claim_task", task_id=task_id, actor=actor)
    submit(env, task_id, actor)
    op(env, "apply_review_decision", task_id=task_id, approve=True, reviewer=reviewer)


def expire_leases(monkeypatch: pytest.MonkeyPatch, seconds: int = 3600) -> None:
    monkeypatch.setenv("ANVIL_TEST_NOW_OFFSET", str(seconds))


def mini_task(task_id: str, priority: str = "high", files: str = "", deps: str = "none") -> str:
    return (f"### {task_id}: Task {task_id}\n\n**Feature:** F001\n**Priority:** {priority}\n**Type:** feature\n"
            f"**Likely files:** {files or task_id.lower() + '.py'}\n**Dependencies:** {deps}\n"
            f"**Acceptance criteria:**\n- {task_id} works.\n**Verification:**\n- `pytest -q`\n")


def mini_prd(*tasks: str) -> str:
    return ("# Project: Mini\n\n## Summary\n\nSupport agents use Mini.\n\n## Requirements\n\n- R001: It works.\n\n"
            "## Features\n\n### F001: Core\n\nThe core.\n\n**Requirements:** R001\n\n## Tasks\n\n"
            + "\n".join(tasks))


def ready_mini(env: dict[str, str], *tasks: str, initialize: bool = True) -> None:
    """Parse, approve, plan and promote a small PRD (tasks stay unscored)."""
    root = scenario(env, "initialized") if initialize else Path(env["ANVIL_ROOT"])
    (root / "mini.md").write_text(mini_prd(*tasks), encoding="utf-8")
    op(env, "parse_prd", file="mini.md")
    op(env, "review_prd", reviewer="lead")
    op(env, "review_prd", reviewer="lead", approve=True)
    op(env, "plan_tasks", use_llm=False)
    op(env, "review_tasks")


# -- get_next_task -----------------------------------------------------------------------------


def test_next_orders_by_priority_then_complexity_with_unscored_last_then_id(anvil_env, monkeypatch) -> None:
    import anvil.engine.planning.state as plan_state

    ready_mini(anvil_env, mini_task("T001", "low"), mini_task("T002"), mini_task("T003"), mini_task("T004"),
               mini_task("T005", "critical"), mini_task("T006"))
    complexity = {"T001": 1, "T002": 3, "T003": 1, "T005": 5}
    monkeypatch.setattr(plan_state, "score_task", lambda task, stats: {
        "complexity": complexity[task["id"]], "parallelizability": 3, "context_load": 3, "blast_radius": 3,
        "review_risk": 3, "agent_suitability": 3})
    for scored in complexity:
        op(anvil_env, "score_tasks", task_id=scored)
    offered: list[str] = []
    while (offer := next_id(anvil_env)) is not None:
        offered.append(offer)
        op(anvil_env, "claim_task", task_id=offer, actor="agent-1")
    assert offered == ["T005", "T003", "T002", "T004", "T006", "T001"]


def test_next_prefers_the_earlier_created_task_over_the_lower_id(anvil_env) -> None:
    ready_mini(anvil_env, mini_task("T002"), mini_task("T003"))
    ready_mini(anvil_env, mini_task("T002"), mini_task("T003"), mini_task("T001"), initialize=False)
    assert status(anvil_env, "T001") == "ready"
    assert next_id(anvil_env) == "T002"


def test_next_never_offers_held_tasks_or_tasks_with_unfinished_dependencies(anvil_env) -> None:
    scenario(anvil_env, "ready")
    assert next_id(anvil_env) == "T001"
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    assert next_id(anvil_env) == "T002"
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    result = op(anvil_env, "get_next_task")
    assert result["task"] is None and "7 ready task(s)" in result["reason"]


def test_next_skips_a_task_whose_conflict_group_has_a_live_claim(anvil_env) -> None:
    ready_mini(anvil_env, mini_task("T001", files="shared.py, x.py"), mini_task("T002", files="shared.py, y.py"),
               mini_task("T003", "low"))
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_files=["x.py"])
    assert next_id(anvil_env) == "T003"
    error = refused(anvil_env, "claim_task", task_id="T002", actor="agent-2", expected_files=["y.py"])
    assert (error.code, error.exit_code) == ("conflict_group_busy", 5)


def test_next_skips_a_task_whose_likely_files_overlap_a_live_claim(anvil_env) -> None:
    ready_mini(anvil_env, mini_task("T001", files="p.py"), mini_task("T002", files="q.py"), mini_task("T003", "low"))
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_files=["q.py"])
    assert next_id(anvil_env) == "T003"
    assert refused(anvil_env, "claim_task", task_id="T002", actor="agent-2").code == "file_conflict"
    conflicts = op(anvil_env, "check_conflicts", task_id="T002", proposed_files=["q.py", "r.py"])["conflicts"]
    assert conflicts == [{"file": "q.py", "claim_id": claim["id"], "claimed_by": "agent-1", "task_id": "T001"}]


def test_an_expected_file_spelled_with_a_leading_dot_slash_still_conflicts(anvil_env) -> None:
    ready_mini(anvil_env, mini_task("T001", files="p.py"), mini_task("T002", files="q.py"), mini_task("T003", "low"))
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_files=["./q.py"])
    assert next_id(anvil_env) == "T003"


def test_risk_ceilings_offer_only_scored_tasks_at_or_below_the_ceiling(anvil_env) -> None:
    scenario(anvil_env, "ready")
    blast = op(anvil_env, "get_task", task_id="T001")["scores"]["blast_radius"]
    assert next_id(anvil_env, max_blast=blast) == "T001"
    assert next_id(anvil_env, max_blast=blast - 1) == "T002"
    assert next_id(anvil_env, max_review_risk=1) == "T002"
    op(anvil_env, "claim_task", task_id="T002", actor="agent-1")
    assert next_id(anvil_env, max_blast=1) is None


def test_risk_ceilings_never_offer_unscored_tasks(anvil_env) -> None:
    scenario(anvil_env, "planned")
    op(anvil_env, "review_tasks")
    assert (next_id(anvil_env), next_id(anvil_env, max_blast=5), next_id(anvil_env, max_review_risk=5)) == \
        ("T001", None, None)


# -- governor ----------------------------------------------------------------------------------


def test_offers_are_withheld_while_the_accept_rate_is_below_the_floor(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="no tests")
    set_config(anvil_env, accept_rate_floor=0.5)
    result = op(anvil_env, "get_next_task", actor="agent-1")
    assert result["task"] is None and "accept_rate_below_floor" in result["reason"]
    governor = result["governor"]
    assert (governor["numerator"], governor["denominator"], governor["rate"]) == (0, 1, 0.0)
    assert governor["offer_throttled"] is True and governor["recovery"]
    assert op(anvil_env, "claim_task", task_id="T002", actor="agent-1")["generation"] == 1, \
        "claiming a known id bypasses offer throttling"


def test_a_rejection_older_than_the_window_no_longer_withholds_offers(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="no tests")
    set_config(anvil_env, accept_rate_floor=0.5, accept_rate_window_days=7)
    assert op(anvil_env, "get_next_task")["task"] is None
    monkeypatch.setenv("ANVIL_TEST_NOW_OFFSET", str(8 * 86400))
    result = op(anvil_env, "get_next_task")
    assert (result["governor"]["denominator"], result["task"]["id"]) == (0, "T002")


@pytest.mark.parametrize("reason_code", ["evidence", "process"])
def test_evidence_and_process_rejections_do_not_count_against_the_rate(anvil_env, reason_code) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="redo",
       reason_code=reason_code)
    set_config(anvil_env, accept_rate_floor=0.9)
    result = op(anvil_env, "get_next_task")
    assert (result["governor"]["denominator"], result["governor"]["rate"]) == (0, None)
    assert result["task"] is not None, "a zero denominator never fails the floor"


def test_offers_are_withheld_while_the_review_queue_is_full(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    set_config(anvil_env, review_queue_cap=1)
    result = op(anvil_env, "get_next_task")
    assert result["task"] is None and result["governor"]["withheld_reason"] == "review_queue_full"
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")
    assert next_id(anvil_env) == "T004"


def test_the_governor_counts_only_the_named_actors_finalized_reviews(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    submit(anvil_env, "T002", "agent-2")
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, reviewer="lead", reason="wrong")
    set_config(anvil_env, accept_rate_floor=0.75)
    with store_of(anvil_env) as store:
        everyone = queue.governor(store, None, system_clock())
        first = queue.governor(store, "agent-1", system_clock())
        second = queue.governor(store, "agent-2", system_clock())
    assert (everyone["numerator"], everyone["denominator"], everyone["rate"]) == (1, 2, 0.5)
    assert (first["rate"], first["withheld_reason"]) == (1.0, None)
    assert (second["rate"], second["withheld_reason"]) == (0.0, "accept_rate_below_floor")


# -- claim_task --------------------------------------------------------------------------------


@pytest.mark.parametrize(("state", "task_id", "code"), [
    ("unapproved", "T001", "prd_not_approved"),
    ("planned", "T001", "not_claimable"),
    ("ready", "T003", "dependencies_pending"),
    ("claimed", "T001", "already_claimed"),
], ids=["prd-not-approved", "not-ready", "dependencies-pending", "already-claimed"])
def test_a_claim_is_refused_unless_approved_ready_unblocked_and_free(anvil_env, state, task_id, code) -> None:
    scenario(anvil_env, state)
    before = event_types(anvil_env)
    error = refused(anvil_env, "claim_task", task_id=task_id, actor="agent-2")
    assert (error.code, error.exit_code) == (code, 5)
    assert event_types(anvil_env) == before


def test_a_task_becomes_claimable_once_its_dependencies_are_done(anvil_env) -> None:
    scenario(anvil_env, "ready")
    finish(anvil_env, "T001")
    assert refused(anvil_env, "claim_task", task_id="T003", actor="agent-1").code == "dependencies_pending"
    finish(anvil_env, "T002")
    assert op(anvil_env, "claim_task", task_id="T003", actor="agent-1")["task_id"] == "T003"


def test_every_new_claim_of_a_task_gets_the_next_generation(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    generations = [op(anvil_env, "claim_task", task_id="T002", actor="agent-1", lease_duration_seconds=60)]
    op(anvil_env, "release_task", task_id="T002", actor="agent-1")
    generations.append(op(anvil_env, "claim_task", task_id="T002", actor="agent-1", lease_duration_seconds=60))
    expire_leases(monkeypatch)
    generations.append(op(anvil_env, "claim_task", task_id="T002", actor="agent-2"))
    submit(anvil_env, "T002", "agent-2")
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, reviewer="lead", reason="incomplete")
    op(anvil_env, "update_task_status", task_id="T002", to_status="ready", actor="lead")
    generations.append(op(anvil_env, "claim_task", task_id="T002", actor="agent-1"))
    assert [c["generation"] for c in generations] == [1, 2, 3, 4]
    assert len({c["id"] for c in generations}) == 4


def test_a_dry_run_claim_reports_the_claim_and_writes_nothing(anvil_env, cli) -> None:
    scenario(anvil_env, "ready")
    before = event_types(anvil_env)
    preview = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", dry_run=True)
    printed = cli("claim", "T001", "--actor", "agent-1", "--dry-run", "--json")
    assert (preview["task_id"], preview["claimed_by"], preview["generation"]) == ("T001", "agent-1", 1)
    assert printed.code == 0 and printed.json()["generation"] == 1
    assert event_types(anvil_env) == before and status(anvil_env, "T001") == "ready"
    assert refused(anvil_env, "claim_task", task_id="T003", actor="agent-1", dry_run=True).code == \
        "dependencies_pending", "a dry run still runs every check"
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1


# -- fencing and ownership ---------------------------------------------------------------------

HOLDER_OPS: dict[str, dict[str, Any]] = {
    "renew_claim": {},
    "submit_progress": {"notes": "still going"},
    "submit_completion_evidence": {"commands_run": ["pytest -q"]},
    "release_task": {},
}


@pytest.mark.parametrize("token", ["generation", "claim_id"])
@pytest.mark.parametrize("name", list(HOLDER_OPS))
def test_an_old_generation_or_claim_id_is_refused_with_stale_generation(anvil_env, name, token) -> None:
    scenario(anvil_env, "ready")
    old = op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    op(anvil_env, "release_task", task_id="T001", actor="agent-1")
    new = op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    before = event_types(anvil_env)
    stale = {"generation": old["generation"]} if token == "generation" else {"claim_id": old["id"]}
    error = refused(anvil_env, name, task_id="T001", actor="agent-1", **HOLDER_OPS[name], **stale)
    assert (error.code, error.exit_code) == ("stale_generation", 5)
    assert event_types(anvil_env) == before
    live = {"generation": new["generation"]} if token == "generation" else {"claim_id": new["id"]}
    op(anvil_env, name, task_id="T001", actor="agent-1", **HOLDER_OPS[name], **live)


@pytest.mark.parametrize("name", ["renew_claim", "submit_progress", "submit_completion_evidence"])
def test_another_actor_is_refused_with_not_owner(anvil_env, name) -> None:
    scenario(anvil_env, "claimed")
    error = refused(anvil_env, name, task_id="T001", actor="agent-2", **HOLDER_OPS[name])
    assert (error.code, error.exit_code) == ("not_owner", 5)


def test_releasing_another_actors_claim_needs_confirmation(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    error = refused(anvil_env, "release_task", task_id="T001", actor="lead")
    assert (error.code, error.exit_code) == ("confirmation_required", 3)
    assert status(anvil_env, "T001") == "claimed"
    result = op(anvil_env, "release_task", task_id="T001", actor="lead", confirm=True, reason="agent vanished")
    assert result["released"] is True and status(anvil_env, "T001") == "ready"
    with store_of(anvil_env) as store:
        last = list(store.events())[-1]
    assert (last.type, last.payload["forced"], last.payload["holder"]) == ("claim.released", True, "agent-1")


def test_the_cli_release_of_another_actors_claim_exits_3_without_yes(anvil_env, cli) -> None:
    scenario(anvil_env, "claimed")
    without = cli("release", "T001", "--actor", "lead", "--json")
    human = cli("release", "T001", "--actor", "lead")
    confirmed = cli("release", "T001", "--actor", "lead", "--yes", "--json")
    assert without.code == 3 and without.json()["error"]["code"] == "confirmation_required"
    assert human.code == 3 and "--yes" in human.stderr and "Traceback" not in human.stderr
    assert confirmed.code == 0 and confirmed.json()["released"] is True


# -- leases and reaping ------------------------------------------------------------------------


def test_an_expired_claim_is_reaped_before_another_agent_claims_the_task(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=30)
    expire_leases(monkeypatch, 60)
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-2")
    assert claim["generation"] == 2
    assert event_types(anvil_env)[-2:] == ["claim.expired", "claim.acquired"]


@pytest.mark.parametrize("read", ["get_next_task", "get_project_summary"])
def test_an_expired_claim_is_reaped_before_next_and_summary(anvil_env, monkeypatch, read) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=30)
    expire_leases(monkeypatch, 60)
    op(anvil_env, read)
    assert event_types(anvil_env)[-1] == "claim.expired"
    assert status(anvil_env, "T001") == "ready"
    assert op(anvil_env, "get_project_summary")["active_claim_count"] == 0
    assert refused(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1).code == \
        "stale_generation"


def test_renewing_extends_the_lease_past_its_original_end(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=30)
    renewed = op(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1, extend_seconds=3600)
    expire_leases(monkeypatch, 600)
    assert renewed["lease_expires_at"] > claim["lease_expires_at"]
    assert op(anvil_env, "get_project_summary")["active_claim_count"] == 1
    assert "claim.expired" not in event_types(anvil_env)


def test_a_refused_mutation_still_reaps_expired_claims(anvil_env, monkeypatch) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=30)
    expire_leases(monkeypatch, 60)
    assert refused(anvil_env, "renew_claim", task_id="T001", actor="agent-1", generation=1).code == \
        "stale_generation"
    assert "claim.expired" in event_types(anvil_env)
    assert status(anvil_env, "T001") == "ready"


# -- submit and review -------------------------------------------------------------------------


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
    result = op(anvil_env, "apply_review_decision", task_id="T001", approve=approve, reviewer="lead",
                reason=None if approve else "the schema file is missing")
    assert (result["decision"], result["to_status"], result["next_ready"]["id"]) == (decision, to_status, next_ready)
    assert status(anvil_env, "T001") == to_status


def test_rejecting_without_a_reason_is_refused_with_reason_required(anvil_env, cli) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="  ")
    result = cli("apply", "T001", "--reject", "--reviewer", "lead", "--json")
    assert (error.code, error.exit_code) == ("reason_required", 2)
    assert result.code == 2 and result.json()["error"]["code"] == "reason_required"
    assert status(anvil_env, "T001") == "needs_review"


def test_a_reviewer_cannot_decide_on_their_own_evidence_unless_the_config_allows_it(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="agent-1")
    assert (error.code, error.exit_code) == ("self_review_forbidden", 5)
    set_config(anvil_env, self_review=True)
    assert op(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="agent-1")["to_status"] \
        == "done"


@pytest.mark.parametrize("category", ["diagnostic", "advisory", "blocked"])
def test_evidence_that_is_not_completion_cannot_be_approved(anvil_env, category) -> None:
    scenario(anvil_env, "claimed")
    submit(anvil_env, "T001", "agent-1", category=category)
    error = refused(anvil_env, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")
    assert (error.code, error.exit_code) == ("evidence_not_completion", 5)
    assert status(anvil_env, "T001") == "needs_review"
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, reviewer="lead", reason="not done")
    assert status(anvil_env, "T001") == "drafted"


# -- update_task_status ------------------------------------------------------------------------


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


# -- reads -------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 9, 100])
def test_list_pagination_followed_until_null_sees_every_task_exactly_once(anvil_env, limit) -> None:
    scenario(anvil_env, "ready")
    seen, cursor, pages = [], None, 0
    while True:
        page = op(anvil_env, "list_tasks", limit=limit, cursor=cursor)
        pages += 1
        assert page["count"] == len(page["tasks"]) <= limit
        seen += [t["id"] for t in page["tasks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 20
    assert seen == [f"T00{i}" for i in range(1, 10)]


def test_list_filters_by_status_and_holder_and_refuses_a_foreign_cursor(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    held = op(anvil_env, "list_tasks", claimed_by="agent-1")["tasks"]
    ready = op(anvil_env, "list_tasks", status="ready")["tasks"]
    assert [(t["id"], t["claimed_by"]) for t in held] == [("T001", "agent-1")]
    assert [t["id"] for t in ready] == [f"T00{i}" for i in range(2, 10)]
    assert refused(anvil_env, "list_tasks", cursor="page-2").code == "invalid_cursor"


def test_the_dependency_graph_covers_all_a_feature_or_a_task_with_its_dependencies(anvil_env) -> None:
    scenario(anvil_env, "ready")
    everything = op(anvil_env, "get_dependency_graph")
    feature = op(anvil_env, "get_dependency_graph", scope="feature", target_id="F002")
    one = op(anvil_env, "get_dependency_graph", scope="task", target_id="T007")
    assert len(everything["nodes"]) == 9 and everything["ready_to_claim"] == ["T001", "T002"]
    assert {"from": "T001", "to": "T003"} in everything["edges"], "edges run from dependency to dependent"
    assert [n["id"] for n in feature["nodes"]] == ["T004", "T005", "T008"]
    assert [n["id"] for n in one["nodes"]] == ["T001", "T004", "T005", "T006", "T007"]
    assert all(e["from"] in {"T001", "T004", "T005", "T006"} for e in one["edges"])
    assert refused(anvil_env, "get_dependency_graph", scope="feature").code == "target_required"
    assert refused(anvil_env, "get_dependency_graph", scope="feature", target_id="F404").code == "feature_not_found"


def test_check_conflicts_reports_files_held_by_other_claims_only(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    other = op(anvil_env, "check_conflicts", task_id="T004", proposed_files=["shortlink/store.py", "free.py"])
    own = op(anvil_env, "check_conflicts", task_id="T001", proposed_files=["shortlink/store.py"])
    assert [(c["file"], c["task_id"], c["claimed_by"]) for c in other["conflicts"]] == \
        [("shortlink/store.py", "T001", "agent-1")]
    assert own["conflicts"] == []


def test_the_work_packet_renders_markdown_and_json(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    markdown = op(anvil_env, "generate_work_packet", task_id="T001")["content"]
    data = op(anvil_env, "generate_work_packet", task_id="T003", format="json")["content"]
    assert markdown.startswith("# T001: SQLite storage layer\n")
    for part in ("## Acceptance criteria", "Saving the same URL twice returns two different codes.",
                 "`python -m pytest -q tests/test_store.py`", "## Claim", "agent-1", "generation 1"):
        assert part in markdown
    assert [d["id"] for d in data["open_dependencies"]] == ["T001", "T002"]
    assert data["claim"] is None and data["acceptance_criteria"] and data["verification"]
    assert refused(anvil_env, "generate_work_packet", task_id="T404").code == "task_not_found"


def test_the_summary_counts_a_full_loop(anvil_env) -> None:
    scenario(anvil_env, "ready")
    finish(anvil_env, "T001")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    submit(anvil_env, "T002", "agent-2")
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, reviewer="lead", reason="missing")
    op(anvil_env, "claim_task", task_id="T004", actor="agent-1")
    op(anvil_env, "update_task_status", task_id="T004", to_status="blocked", actor="agent-1")
    summary = op(anvil_env, "get_project_summary")
    counts = {k: v for k, v in summary["task_counts"].items() if v}
    assert counts == {"done": 1, "drafted": 1, "blocked": 1, "ready": 6}
    assert (summary["active_claim_count"], summary["blocked_task_count"], summary["ready_task_count"]) == (1, 1, 0)
    with store_of(anvil_env) as store:
        assert verify(store)["ok"], "replaying the log reproduces the projection"


# -- idempotency -------------------------------------------------------------------------------


def test_an_identical_retry_returns_the_original_result_without_a_second_event(anvil_env, cli) -> None:
    scenario(anvil_env, "ready")
    first = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="req-1")
    printed = cli("claim", "T002", "--actor", "agent-2", "--idempotency-key", "req-9", "--json")
    count = len(event_types(anvil_env))
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="req-1") == first
    assert cli("claim", "T002", "--actor", "agent-2", "--idempotency-key", "req-9", "--json").stdout == printed.stdout
    assert len(event_types(anvil_env)) == count
    error = refused(anvil_env, "claim_task", task_id="T004", actor="agent-1", idempotency_key="req-1")
    conflict = cli("claim", "T004", "--actor", "agent-2", "--idempotency-key", "req-9", "--json")
    assert (error.code, error.exit_code) == ("idempotency_conflict", 5)
    assert conflict.code == 5 and conflict.json()["error"]["code"] == "idempotency_conflict"
    assert len(event_types(anvil_env)) == count
    assert refused(anvil_env, "claim_task", task_id="T001", actor="agent-3", idempotency_key="req-1").code == \
        "already_claimed", "keys are scoped to the actor: another actor's call runs for real"
