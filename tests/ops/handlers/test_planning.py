"""Behaviour of the planning operations: plan_tasks, score_tasks, review_tasks, edit_dependencies.

Calls go through the real operation pipeline; the LLM backstop is driven with a fake sampler.
"""

from __future__ import annotations

import pytest

from anvil.ops.scenarios import SAMPLE_AT
from tests.ops.support import assert_replays, edit_sample, event_types, events, op, refused, scenario, statuses, task

# -- helpers -----------------------------------------------------------------------------------


def without_task(text: str, task_id: str, next_id: str) -> str:
    return text[:text.index(f"### {task_id}:")] + text[text.index(f"### {next_id}:"):]


def without_t002(text: str) -> str:
    return without_task(text, "T002", "T003").replace("**Dependencies:** T001, T002", "**Dependencies:** T001")


def reparse(env: dict[str, str], *, approve: bool = False) -> None:
    op(env, "parse_prd", file=SAMPLE_AT)
    if approve:
        op(env, "review_prd", actor="lead")
        op(env, "review_prd", actor="lead", approve=True)


# -- plan_tasks --------------------------------------------------------------------------------


def test_plan_records_one_event_bound_to_the_prd_revision(anvil_env) -> None:
    scenario(anvil_env, "approved")
    before = len(events(anvil_env))

    result = op(anvil_env, "plan_tasks", use_llm=False)

    new = events(anvil_env)[before:]
    assert [e.type for e in new] == ["planning.batch_applied"]
    prd = events(anvil_env)[before - 1].payload  # prd.approved carries the bound digests
    assert new[0].payload["revision"] == prd["revision"] == result["revision"] == 1
    assert new[0].payload["source_digest"] == prd["source_digest"]
    assert result["added"] == [f"T00{i}" for i in range(1, 10)]
    assert (result["changed"], result["removed"], result["task_count"]) == ([], [], 9)
    assert set(statuses(anvil_env).values()) == {"drafted"}


def test_replanning_an_unchanged_prd_reports_nothing_added_changed_or_removed(anvil_env) -> None:
    scenario(anvil_env, "ready")
    scores_before = task(anvil_env, "T001")["scores"]

    result = op(anvil_env, "plan_tasks", use_llm=False)

    assert (result["added"], result["changed"], result["removed"]) == ([], [], [])
    assert set(statuses(anvil_env).values()) == {"ready"}
    assert task(anvil_env, "T001")["scores"] == scores_before


