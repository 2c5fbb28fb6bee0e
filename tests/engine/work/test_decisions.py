"""task-status on a claimed task is fenced like renew, progress, submit and release."""

from __future__ import annotations

from tests.ops.support import op, refused, scenario


def test_blocking_a_claimed_task_with_an_old_generation_is_refused_as_stale(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    error = refused(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="agent-1",
                    generation=2)
    assert (error.code, error.exit_code) == ("stale_generation", 5)
    error = refused(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="agent-1",
                    claim_id="C000001")
    assert error.code == "stale_generation"


def test_the_holder_blocks_and_unblocks_with_its_live_generation(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    claim_id = op(anvil_env, "get_task", task_id="T001")["claim"]["id"]
    assert op(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="agent-1",
              generation=1)["to_status"] == "blocked"
    assert op(anvil_env, "update_task_status", task_id="T001", to_status="in_progress", actor="agent-1",
              claim_id=claim_id)["to_status"] == "in_progress"


def test_required_fencing_refuses_a_status_change_without_the_generation(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    op(anvil_env, "configure_project", require_fencing=True)
    error = refused(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="agent-1")
    assert (error.code, error.exit_code) == ("fencing_required", 2)
    assert op(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="agent-1",
              generation=1)["to_status"] == "blocked"


def test_another_actor_cannot_change_a_claimed_task(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    assert refused(anvil_env, "update_task_status", task_id="T001", to_status="blocked", actor="lead",
                   generation=1).code == "not_owner"


def test_unclaimed_tasks_need_no_fence_but_a_fence_on_them_is_stale(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    op(anvil_env, "configure_project", require_fencing=True)
    assert op(anvil_env, "update_task_status", task_id="T002", to_status="drafted", actor="lead")["to_status"] == \
        "drafted"
    assert refused(anvil_env, "update_task_status", task_id="T002", to_status="ready", actor="lead",
                   generation=1).code == "stale_generation"
