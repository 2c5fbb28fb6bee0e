"""Several PRDs in one project, and manual dependency edits that outlive re-planning."""

from __future__ import annotations

from pathlib import Path

from anvil.engine.storage.integrity import verify
from tests.ops.support import op, refused, store_of


def prd(name: str, first: int, feature: str = "F001", shared: str = "shared.py") -> str:
    tasks = "".join(
        f"### T{n:03d}: Task {n}\n\n**Feature:** {feature}\n**Priority:** high\n**Likely files:** {shared}\n"
        f"**Dependencies:** none\n**Acceptance criteria:**\n- works\n**Verification:**\n- `true`\n\n"
        for n in (first, first + 1))
    return (f"# Project: {name}\n\n## Summary\n\nFor a developer.\n\n## Requirements\n\n- R001: it works\n\n"
            f"## Features\n\n### {feature}: Thing\n\nDoes it.\n\n**Requirements:** R001\n\n## Tasks\n\n{tasks}")


def ready(env: dict[str, str], prd_id: str, text: str) -> None:
    root = Path(env["ANVIL_ROOT"])
    (root / f"{prd_id}.md").write_text(text, encoding="utf-8")
    op(env, "parse_prd", file=f"{prd_id}.md", prd_id=prd_id)
    op(env, "review_prd", actor="lead", prd_id=prd_id)
    op(env, "review_prd", actor="lead", prd_id=prd_id, approve=True)
    op(env, "plan_tasks", prd_id=prd_id)
    op(env, "score_tasks", prd_id=prd_id)
    op(env, "review_tasks", prd_id=prd_id)


def test_two_prds_with_the_same_feature_ids_plan_and_claim_independently(anvil_env) -> None:
    op(anvil_env, "init_project")
    ready(anvil_env, "alpha", prd("Alpha", 1, shared="a.py"))
    ready(anvil_env, "beta", prd("Beta", 101, shared="b.py"))
    op(anvil_env, "claim_task", task_id="T001", actor="agent-a")
    claimed = op(anvil_env, "claim_task", task_id="T101", actor="agent-b")
    assert claimed["generation"] == 1, "conflict groups of one PRD never block another's"
    assert op(anvil_env, "get_next_task", prd_id="beta")["task"] is None, "T102 shares b.py with T101"
    with store_of(anvil_env) as store:
        assert verify(store)["ok"]


def test_task_ids_owned_by_another_prd_are_refused(anvil_env) -> None:
    op(anvil_env, "init_project")
    ready(anvil_env, "alpha", prd("Alpha", 1))
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "beta.md").write_text(prd("Beta", 1), encoding="utf-8")
    op(anvil_env, "parse_prd", file="beta.md", prd_id="beta")
    assert refused(anvil_env, "plan_tasks", prd_id="beta").code == "task_id_collision"


def test_a_manual_dependency_survives_replanning(anvil_env) -> None:
    op(anvil_env, "init_project")
    ready(anvil_env, "alpha", prd("Alpha", 1, shared="a.py"))
    ready(anvil_env, "beta", prd("Beta", 101, shared="b.py"))
    op(anvil_env, "edit_dependencies", actor="lead", add=[["T101", "T001"]], prd_id="beta")
    replanned = op(anvil_env, "plan_tasks", prd_id="beta")
    assert (replanned["changed"], replanned["added"], replanned["removed"]) == ([], [], [])
    assert op(anvil_env, "get_task", task_id="T101")["dependencies"] == ["T001"]
    assert op(anvil_env, "get_task", task_id="T101")["status"] == "ready"


def test_a_manual_removal_of_a_prd_edge_survives_replanning(anvil_env) -> None:
    op(anvil_env, "init_project")
    text = prd("Alpha", 1, shared="a.py").replace("### T002: Task 2\n\n**Feature:** F001\n**Priority:** high\n"
                                                  "**Likely files:** a.py\n**Dependencies:** none",
                                                  "### T002: Task 2\n\n**Feature:** F001\n**Priority:** high\n"
                                                  "**Likely files:** a.py\n**Dependencies:** T001")
    ready(anvil_env, "alpha", text)
    op(anvil_env, "edit_dependencies", actor="lead", remove=[["T002", "T001"]], prd_id="alpha")
    op(anvil_env, "plan_tasks", prd_id="alpha")
    assert op(anvil_env, "get_task", task_id="T002")["dependencies"] == []


def test_a_dangling_dependency_can_be_removed(anvil_env) -> None:
    op(anvil_env, "init_project")
    ready(anvil_env, "alpha", prd("Alpha", 1, shared="a.py"))
    ready(anvil_env, "beta", prd("Beta", 101, shared="b.py"))
    op(anvil_env, "edit_dependencies", actor="lead", add=[["T101", "T002"]], prd_id="beta")
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "alpha.md").write_text(prd("Alpha", 1, shared="a.py").split("### T002")[0], encoding="utf-8")
    op(anvil_env, "parse_prd", file="alpha.md", prd_id="alpha")
    op(anvil_env, "plan_tasks", prd_id="alpha")
    assert op(anvil_env, "get_project_status", prd_id="beta")["ready_queue_depth"] == 1, \
        "only T102: a dependency on a pruned task blocks T101, and status agrees with claim"
    assert refused(anvil_env, "claim_task", task_id="T101", actor="agent-b").code == "dependencies_pending"
    removed = op(anvil_env, "edit_dependencies", actor="lead", remove=[["T101", "T002"]], prd_id="beta")
    assert removed["removed"] == [["T101", "T002"]]
    with store_of(anvil_env) as store:
        assert verify(store)["ok"]


def test_item_8_status_honours_anvil_prd_and_scoring_refuses_an_unknown_prd(anvil_env, monkeypatch) -> None:
    """Issue 24 item 8: get_project_status counts the PRD ANVIL_PRD names (an explicit prd_id wins);
    score_tasks and review_tasks refuse a PRD that was never parsed instead of doing nothing."""
    op(anvil_env, "init_project", name="Two")
    ready(anvil_env, "alpha", prd("Alpha", 1))
    ready(anvil_env, "beta", prd("Beta", 3, shared="other.py"))
    op(anvil_env, "claim_task", task_id="T003", actor="agent-1")
    everything = op(anvil_env, "get_project_status")
    assert everything["total_tasks"] == 4
    monkeypatch.setitem(anvil_env, "ANVIL_PRD", "alpha")
    alpha = op(anvil_env, "get_project_status")
    assert (alpha["total_tasks"], alpha["task_counts"]["claimed"]) == (2, 0)
    assert op(anvil_env, "get_project_status", prd_id="beta")["task_counts"]["claimed"] == 1
    for name in ("score_tasks", "review_tasks"):
        assert refused(anvil_env, name, prd_id="gamma", actor="lead").code == "prd_not_found"
    monkeypatch.setitem(anvil_env, "ANVIL_PRD", "gamma")
    assert refused(anvil_env, "score_tasks", actor="lead").code == "prd_not_found"
