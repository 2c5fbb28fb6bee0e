"""The landing record and queue: what a lander may record, what each step does to the task and its
dependents, and the queue's order and states (the git side runs in tests/cli/test_lander.py)."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.ops.scenarios import EXAMPLE_COMMIT, LANDED_COMMIT, TARGET_COMMIT, verification_result
from tests.ops.support import advance_clock, assert_replays, op, refused, scenario, store_of


def land(env: dict[str, str], outcome: str, *, actor: str = "runner-1", **extra: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"task_ids": ["T001"], "approved_commits": [EXAMPLE_COMMIT], **extra}
    return op(env, "land_task", actor=actor, outcome=outcome, target="main", remote="origin",
              target_commit=TARGET_COMMIT, **call)


def landed(env: dict[str, str], nonce: str = "land") -> dict[str, Any]:
    return land(env, "landed", landed_commit=LANDED_COMMIT, changed_paths=["shortlink/store.py"],
                result_artifacts_base64=[verification_result("runner-1", nonce, commit=LANDED_COMMIT)])


def unmet(env: dict[str, str], task_id: str) -> int:
    with store_of(env) as store:
        return int(store.conn.execute("SELECT unmet_deps FROM tasks WHERE id = ?", (task_id,)).fetchone()[0])


def test_an_approved_dependency_waits_for_its_landing_once_the_project_lands_work(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "approved_verified")
    assert unmet(anvil_env, "T004") == 0  # no landing: approved (done) is finished
    op(anvil_env, "configure_project", land_target="main", land_remote="origin", actor="lead")
    assert unmet(anvil_env, "T004") == 1  # landing: done is not enough
    assert op(anvil_env, "get_task", task_id="T004")["blocked_by"] == ["T001"]
    landed(anvil_env)
    assert unmet(anvil_env, "T004") == 0 and op(anvil_env, "get_task", task_id="T004")["blocked_by"] == []
    assert_replays(anvil_env)


def test_turning_landing_off_makes_approved_work_finished_again(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    assert unmet(anvil_env, "T004") == 1
    op(anvil_env, "configure_project", land_target="off", actor="lead")
    assert unmet(anvil_env, "T004") == 0
    assert op(anvil_env, "get_landing_queue")["enabled"] is False
    assert_replays(anvil_env)


def test_the_queue_shows_the_approved_commit_and_a_start_holds_it_against_other_landers(
        anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    queue = op(anvil_env, "get_landing_queue")
    [unit] = queue["units"]
    [entry] = unit["tasks"]
    assert (entry["task_id"], entry["state"], entry["approved_commit"]) == ("T001", "approved", EXAMPLE_COMMIT)
    assert entry["commands"] == ["python -m unittest -q tests/test_store.py"]
    started = land(anvil_env, "started")
    assert started["lease_expires_at"] and started["to_status"] == "done"
    assert op(anvil_env, "get_landing_queue")["units"][0]["tasks"][0]["state"] == "verifying"
    assert op(anvil_env, "get_project_status")["landing"]["verifying"] == 1
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="lead", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin").code == "landing_in_progress"
    land(anvil_env, "started")  # the holder may start again (a retry)


def test_a_hold_ends_so_a_lander_that_died_blocks_nobody(anvil_env: dict[str, str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """On the injected clock (SQLite: a PostgreSQL state keeps the database's clock)."""
    scenario(anvil_env, "landing")
    land(anvil_env, "started")
    advance_clock(monkeypatch, 3600)
    assert op(anvil_env, "get_landing_queue")["units"][0]["tasks"][0]["state"] == "approved"
    land(anvil_env, "started", actor="lead")


def test_a_landing_is_recorded_once_with_its_re_proofs_and_leaves_the_queue(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="landed",
                   approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin",
                   landed_commit=LANDED_COMMIT).code == "landing_unproven"
    out = landed(anvil_env)
    assert out["landed_commit"] == LANDED_COMMIT and [p["exit_code"] for p in out["proofs"]] == [0]
    queue = op(anvil_env, "get_landing_queue")
    assert queue["units"] == [] and queue["counts"]["landed"] == 1
    assert queue["landed"][0]["approved_commit"] == EXAMPLE_COMMIT
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin").code == "already_landed"
    graph = op(anvil_env, "get_dependency_graph", format="mermaid")
    assert {n["id"]: n["landed"] for n in graph["nodes"]}["T001"] is True and "landed" in graph["diagram"]
    assert_replays(anvil_env)


def test_a_bounce_sends_the_task_back_to_ready_with_the_tasks_that_touched_its_paths(
        anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    with store_of(anvil_env) as store, store.write("runner-1") as tx:  # a task that landed the path before
        tx.conn.execute("INSERT INTO landing_files (path, task_id, seq) VALUES ('shortlink/store.py', 'T009', 1)")
    out = land(anvil_env, "bounced", reason="conflict", conflict_paths=["shortlink/store.py"])
    assert out["to_status"] == "ready" and out["bounce"]["touched_by"] == {"shortlink/store.py": ["T009"]}
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "ready"
    queue = op(anvil_env, "get_landing_queue")
    assert queue["units"] == [] and queue["bounced"][0]["reason"] == "conflict"
    assert op(anvil_env, "get_project_status")["landing"]["bounced"] == 1
    [told] = op(anvil_env, "get_task", task_id="T001")["history"]["landings"]  # what the implementer reads
    assert (told["outcome"], told["conflict_paths"], told["touched_by"]) == (
        "bounced", ["shortlink/store.py"], {"shortlink/store.py": ["T009"]})
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="bounced",
                   approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin",
                   reason="conflict", conflict_paths=["a.py"]).code == "landing_not_approved"


def test_a_bounce_names_its_facts(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    for reason, field in (("conflict", "conflict_paths"), ("proof_failed", "failed_command")):
        error = refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="bounced",
                        approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin", reason=reason)
        assert (error.code, error.details["field"]) == ("invalid_input", field)
    failed = land(anvil_env, "bounced", reason="proof_failed", failed_command="python -m unittest -q x",
                  excerpt="FAILED (errors=1)")
    assert failed["bounce"]["excerpt"] == "FAILED (errors=1)"


def test_only_the_configured_target_and_the_approved_commit_land(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "landing")
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT], target="release", remote="origin").code == \
        "landing_target_mismatch"
    assert refused(anvil_env, "land_task", task_ids=["T002"], actor="runner-1", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT], target="main", remote="origin").code == "landing_not_approved"
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="runner-1", outcome="started",
                   approved_commits=[LANDED_COMMIT], target="main", remote="origin").code == "landing_stale_approval"