def test_editing_a_tasks_criteria_reports_it_changed_and_sends_it_back_to_drafted(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    edit_sample(root, lambda t: t.replace("rejected with the error code `too_long`.",
                                          "rejected with the error code `url_too_long`."))
    reparse(anvil_env)

    result = op(anvil_env, "plan_tasks", use_llm=False)

    assert (result["added"], result["changed"], result["removed"]) == ([], ["T002"], [])
    assert task(anvil_env, "T002")["status"] == "drafted"
    assert task(anvil_env, "T002")["scores"] is None, "a changed task must be scored again"
    assert {s for tid, s in statuses(anvil_env).items() if tid != "T002"} == {"ready"}
    assert_replays(anvil_env)


def test_removing_a_task_that_is_still_ready_prunes_it_without_force(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    edit_sample(root, lambda t: t[:t.index("### T009:")])
    reparse(anvil_env)

    result = op(anvil_env, "plan_tasks", use_llm=False)

    assert result["removed"] == result["pruned_task_ids"] == ["T009"]
    assert refused(anvil_env, "get_task", task_id="T009").code == "task_not_found"


def test_removing_a_claimed_task_is_refused_with_orphans_past_ready(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    edit_sample(root, without_t002)
    reparse(anvil_env)
    before = event_types(anvil_env)

    error = refused(anvil_env, "plan_tasks", use_llm=False)

    assert (error.code, error.exit_code) == ("orphans_past_ready", 5)
    assert event_types(anvil_env) == before
    assert task(anvil_env, "T002")["status"] == "claimed"


def test_forced_pruning_without_confirmation_is_refused_with_confirmation_required(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    edit_sample(root, without_t002)
    reparse(anvil_env)
    before = event_types(anvil_env)

    error = refused(anvil_env, "plan_tasks", use_llm=False, prune_force=True)

    assert (error.code, error.exit_code) == ("confirmation_required", 3)
    assert event_types(anvil_env) == before


def test_forced_pruning_with_confirmation_removes_the_task_and_keeps_its_history(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    claim = op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    op(anvil_env, "submit_progress", task_id="T002", actor="agent-2", notes="half way", generation=1)
    edit_sample(root, without_t002)
    reparse(anvil_env)

    result = op(anvil_env, "plan_tasks", use_llm=False, prune_force=True, confirm=True)

    assert result["pruned_task_ids"] == ["T002"] and result["changed"] == ["T003"]
    assert refused(anvil_env, "get_task", task_id="T002").code == "task_not_found"
    assert op(anvil_env, "get_project_summary")["active_claim_count"] == 0
    history = [e for e in events(anvil_env) if e.payload.get("task_id") == "T002"]
    assert [e.type for e in history] == ["claim.acquired", "progress.noted"]
    assert history[0].payload["claim_id"] == claim["id"]
    assert_replays(anvil_env)


def test_a_pruned_task_planned_again_continues_its_claim_generations(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    original = (root / SAMPLE_AT).read_text(encoding="utf-8")
    edit_sample(root, without_t002)
    reparse(anvil_env, approve=True)
    op(anvil_env, "plan_tasks", use_llm=False, prune_force=True, confirm=True)
    (root / SAMPLE_AT).write_text(original, encoding="utf-8")
    reparse(anvil_env, approve=True)
    op(anvil_env, "plan_tasks", use_llm=False)
    op(anvil_env, "review_tasks")

    again = op(anvil_env, "claim_task", task_id="T002", actor="agent-2")

    assert again["generation"] == 2
    assert refused(anvil_env, "renew_claim", task_id="T002", actor="agent-2", generation=1).code == \
        "stale_generation"


# -- score_tasks -------------------------------------------------------------------------------


def test_score_tasks_scores_every_unscored_task_in_one_event(anvil_env) -> None:
    scenario(anvil_env, "planned")
    before = len(events(anvil_env))

    result = op(anvil_env, "score_tasks")

    assert result["scored_count"] == 9 and result["skipped_already_scored"] == 0
    assert [e.type for e in events(anvil_env)[before:]] == ["tasks.scored"]
    for entry in result["scored"]:
        assert all(1 <= entry[dim] <= 5 for dim in ("complexity", "parallelizability", "context_load",
                                                    "blast_radius", "review_risk", "agent_suitability"))
    again = op(anvil_env, "score_tasks")
    assert (again["scored_count"], again["skipped_already_scored"]) == (0, 9)
    assert len(events(anvil_env)) == before + 1, "nothing left to score writes no event"


def test_score_tasks_with_a_task_id_rescores_only_that_task(anvil_env) -> None:
    scenario(anvil_env, "scored")
    before = len(events(anvil_env))

    result = op(anvil_env, "score_tasks", task_id="T002")

    assert [s["task_id"] for s in result["scored"]] == ["T002"]
    assert [e.type for e in events(anvil_env)[before:]] == ["tasks.scored"]
    assert list(events(anvil_env)[-1].payload["scores"]) == ["T002"]


def test_score_tasks_for_an_unknown_task_fails_with_task_not_found(anvil_env) -> None:
    scenario(anvil_env, "planned")
    error = refused(anvil_env, "score_tasks", task_id="T999")
    assert (error.code, error.exit_code) == ("task_not_found", 6)


def test_one_bad_score_refuses_the_whole_batch_with_score_incomplete(anvil_env, monkeypatch) -> None:
    import anvil.engine.planning.state as plan_state

    scenario(anvil_env, "planned")
    real = plan_state.score_task

    def flawed(task, stats):  # type: ignore[no-untyped-def]
        scores = real(task, stats)
        return {**scores, "review_risk": 9} if task["id"] == "T005" else scores

    monkeypatch.setattr(plan_state, "score_task", flawed)
    before = event_types(anvil_env)

    error = refused(anvil_env, "score_tasks")

    assert (error.code, error.exit_code) == ("score_incomplete", 5)
    assert event_types(anvil_env) == before
    assert all(task(anvil_env, t["id"])["scores"] is None for t in op(anvil_env, "list_tasks")["tasks"])


# -- review_tasks ------------------------------------------------------------------------------


def test_review_tasks_promotes_complete_tasks_and_lists_the_rest_as_blocked(anvil_env) -> None:
    root = scenario(anvil_env, "approved")
    edit_sample(root, lambda t: t.replace("**Verification:**\n- `python -m unittest -q tests/test_validate.py`\n", "")
                .replace("**Acceptance criteria:**\n- When 1000 redirects are replayed against a database of 10000 "
                         "links, the 95th percentile latency is under 50 ms.\n", ""))
    reparse(anvil_env)
    op(anvil_env, "plan_tasks", use_llm=False)

    result = op(anvil_env, "review_tasks")

    assert result["blocked"] == [{"task_id": "T002", "problems": ["no verification commands"]},
                                 {"task_id": "T008", "problems": ["no acceptance criteria"]}]
    promoted = ["T001", "T003", "T004", "T005", "T006", "T007", "T009"]
    assert result["promoted_to_reviewed"] == result["promoted_to_ready"] == promoted
    assert {tid for tid, s in statuses(anvil_env).items() if s == "ready"} == set(promoted)
    assert (task(anvil_env, "T002")["status"], task(anvil_env, "T008")["status"]) == ("drafted", "drafted")


def test_review_tasks_with_nothing_to_promote_writes_no_event(anvil_env) -> None:
    scenario(anvil_env, "ready")
    before = event_types(anvil_env)

    result = op(anvil_env, "review_tasks")

    assert (result["promoted_to_reviewed"], result["promoted_to_ready"], result["blocked"]) == ([], [], [])
    assert event_types(anvil_env) == before


# -- edit_dependencies -------------------------------------------------------------------------


def test_edit_dependencies_applies_a_batch_as_one_event_without_changing_status(anvil_env) -> None:
    scenario(anvil_env, "ready")
    before = len(events(anvil_env))

    result = op(anvil_env, "edit_dependencies", actor="lead", add=[["T002", "T001"], ["T008", "T002"]],
                remove=[["T009", "T006"]])

    assert result["changed"] == ["T002", "T008", "T009"]
    assert result["added"] == [["T002", "T001"], ["T008", "T002"]]
    assert result["removed"] == [["T009", "T006"]]
    new = events(anvil_env)[before:]
    assert [e.type for e in new] == ["task.dependencies_batch_edited"]
    assert {c["task_id"]: c["before"] for c in new[0].payload["changes"]}["T009"] == ["T006", "T007"]
    assert task(anvil_env, "T002")["dependencies"] == ["T001"]
    assert task(anvil_env, "T009")["dependencies"] == ["T007"]
    assert set(statuses(anvil_env).values()) == {"ready"}
    assert refused(anvil_env, "claim_task", task_id="T002", actor="a").code == "dependencies_pending"
    assert_replays(anvil_env)


@pytest.mark.parametrize(("add", "code", "exit_code"), [
    ([["T002", "T001"], ["T001", "T003"]], "dependency_cycle", 5),
    ([["T002", "T001"], ["T001", "ZZ-PRIVATE-42"]], "unknown_task", 6),
    ([["T002", "T001"], ["T004", "T004"]], "self_dependency", 2),
    ([["T002", "T001"], ["T004"]], "malformed_edge", 2),
], ids=["cycle", "unknown", "self", "malformed"])
def test_a_bad_edge_rejects_the_whole_batch_with_a_fixed_message(anvil_env, add, code, exit_code) -> None:
    scenario(anvil_env, "planned")
    before = event_types(anvil_env)

    error = refused(anvil_env, "edit_dependencies", actor="lead", add=add)

    assert (error.code, error.exit_code) == (code, exit_code)
    if code == "dependency_cycle":  # the cycle is shown: tasks of the plan, after the unknown ids were refused
        assert "T001 -> T003 -> T001" in error.message
    else:
        for raw in ("T00", "ZZ-PRIVATE"):
            assert raw not in error.message, "refusals never echo the submitted ids"
    assert event_types(anvil_env) == before
    assert task(anvil_env, "T002")["dependencies"] == [], "the valid edge of the batch was not applied"


def test_a_batch_that_changes_nothing_writes_no_event(anvil_env) -> None:
    scenario(anvil_env, "planned")
    before = event_types(anvil_env)

    result = op(anvil_env, "edit_dependencies", actor="lead", add=[["T003", "T001"]], remove=[["T002", "T001"]])

    assert (result["changed"], result["added"], result["removed"]) == ([], [], [])
    assert event_types(anvil_env) == before


def test_a_batch_without_edges_is_refused_with_no_edges(anvil_env) -> None:
    scenario(anvil_env, "planned")
    assert refused(anvil_env, "edit_dependencies", actor="lead", add=[], remove=[]).code == "no_edges"


def test_a_batch_is_capped_at_ten_thousand_pairs(anvil_env) -> None:
    scenario(anvil_env, "planned")
    edge = ["T002", "T001"]
    before = event_types(anvil_env)

    for add, remove in ((10_001, 0), (5_000, 5_001)):
        error = refused(anvil_env, "edit_dependencies", actor="lead", add=[edge] * add, remove=[edge] * remove)
        assert (error.code, error.exit_code) == ("too_many_edges", 2)
        assert "T00" not in error.message
    assert event_types(anvil_env) == before

    result = op(anvil_env, "edit_dependencies", actor="lead", add=[edge] * 10_000)
    assert result["added"] == [edge]


# -- replay ------------------------------------------------------------------------------------


def test_replaying_the_log_reproduces_the_projection_after_a_whole_planning_session(anvil_env) -> None:
    root = scenario(anvil_env, "ready")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    op(anvil_env, "edit_dependencies", actor="lead", add=[["T008", "T006"]], remove=[["T009", "T006"]])
    edit_sample(root, lambda t: without_t002(t).replace("Each successful redirect adds one row",
                                                        "Each successful redirect appends one row"))
    reparse(anvil_env, approve=True)
    op(anvil_env, "plan_tasks", use_llm=False, prune_force=True, confirm=True)
    op(anvil_env, "score_tasks")
    op(anvil_env, "score_tasks", task_id="T001")
    op(anvil_env, "review_tasks")

    assert statuses(anvil_env)["T005"] == "ready"
    assert_replays(anvil_env)


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
