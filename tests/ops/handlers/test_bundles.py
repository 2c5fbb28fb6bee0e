"""Bundle handlers: planning a bundle under its bounded policy, the coordinator claim (lease, fencing,
recovery), member authorizations and serial stages, completion readiness, supersession.

Calls go through the real operation pipeline (``invoke``). Leases expire by calling with a clock
moved forward (``at``), never by sleeping.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from anvil.engine.errors import AnvilError
from anvil.engine.storage.store import system_clock
from anvil.ops.invoke import invoke
from tests.ops.support import assert_replays, event_types, op, refused, scenario, status, submit

MEMBERS = ["T001", "T002", "T003"]


def at(env: dict[str, str], seconds: float, name: str, /, **args: object) -> dict[str, Any]:
    """Run ``name`` as if ``seconds`` had passed."""

    def later() -> datetime:
        return system_clock() + timedelta(seconds=seconds)

    return invoke(name, args, env=env, cwd=env["ANVIL_ROOT"], clock=later)


def refused_at(env: dict[str, str], seconds: float, name: str, /, **args: object) -> AnvilError:
    with pytest.raises(AnvilError) as info:
        at(env, seconds, name, **args)
    return info.value


def create(env: dict[str, str], bundle_id: str = "B1", tasks: list[str] | None = None, **policy: object) -> dict:
    return op(env, "create_bundle", bundle_id=bundle_id, task_ids=tasks or MEMBERS, coordinator="agent-1",
              actor="lead", **policy)["bundle"]


def build(env: dict[str, str], actor: str = "agent-1", tasks: list[str] | None = None) -> None:
    for task_id in tasks or MEMBERS:
        op(env, "claim_task", task_id=task_id, actor=actor)
        submit(env, task_id, actor)


# -- create_bundle -----------------------------------------------------------------------------


def test_a_planned_bundle_orders_members_into_serial_stages_under_the_default_policy(anvil_env) -> None:
    scenario(anvil_env, "ready")
    bundle = create(anvil_env)
    assert bundle["status"] == "planned" and bundle["coordinator"] == "agent-1" and bundle["claim"] is None
    assert [(m["task_id"], m["stage"]) for m in bundle["members"]] == [("T001", 1), ("T002", 1), ("T003", 2)]
    assert bundle["policy"] == {"max_tasks": 12, "max_serial_stages": 6, "max_reviews": 3, "max_rereviews": 1,
                                "required_angles": ["correctness", "integration"]}


@pytest.mark.parametrize(("tasks", "policy", "code"), [
    (["T003", "T001", "T002"], {}, "bundle_member_invalid"),  # T003 before what it depends on
    (["T001", "T001"], {}, "bundle_member_invalid"),
    (["T001", "T002", "T003"], {"max_tasks": 2}, "bundle_policy_exceeded"),
    (["T001", "T004", "T005"], {"max_serial_stages": 2}, "bundle_policy_exceeded"),  # T001 -> T004 -> T005
    (["T001"], {"required_angles": ["a", "b", "c"], "max_reviews": 2}, "bundle_policy_invalid"),
    (["T001"], {"required_angles": ["Not A Label"]}, "bundle_policy_invalid"),
    (["T999"], {}, "task_not_found"),
])
def test_create_refuses_what_breaks_the_bounded_policy(anvil_env, tasks, policy, code) -> None:
    scenario(anvil_env, "ready")
    error = refused(anvil_env, "create_bundle", bundle_id="B1", task_ids=tasks, coordinator="agent-1", actor="lead",
                    **policy)
    assert error.code == code, error.message
    assert op(anvil_env, "list_bundles")["count"] == 0


def test_policy_bounds_cannot_be_loosened_past_the_caps(anvil_env) -> None:
    scenario(anvil_env, "ready")
    for field, value in (("max_tasks", 13), ("max_serial_stages", 7), ("max_reviews", 4), ("max_rereviews", 2),
                         ("max_reviews", 1)):
        assert refused(anvil_env, "create_bundle", bundle_id="B1", task_ids=["T001"], coordinator="agent-1",
                       actor="lead", **{field: value}).code == "invalid_input"


def test_a_task_belongs_to_one_live_bundle_and_bundle_ids_are_unique(anvil_env) -> None:
    scenario(anvil_env, "ready")
    create(anvil_env)
    assert refused(anvil_env, "create_bundle", bundle_id="B2", task_ids=["T002"], coordinator="agent-2",
                   actor="lead").code == "bundle_member_taken"
    assert refused(anvil_env, "create_bundle", bundle_id="B1", task_ids=["T004"], coordinator="agent-2",
                   actor="lead").code == "bundle_exists"
    assert refused(anvil_env, "create_bundle", bundle_id="-B3", task_ids=["T004"], coordinator="agent-2",
                   actor="lead").code == "invalid_bundle_id"


# -- members are reserved and authorized by the coordinator claim ------------------------------


def test_members_of_a_live_bundle_are_offered_to_nobody(anvil_env) -> None:
    scenario(anvil_env, "ready")
    assert op(anvil_env, "get_next_task", actor="agent-9")["task"]["id"] == "T001"
    create(anvil_env, tasks=["T001", "T002"])
    offered = op(anvil_env, "get_next_task", actor="agent-9")["task"]
    assert offered is None or offered["id"] not in ("T001", "T002")
    claimed = op(anvil_env, "claim_next_task", actor="agent-9")["claim"]
    assert claimed is None or claimed["task_id"] not in ("T001", "T002")


def test_a_member_can_be_claimed_only_while_a_coordinator_claim_authorizes_it(anvil_env) -> None:
    scenario(anvil_env, "ready")
    create(anvil_env)
    assert refused(anvil_env, "claim_task", task_id="T001", actor="agent-1").code == "bundle_member_unauthorized"
    claim = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1")
    assert all(m["authorized"] for m in claim["bundle"]["members"])
    worker = op(anvil_env, "claim_task", task_id="T002", actor="worker-7")  # delegated by the coordinator
    assert worker["claimed_by"] == "worker-7"
    op(anvil_env, "release_task", task_id="B1", target_kind="bundle", actor="agent-1")
    assert refused(anvil_env, "claim_task", task_id="T001", actor="agent-1").code == "bundle_member_unauthorized"
    assert status(anvil_env, "T002") == "claimed"  # a worker's own claim outlives the authorization


def test_item_13_a_member_waiting_on_other_members_names_them_as_members(anvil_env) -> None:
    """Issue 24 item 13: a dependency inside the bundle is not counted as outside it."""
    scenario(anvil_env, "ready")
    create(anvil_env)
    op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1")
    waiting = refused(anvil_env, "claim_task", task_id="T003", actor="agent-1")
    assert waiting.code == "dependencies_pending"
    assert "waits on T001 (ready, a member of B1), T002 (ready, a member of B1):" in waiting.message
    assert "outside its bundle" not in waiting.message


def test_a_member_may_start_once_the_members_it_depends_on_await_review(anvil_env) -> None:
    scenario(anvil_env, "ready")
    create(anvil_env)
    op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1")
    assert refused(anvil_env, "claim_task", task_id="T003", actor="agent-1").code == "dependencies_pending"
    build(anvil_env, tasks=["T001", "T002"])
    assert op(anvil_env, "claim_task", task_id="T003", actor="agent-1")["task_id"] == "T003"


def test_a_member_is_reviewed_only_through_its_bundle(anvil_env) -> None:
    scenario(anvil_env, "bundle_built")
    assert refused(anvil_env, "apply_review_decision", task_id="T001", approve=True,
                   actor="lead").code == "reviewed_by_bundle"


# -- claim_bundle, renew and release of the coordinator claim ----------------------------------


def test_claiming_returns_the_coordinator_claim_and_fenced_continuations(anvil_env) -> None:
    scenario(anvil_env, "bundled")
    result = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1", lease_minutes=30, shared_tree=True)
    assert result["coordinator"] == "agent-1" and result["warnings"] == []
    assert result["claim"]["generation"] == 1 and result["bundle"]["status"] == "active"
    renew = result["continuations"]["renew"]
    assert renew["tool"] == "renew_claim" and renew["arguments"] == {
        "task_id": "B1", "target_kind": "bundle", "actor": "agent-1", "generation": 1}
    assert renew["argv"] == ["anvil", "renew", "B1", "--actor", "agent-1", "--target-kind", "bundle",
                             "--generation", "1"]
    assert result["continuations"]["complete"]["arguments"]["complete"] is True
    tools = {step["tool"] for step in result["continuations"].values()}
    assert "submit_completion_evidence" not in tools  # never a task submit in place of the bundle's
    assert refused(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1").code == "already_claimed"


def test_an_unshared_claim_warns_that_members_share_the_working_tree(anvil_env) -> None:
    scenario(anvil_env, "bundled")
    (warning,) = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1")["warnings"]
    assert "git integration is off" in warning and "--git-mode" in warning


@pytest.mark.parametrize(("git_mode", "shared_tree", "says"), [
    ("worktree", False, None), ("worktree", True, "each still takes a worktree of its own"),
    ("branch", False, "claim branch"), ("branch", True, None), ("off", True, None)])
def test_item_4_a_bundle_claim_says_where_members_are_worked_by_the_projects_git_mode(
        anvil_env, git_mode: str, shared_tree: bool, says: str | None) -> None:
    """Issue 24 item 4: under worktree isolation each member claim takes its own worktree, so the
    bundle's claim neither claims git is off nor that members share a tree."""
    scenario(anvil_env, "bundled")
    op(anvil_env, "configure_project", git_mode=git_mode, actor="lead")
    warnings = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1", shared_tree=shared_tree)["warnings"]
    assert not any("git integration is off" in w for w in warnings)
    assert warnings == [] if says is None else (len(warnings) == 1 and says in warnings[0])


