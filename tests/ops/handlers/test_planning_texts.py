"""The operations about writing a PRD: check it, start from the template, read the format.

Every call goes through the real operation pipeline (``anvil.ops.runtime.invoke``) or the CLI.
"""

from __future__ import annotations

from pathlib import Path

from anvil.engine.prd.parser import parse_prd
from anvil.ops.scenarios import SAMPLE_AT
from tests.ops.support import event_types, op, refused, scenario

SPEC_KIT_TASKS = """# Tasks: Photo albums

**Input**: Design documents from `/specs/001-photo-albums/`

## Phase 1: Setup

- [ ] T001 Create project structure per implementation plan
- [ ] T002 [P] Initialize the project with its dependencies
"""
TASK_MASTER_PRD = """<context>
# Overview
A photo album app.

# Core Features
Albums, sharing.
</context>
<PRD>
# Technical Architecture
A web app.

# Development Roadmap
Albums first.
</PRD>
"""


def test_check_reads_a_prd_and_records_nothing(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    before = event_types(anvil_env)
    result = op(anvil_env, "check_prd", file=SAMPLE_AT)
    assert result["ok"] is True and result["task_count"] == 9 and result["error_count"] == 0
    assert result["project_name"] == "Shortlink" and result["foreign_format"] is None
    assert event_types(anvil_env) == before


def test_check_needs_no_project(anvil_env) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "prd.md").write_text("# Project: Loose\n\n## Tasks\n\n### T001: A\n\n**Priority:** urgent\n")
    result = op(anvil_env, "check_prd", file="prd.md")
    assert result["ok"] is False and [e["code"] for e in result["errors"]] == ["invalid_priority"]
    assert result["errors"][0]["line"] == 7
    assert not (root / ".anvil").exists()


def test_check_shows_at_most_twenty_diagnostics_errors_first(anvil_env) -> None:
    tasks = "".join(f"### T{n:03d}: T\n**Priority:** nope\n\n" for n in range(1, 16))
    result = op(anvil_env, "check_prd", source="# Project: X\n\n## Summary\n\nUsers.\n\n## Tasks\n\n" + tasks)
    assert (result["errors_shown"], result["warnings_shown"]) == (15, 5)
    assert result["error_count"] == 15 and result["warnings_omitted"] > 0 and result["warnings_truncated"]


def test_parse_shows_at_most_twenty_diagnostics_in_all(anvil_env) -> None:
    root = scenario(anvil_env, "initialized")
    tasks = "".join(f"### T{n:03d}: T\n**Priority:** nope\n\n" for n in range(1, 16))
    (root / "many.md").write_text("# Project: X\n\n## Summary\n\nUsers.\n\n## Tasks\n\n" + tasks)
    result = op(anvil_env, "parse_prd", file="many.md")
    assert len(result["errors"]) + len(result["warnings"]) == 20 and len(result["errors"]) == 15


def test_a_foreign_format_gets_one_message_naming_it_and_the_format(anvil_env) -> None:
    for text, what in ((SPEC_KIT_TASKS, "spec-kit tasks.md"), (TASK_MASTER_PRD, "Task Master PRD")):
        result = op(anvil_env, "check_prd", source=text)
        assert result["error_count"] == 1 and result["warning_count"] == 0
        assert what in result["foreign_format"] and "anvil prd template" in result["foreign_format"]
        assert "anvil docs prd-format" in result["foreign_format"]
        assert result["errors"][0]["code"] == "foreign_format"


def test_a_task_master_task_file_and_tasks_json_are_recognised() -> None:
    task_file = "# Task ID: 1\n# Title: Setup\n# Status: pending\n# Dependencies: None\n# Priority: high\n"
    tasks_json = '{\n  "master": {\n    "tasks": [{"id": 1, "title": "Setup"}]\n  }\n}\n'
    for text, what in ((task_file, "Task Master task file"), (tasks_json, "Task Master tasks.json")):
        [diagnostic] = parse_prd(text).diagnostics
        assert diagnostic.code == "foreign_format" and what in diagnostic.message


def test_an_anvil_prd_holding_a_checklist_is_not_foreign() -> None:
    sample = (Path(__file__).resolve().parents[3] / "anvil" / "engine" / "prd" / "sample.md").read_text()
    result = parse_prd(sample.replace("## Goals\n", "## Goals\n\n- [ ] T001 a checklist item\n", 1))
    assert all(d.code != "foreign_format" for d in result.diagnostics)


def test_check_without_a_file_says_how_to_name_one(anvil_env) -> None:
    assert refused(anvil_env, "check_prd").code == "prd_file_required"


def test_the_template_parses_cleanly_and_is_written_only_where_nothing_is(anvil_env) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    printed = op(anvil_env, "prd_template")
    assert printed["written"] is None and printed["format_doc"] == "anvil docs prd-format"
    result = parse_prd(printed["template"])
    assert result.ok and result.diagnostics == [] and len(result.document.tasks) == 2  # type: ignore[union-attr]
    written = op(anvil_env, "prd_template", write="docs/prd.md")
    assert written["written"] == "docs/prd.md" and (root / "docs/prd.md").read_text() == printed["template"]
    (root / "docs/prd.md").write_text("mine")
    assert refused(anvil_env, "prd_template", write="docs/prd.md").code == "confirmation_required"
    assert (root / "docs/prd.md").read_text() == "mine"
    op(anvil_env, "prd_template", write="docs/prd.md", overwrite=True)
    assert (root / "docs/prd.md").read_text() == printed["template"]
    assert refused(anvil_env, "prd_template", write="docs").code == "file_not_writable"


def test_the_template_from_the_cli_refuses_to_overwrite_without_yes(cli) -> None:
    cli("prd", "template", "--write", "prd.md")
    refused_call = cli("prd", "template", "--write", "prd.md")
    assert refused_call.code != 0 and "--yes" in refused_call.stderr
    assert cli("prd", "template", "--write", "prd.md", "--yes").code == 0


def test_the_format_doc_ships_and_matches_the_repository_page(anvil_env) -> None:
    shown = op(anvil_env, "get_docs", topic="prd-format")
    page = (Path(__file__).resolve().parents[3] / "docs" / "prd-format.md").read_text(encoding="utf-8")
    assert shown["text"] == page and shown["topics"] == ["prd-format"]
    assert shown["title"] == "The anvil PRD format"


def test_plan_reports_how_many_tasks_can_start_at_once(anvil_env) -> None:
    scenario(anvil_env, "approved")
    planned = op(anvil_env, "plan_tasks", use_llm=False)
    assert planned["startable_width"] >= 2 and planned["drain_rounds"] >= 2
    assert planned["startable_width"] * planned["drain_rounds"] >= planned["task_count"]


def test_a_prd_with_a_project_heading_and_no_tasks_is_never_foreign() -> None:
    result = parse_prd("# Project: Draft\n\n## Goals\n\n- [ ] T001 Create the project structure\n")
    assert "foreign_format" not in {d.code for d in result.diagnostics} and result.ok
