"""Claiming handlers: what next offers, claim and claim-next, renew, release, fencing and reaping.

Calls go through the real operation pipeline (``invoke``) or the in-process CLI. Leases expire by
moving the injected engine clock (``advance_clock``), never by sleeping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.store import system_clock
from anvil.engine.work import offers as queue
from tests.ops.support import (
    assert_replays,
    event_types,
    expire_leases,
    finish,
    mini_prd,
    mini_task,
    op,
    refused,
    scenario,
    set_config,
    status,
    store_of,
    submit,
)

# -- helpers -----------------------------------------------------------------------------------


def next_id(env: dict[str, str], **args: object) -> str | None:
    task = op(env, "get_next_task", **args)["task"]
    return task["id"] if task else None


def ready_mini(env: dict[str, str], *tasks: str, initialize: bool = True) -> None:
    """Parse, approve, plan and promote a small PRD (tasks stay unscored)."""
    root = scenario(env, "initialized") if initialize else Path(env["ANVIL_ROOT"])
    (root / "mini.md").write_text(mini_prd(*tasks), encoding="utf-8")
    op(env, "parse_prd", file="mini.md")
    op(env, "review_prd", actor="lead")
    op(env, "review_prd", actor="lead", approve=True)
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
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="no tests")
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
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="no tests")
    set_config(anvil_env, accept_rate_floor=0.5, accept_rate_window_days=7)
    assert op(anvil_env, "get_next_task")["task"] is None
    expire_leases(monkeypatch, 8 * 86400)
    result = op(anvil_env, "get_next_task")
    assert (result["governor"]["denominator"], result["task"]["id"]) == (0, "T002")


def test_an_evidence_rejection_of_unproven_work_does_not_count_against_the_rate(anvil_env) -> None:
    scenario(anvil_env, "unproven")
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="redo",
                 reason_code="evidence")
    assert decided["reason_code"] == "evidence" and decided["rejection"]["counting"] is False
    assert decided["rejection"]["basis"] == decided["evidence_gaps"] != []
    set_config(anvil_env, accept_rate_floor=0.9)
    result = op(anvil_env, "get_next_task")
    assert (result["governor"]["denominator"], result["governor"]["rate"]) == (0, None)
    assert result["task"] is not None, "a zero denominator never fails the floor"


def submitted_outside_the_claim(env: dict[str, str]) -> None:
    """T001 claimed for shortlink/store.py, handed in with a change to README.md as well."""
    scenario(env, "ready")
    op(env, "claim_task", task_id="T001", actor="agent-1", expected_files=["shortlink/store.py"])
    submit(env, "T001", "agent-1", files_changed=["shortlink/store.py", "README.md"])


def test_item_5_a_process_rejection_counts_only_when_a_recorded_process_fact_backs_it(anvil_env) -> None:
    """Issue 24 item 5: missing proofs make a process assertion no truer: unproven work that stayed in its
    claim's files is a counting quality rejection; a change outside the claim's files is process."""
    scenario(anvil_env, "unproven")
    inside = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="redo",
                reason_code="process")
    assert (inside["reason_code"], inside["rejection"]["counting"], inside["rejection"]["basis"]) == (
        "quality", True, [])


def test_item_5_a_change_outside_the_claims_files_makes_a_process_rejection_non_counting(anvil_env) -> None:
    """Issue 24 item 5: the recorded process fact: the submission changed a file its claim did not declare."""
    submitted_outside_the_claim(anvil_env)
    outside = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead",
                 reason="touched the README", reason_code="process")
    assert (outside["reason_code"], outside["rejection"]["counting"]) == ("process", False)
    assert outside["rejection"]["basis"] == ["changed README.md outside the claim's declared files"]
    set_config(anvil_env, accept_rate_floor=0.9)
    assert op(anvil_env, "get_next_task", actor="agent-1")["governor"]["denominator"] == 0


def test_item_5_an_evidence_rejection_of_proven_work_with_findings_or_none_counts(anvil_env) -> None:
    """Issue 24 item 5: evidence needs a gap in the evidence contract; a change outside the claim is no
    evidence gap."""
    submitted_outside_the_claim(anvil_env)
    op(anvil_env, "configure_project", evidence_gate="advisory", actor="lead")
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="redo",
                 reason_code="evidence")
    assert decided["evidence_gaps"] and decided["reason_code"] == "evidence", "the commands were never proven"


def test_item_13_a_rejection_says_what_happens_to_the_task_next(anvil_env) -> None:
    """Issue 24 item 13: back in drafted, with the way back to the queue."""
    scenario(anvil_env, "submitted")
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="redo")
    step = decided["rejection"]["next_step"]
    assert decided["to_status"] == "drafted" and "anvil review tasks" in step and "task-status T001 ready" in step


def test_item_5_risk_ceilings_offer_only_scores_a_person_confirmed(anvil_env) -> None:
    """Issue 24 item 5: the rules' scores are a guess until review_tasks confirms them; a re-score
    needs a new confirmation."""
    scenario(anvil_env, "planned")
    op(anvil_env, "review_tasks", actor="lead")
    scored = op(anvil_env, "score_tasks", actor="lead")
    assert scored["scored"] and next_id(anvil_env, max_blast=5) is None and next_id(anvil_env) == "T001"
    confirmed = op(anvil_env, "review_tasks", actor="lead")["confirmed_scores"]
    assert "T001" in confirmed and next_id(anvil_env, max_blast=5) == "T001"
    assert op(anvil_env, "review_tasks", actor="lead")["confirmed_scores"] == []
    op(anvil_env, "score_tasks", task_id="T001", actor="lead")
    assert next_id(anvil_env, max_blast=5) != "T001" and op(anvil_env, "review_tasks", actor="lead")[
        "confirmed_scores"] == ["T001"]
    assert_replays(anvil_env)


@pytest.mark.parametrize("reason_code", ["evidence", "process"])
def test_an_evidence_or_process_rejection_of_completely_proven_work_counts_as_quality(anvil_env,
                                                                                       reason_code) -> None:
    scenario(anvil_env, "submitted")
    decided = op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="redo",
                 reason_code=reason_code)
    assert decided["reason_code"] == "quality" and decided["evidence_gaps"] == []
    set_config(anvil_env, accept_rate_floor=0.9)
    assert op(anvil_env, "get_next_task", actor="agent-1")["governor"]["denominator"] == 1


def test_offers_are_withheld_while_the_review_queue_is_full(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    set_config(anvil_env, review_queue_cap=1)
    result = op(anvil_env, "get_next_task")
    assert result["task"] is None and result["governor"]["withheld_reason"] == "review_queue_full"
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    assert next_id(anvil_env) == "T004"


def test_the_governor_counts_only_the_named_actors_finalized_reviews(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "apply_review_decision", task_id="T001", approve=True, actor="lead")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    submit(anvil_env, "T002", "agent-2")
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, actor="lead", reason="wrong")
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
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, actor="lead", reason="incomplete")
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
    "submit_completion_evidence": {"commands_run": ["pytest -q"], "category": "diagnostic"},  # fenced like completion
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


# -- what agents meet ---------------------------------------------------------------------------


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


def test_claim_refusals_say_who_and_what_is_in_the_way(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    held = refused(anvil_env, "claim_task", task_id="T001", actor="agent-2")
    assert held.code == "already_claimed" and "already claimed by agent-1 (generation 1" in held.message
    waiting = refused(anvil_env, "claim_task", task_id="T003", actor="agent-2")
    assert waiting.code == "dependencies_pending"
    assert "task T003 waits on T001 (claimed by agent-1), T002 (ready)" in waiting.message
    submit(anvil_env, "T001", "agent-1")
    done = refused(anvil_env, "claim_task", task_id="T001", actor="agent-2")
    assert done.code == "not_claimable" and "waiting for a reviewer" in done.message


def test_an_empty_offer_counts_what_holds_each_ready_task_back(anvil_env) -> None:
    scenario(anvil_env, "claimed")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    reason = op(anvil_env, "get_next_task")["reason"]
    assert reason == "7 ready task(s): 7 wait on unfinished dependencies (2 being worked on)"
    op(anvil_env, "release_task", task_id="T002", actor="agent-2")
    assert op(anvil_env, "get_next_task", prd_id="elsewhere")["reason"] == (
        "8 ready task(s): 7 wait on unfinished dependencies; 1 are outside your filters (PRD; risk ceilings take "
        "only scores confirmed with `anvil review tasks`) (1 being worked on)")


def test_an_offered_task_warns_of_submitted_work_on_its_likely_files(anvil_env) -> None:
    ready_mini(anvil_env, mini_task("T001", "critical", files="a.py"), mini_task("T002", files="a.py, b.py"),
               mini_task("T003", "low", files="c.py"))
    op(anvil_env, "claim_task", task_id="T001", actor="agent-1")
    assert op(anvil_env, "get_next_task", actor="agent-2")["task"]["id"] == "T003"  # T002 shares T001's group
    submit(anvil_env, "T001", "agent-1")
    offered = op(anvil_env, "get_next_task", actor="agent-2")["task"]
    assert offered["id"] == "T002"  # offered: the warning is advice, not a refusal
    assert offered["conflict_warnings"] == [{"file": "a.py", "task_id": "T001", "status": "needs_review"}]


def test_item_6_a_claim_with_the_revision_it_read_succeeds_and_a_stale_one_is_refused(anvil_env) -> None:
    """Issue 24 item 6 (seed 002's expectedVersion): a claim names the task's revision as read; a task
    that changed since (re-planned from an edited PRD) refuses it, and nothing is claimed."""
    scenario(anvil_env, "ready")
    read = op(anvil_env, "get_task", task_id="T001")["revision"]
    other = op(anvil_env, "get_task", task_id="T002")["revision"]
    assert len(read) == 64 and read != other
    stale = refused(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_revision=other)
    assert stale.code == "stale_revision" and stale.details == {"revision": read}
    assert op(anvil_env, "get_task", task_id="T001")["claim"] is None
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_revision=read.upper())
    assert claim["task_revision"] == read


def test_item_8_an_explicit_empty_expected_files_stays_empty(anvil_env) -> None:
    """Issue 24 item 8: expected_files [] declares no files (the default, null, takes the likely files)."""
    scenario(anvil_env, "ready")
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1", expected_files=[])["expected_files"] == []
    assert op(anvil_env, "claim_task", task_id="T002", actor="agent-2")["expected_files"] == \
        op(anvil_env, "get_task", task_id="T002")["likely_files"]
