"""Project handlers: init, status, summary and configuration."""

from __future__ import annotations

from pathlib import Path

from anvil.engine.storage.integrity import verify
from tests.ops.support import finish, op, refused, scenario, store_of, submit


def test_the_summary_counts_a_full_loop(anvil_env) -> None:
    scenario(anvil_env, "ready")
    finish(anvil_env, "T001")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2")
    submit(anvil_env, "T002", "agent-2")
    op(anvil_env, "apply_review_decision", task_id="T002", approve=False, actor="lead", reason="missing")
    op(anvil_env, "claim_task", task_id="T004", actor="agent-1")
    op(anvil_env, "update_task_status", task_id="T004", to_status="blocked", actor="agent-1")
    summary = op(anvil_env, "get_project_summary")
    counts = {k: v for k, v in summary["task_counts"].items() if v}
    assert counts == {"done": 1, "drafted": 1, "blocked": 1, "ready": 6}
    assert (summary["active_claim_count"], summary["blocked_task_count"], summary["ready_task_count"]) == (1, 1, 0)
    with store_of(anvil_env) as store:
        assert verify(store)["ok"], "replaying the log reproduces the projection"


def test_init_refuses_a_project_root_that_does_not_exist(anvil_env) -> None:
    env = {**anvil_env, "ANVIL_ROOT": str(Path(anvil_env["ANVIL_ROOT"]) / "typo")}
    error = refused(env, "init_project")
    assert (error.code, error.exit_code) == ("root_missing", 2)