def test_item_4_members_of_a_bundle_in_a_worktree_project_get_worktrees_of_their_own(tmp_path, anvil_env) -> None:
    """Issue 24 item 4: the bundle claim in a worktree-isolated project does not put its members in the
    shared tree: the member claim (through the CLI, which does the git step) takes a worktree."""
    from tests.gitrepo import make_repo, plan_in_repo, worktrees
    from tests.loopback.support import run_cli

    root = make_repo(tmp_path / "repo")
    env = {**anvil_env, "ANVIL_ROOT": str(root)}
    plan_in_repo(env)
    op(env, "configure_project", git_mode="worktree", actor="lead")
    create(env, tasks=["T001"])
    assert op(env, "claim_bundle", bundle_id="B1", actor="agent-1")["warnings"] == []
    result = run_cli(["claim", "T001", "--actor", "agent-1", "--json"], env, str(root))
    assert result.code == 0, result.stdout + result.stderr
    claimed = json.loads(result.stdout)
    assert claimed["worktree_path"] and claimed["worktree_path"] in worktrees(root)
    assert claimed["worktree_path"] != str(root)


def test_renewing_a_bundle_adds_to_the_later_of_expiry_and_now(anvil_env) -> None:
    scenario(anvil_env, "bundled")
    claim = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1", lease_minutes=60)["claim"]
    renewed = op(anvil_env, "renew_claim", task_id="B1", target_kind="bundle", actor="agent-1", generation=1,
                 extend_seconds=600)
    expiry = datetime.fromisoformat(claim["lease_expires_at"])
    assert datetime.fromisoformat(renewed["lease_expires_at"]) == expiry + timedelta(seconds=600)


