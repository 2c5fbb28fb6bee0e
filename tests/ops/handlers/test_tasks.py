"""Task read handlers: listing with pagination, one task, the dependency graph, conflicts, work packets."""

from __future__ import annotations

import pytest

from tests.ops.support import op, refused, scenario


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
    waiting = op(anvil_env, "list_tasks", status="waiting")["tasks"]
    assert [(t["id"], t["claimed_by"]) for t in held] == [("T001", "agent-1")]
    # ready is startable (issue 24 item 10): the tasks waiting on a dependency are listed apart
    assert [t["id"] for t in ready] == ["T002"]
    assert [t["id"] for t in waiting] == [f"T00{i}" for i in range(3, 10)]
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
                 "`python -m unittest -q tests/test_store.py`", "claimed by agent-1", "generation 1",
                 "## Evidence contract", "## Next commands",
                 "anvil proof run T001 --generation 1 --actor agent-1 -- python -m unittest -q tests/test_store.py"):
        assert part in markdown
    assert [d["id"] for d in data["open_dependencies"]] == ["T001", "T002"]
    assert data["claim"] is None and data["acceptance_criteria"] and data["verification"]
    assert refused(anvil_env, "generate_work_packet", task_id="T404").code == "task_not_found"


def test_reviewers_and_the_next_agent_see_evidence_and_rejection_reasons(anvil_env) -> None:
    scenario(anvil_env, "submitted")
    task = op(anvil_env, "get_task", task_id="T001")
    assert task["history"]["evidence"][0]["commands_run"] == ["python -m unittest -q tests/test_store.py"]
    op(anvil_env, "apply_review_decision", task_id="T001", approve=False, actor="lead", reason="no migration test")
    rejected = op(anvil_env, "get_task", task_id="T001")["history"]["reviews"][0]
    assert (rejected["decision"], rejected["reason"]) == ("rejected", "no migration test")
    packet = op(anvil_env, "generate_work_packet", task_id="T001")["content"]
    assert "no migration test" in packet


def test_a_ready_task_waiting_on_dependencies_says_which_in_list_show_and_summary(anvil_env) -> None:
    scenario(anvil_env, "ready")
    rows = {t["id"]: t for t in op(anvil_env, "list_tasks")["tasks"]}
    assert rows["T001"]["blocked_by"] == [] and rows["T003"]["blocked_by"] == ["T001", "T002"]
    assert rows["T003"]["status"] == "ready"  # the stored status is unchanged; "waiting" is derived
    waiting = [t["id"] for t in op(anvil_env, "list_tasks", status="waiting")["tasks"]]
    assert waiting == ["T003", "T004", "T005", "T006", "T007", "T008", "T009"]
    assert op(anvil_env, "get_task", task_id="T007")["blocked_by"] == ["T005", "T006"]
    summary = op(anvil_env, "get_project_summary")
    assert (summary["ready_task_count"], summary["waiting_task_count"]) == (2, 7)
    assert op(anvil_env, "get_project_status")["waiting_task_count"] == 7
    nodes = {n["id"]: n for n in op(anvil_env, "get_dependency_graph")["nodes"]}
    assert nodes["T004"]["blocked_by"] == ["T001"]


def test_reads_show_a_lease_that_ran_out_as_expired_before_any_write(anvil_env, monkeypatch) -> None:
    from tests.ops.support import event_types, expire_leases

    scenario(anvil_env, "claimed")
    assert op(anvil_env, "get_task", task_id="T001")["claim"]["expired"] is False
    count = len(event_types(anvil_env))
    expire_leases(monkeypatch)
    shown = op(anvil_env, "get_task", task_id="T001")
    assert shown["claim"]["expired"] is True and shown["status"] == "claimed"
    row = op(anvil_env, "list_tasks", status="claimed")["tasks"][0]
    assert (row["claimed_by"], row["claim_expired"]) == ("agent-1", True)
    assert len(event_types(anvil_env)) == count, "reads show it; they write nothing"


def test_human_show_and_list_say_waiting_and_expired(cli, anvil_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from anvil.cli.render import View, render
    from anvil.cli.tables import Screen
    from tests.ops.support import expire_leases

    scenario(anvil_env, "claimed")
    assert "status      waiting (waits on T005, T006)" in cli("show", "T007").stdout
    expire_leases(monkeypatch)
    view = View(Screen(None, False, False), {}, {})
    shown = "\n".join(render("get_task", op(anvil_env, "get_task", task_id="T001"), view))
    assert "lease expired at" in shown
    assert "agent-1 (expired)" in "\n".join(render("list_tasks", op(anvil_env, "list_tasks"), view))


@pytest.mark.parametrize("form", ["mermaid", "dot"])
def test_the_graph_comes_as_a_picture_with_every_task_and_the_critical_path(anvil_env, cli, form) -> None:  # type: ignore[no-untyped-def]
    scenario(anvil_env, "claimed")
    graph = op(anvil_env, "get_dependency_graph", format=form)
    assert graph["critical_path"] == ["T001", "T004", "T006", "T007", "T009"]
    assert all(f"{node['id']}" in graph["diagram"] for node in graph["nodes"])
    printed = cli("graph", "--format", form).stdout
    assert printed == graph["diagram"]  # piped, the text alone: `anvil graph --format dot | dot -Tsvg`
    assert op(anvil_env, "get_dependency_graph")["diagram"] is None