def test_an_approved_bundle_lands_as_one_unit(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "bundle_approved")
    op(anvil_env, "configure_project", land_target="main", actor="lead")
    [unit] = op(anvil_env, "get_landing_queue")["units"]
    assert unit["bundle_id"] == "B1" and [t["task_id"] for t in unit["tasks"]] == ["T001", "T002", "T003"]
    assert refused(anvil_env, "land_task", task_ids=["T001"], actor="lead", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT], target="main").code == "landing_unit_incomplete"
    # The scenario's members were submitted without commits: nothing to land.
    assert refused(anvil_env, "land_task", task_ids=["T001", "T002", "T003"], actor="lead", outcome="started",
                   approved_commits=[EXAMPLE_COMMIT] * 3, target="main").code == "landing_needs_commit"


def test_a_task_lands_only_after_its_dependencies_landed(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "approved_verified")  # T001 approved; T004 depends on it
    op(anvil_env, "configure_project", evidence_gate="advisory", require_verified="off", actor="lead")
    claim = op(anvil_env, "claim_task", task_id="T004", actor="agent-2")
    op(anvil_env, "submit_completion_evidence", task_id="T004", actor="agent-2", generation=claim["generation"],
       commands_run=["python -m pytest -q tests/test_api_redirect.py"], commit_sha="d4" + "0" * 38)
    op(anvil_env, "apply_review_decision", task_id="T004", actor="lead", approve=True)
    op(anvil_env, "configure_project", land_target="main", land_remote="origin", actor="lead")
    assert [u["unit"] for u in op(anvil_env, "get_landing_queue")["units"]] == ["T001", "T004"]
    error = refused(anvil_env, "land_task", task_ids=["T004"], actor="runner-1", outcome="started",
                    approved_commits=["d4" + "0" * 38], target="main", remote="origin")
    assert (error.code, error.details["waiting_on"]) == ("landing_dependency_waiting", ["T001"])
    landed(anvil_env)
    assert land(anvil_env, "started", task_ids=["T004"], approved_commits=["d4" + "0" * 38])["outcome"] == "started"