def test_task_and_bundle_claims_never_answer_for_each_other(anvil_env) -> None:
    scenario(anvil_env, "bundle_claimed")
    assert refused(anvil_env, "renew_claim", task_id="B1", actor="agent-1").code == "task_not_found"
    assert refused(anvil_env, "renew_claim", task_id="T001", target_kind="bundle",
                   actor="agent-1").code == "bundle_not_found"


def test_only_the_coordinator_claims_a_fresh_bundle(anvil_env) -> None:
    scenario(anvil_env, "bundled")
    assert refused(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-2").code == "not_coordinator"
    assert op(anvil_env, "claim_bundle", bundle_id="B1", actor="AGENT-1")["claim"]["generation"] == 1


def test_a_stalled_coordinator_is_reaped_fenced_out_and_replaced(anvil_env) -> None:
    scenario(anvil_env, "bundled")
    first = op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-1", lease_minutes=5)["claim"]
    # Ten minutes later the lease has run out: the next write reaps it, and another agent recovers the bundle.
    second = at(anvil_env, 600, "claim_bundle", bundle_id="B1", actor="agent-2")
    assert second["claim"]["generation"] == 2 and second["coordinator"] == "agent-2"
    assert "bundle.claim_expired" in event_types(anvil_env)
    for name, args in (("renew_claim", {"task_id": "B1", "target_kind": "bundle"}),
                       ("release_task", {"task_id": "B1", "target_kind": "bundle"}),
                       ("submit_bundle_progress", {"bundle_id": "B1", "phase": "late"})):
        error = refused_at(anvil_env, 600, name, actor="agent-1", generation=first["generation"], **args)
        assert error.code == "stale_generation", (name, error.message)
    assert refused_at(anvil_env, 600, "submit_bundle_progress", bundle_id="B1", actor="agent-1",
                      phase="late").code == "not_owner"
    assert_replays(anvil_env)


def test_releasing_another_coordinators_claim_is_an_explicit_takeover(anvil_env) -> None:
    scenario(anvil_env, "bundle_claimed")
    error = refused(anvil_env, "release_task", task_id="B1", target_kind="bundle", actor="lead")
    assert error.code == "confirmation_required" and error.details["owner"] == "agent-1"
    released = op(anvil_env, "release_task", task_id="B1", target_kind="bundle", actor="lead", confirm=True)
    assert released["released"] and op(anvil_env, "get_bundle", bundle_id="B1")["bundle"]["status"] == "planned"


# -- progress and completion readiness ---------------------------------------------------------


def test_completion_lists_each_unready_member_and_writes_nothing(anvil_env) -> None:
    scenario(anvil_env, "bundle_claimed")
    build(anvil_env, tasks=["T001"])
    op(anvil_env, "claim_task", task_id="T002", actor="agent-1")
    before = event_types(anvil_env)
    error = refused(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done",
                    complete=True)
    assert error.code == "bundle_not_ready"
    blockers = {m["task_id"]: m["blockers"] for m in error.details["members"]}
    assert set(blockers) == {"T002", "T003"} and "claimed by agent-1" in blockers["T002"][0]
    assert event_types(anvil_env) == before


def test_completion_opens_review_round_one_and_a_retry_records_nothing(anvil_env) -> None:
    scenario(anvil_env, "bundle_built")
    done = op(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done", complete=True,
              generation=1)
    assert done["recorded"] and done["ready"] and done["bundle"]["status"] == "in_review"
    assert done["bundle"]["review_round"] == 1
    count = len(event_types(anvil_env))
    again = op(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="done", complete=True)
    assert not again["recorded"] and again["bundle"]["status"] == "in_review"
    assert len(event_types(anvil_env)) == count


def test_progress_names_only_members(anvil_env) -> None:
    scenario(anvil_env, "bundle_claimed")
    noted = op(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="build",
               member_task_ids=["t001"], detail="schema")
    assert noted["recorded"] and not noted["ready"] and len(noted["blockers"]) == 3
    assert refused(anvil_env, "submit_bundle_progress", bundle_id="B1", actor="agent-1", phase="build",
                   member_task_ids=["T009"]).code == "bundle_member_invalid"


# -- supersession ------------------------------------------------------------------------------


def test_a_replanned_bundle_is_superseded_keeping_its_history(anvil_env) -> None:
    scenario(anvil_env, "bundle_replaced")
    assert op(anvil_env, "get_bundle", bundle_id="B1")["bundle"]["status"] == "replan_required"
    result = op(anvil_env, "supersede_bundle", bundle_id="B1", replacement_bundle_id="B2", actor="lead")
    old = result["bundle"]
    assert old["status"] == "superseded" and old["superseded_by"] == "B2" and result["reopened"] == MEMBERS
    assert [r["decision"] for r in old["reviews"]] == ["reject"]  # the audit history stays
    assert op(anvil_env, "get_bundle", bundle_id="B2")["bundle"]["supersedes"] == "B1"
    assert [status(anvil_env, t) for t in MEMBERS] == ["ready"] * 3
    assert len(op(anvil_env, "get_task", task_id="T001")["history"]["evidence"]) == 1  # old evidence kept
    op(anvil_env, "claim_bundle", bundle_id="B2", actor="agent-2")
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-2")["task_id"] == "T001"
    for name, args in (("checkpoint_bundle", {"commit_sha": "abc1234"}), ("claim_bundle", {})):
        assert refused(anvil_env, name, bundle_id="B1", actor="agent-1", **args).code == "bundle_wrong_status"
    assert_replays(anvil_env)
