"""The PRD parser on what CommonMark says a text is: fences, HTML comments, headings, lists, quotes.

Each case is one way an author's PRD used to lose or invent a task silently; now each is read the
way a CommonMark renderer shows it, and whatever differs from the likely intent is a located
warning, or a located error when content would be lost.
"""

from __future__ import annotations

from anvil.engine.prd.model import ParseResult, PrdDocument
from anvil.engine.prd.parser import parse_prd

HEAD = ("# Project: X\n\n## Summary\n\nUsers count things.\n\n## Requirements\n\n- R001: Count.\n\n## Features\n\n"
        "### F001: Counting\n\n**Requirements:** R001\n\n## Tasks\n\n")


def task(n: int, verify: str = "`pytest -q`", extra: str = "") -> str:
    return (f"### T00{n}: Task {n}\n\n**Feature:** F001\n{extra}**Acceptance criteria:**\n- It works.\n"
            f"**Verification:**\n- {verify}\n\n")


def parsed(text: str) -> tuple[ParseResult, PrdDocument]:
    result = parse_prd(text)
    assert result.document is not None
    return result, result.document


def found(result: ParseResult) -> list[tuple[str, str, int]]:
    return [(d.severity, d.code, d.line) for d in result.diagnostics]


def test_an_open_fence_under_a_verification_list_is_an_error_at_the_fence_not_fifteen_commands() -> None:
    text = HEAD + task(1, "`pytest -q`\n```bash\npytest -q tests/live") + task(2) + task(3)
    result, doc = parsed(text)
    fence_line = text.split("\n").index("```bash") + 1
    assert found(result) == [("error", "unclosed_fence", fence_line)]
    message = result.errors[0].message
    assert "2 heading(s)" in message and "### T002: Task 2" in message and "close it with '```'" in message
    assert not result.ok


def test_a_fence_in_a_list_item_ends_with_the_item() -> None:
    text = HEAD + task(1, "`pytest -q`\n  ```\n  make live\n") + task(2)
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001", "T002"] and result.diagnostics == []
    assert doc.tasks[0].verification == ("pytest -q", "make live")


def test_an_open_fence_that_only_runs_to_the_end_is_a_warning() -> None:
    text = HEAD + task(1, "`pytest -q`\n```\npytest -q tests/more")
    result, doc = parsed(text)
    assert [(d.code, d.severity) for d in result.diagnostics] == [("unclosed_fence", "warning")]
    assert doc.tasks[0].verification == ("pytest -q", "pytest -q tests/more")


def test_a_task_inside_an_html_comment_is_not_planned_and_is_a_located_warning() -> None:
    disabled = "<!--\n" + task(2) + "-->\n\n"
    text = HEAD + task(1) + disabled + task(3)
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001", "T003"]
    line = text.split("\n").index("### T002: Task 2") + 1
    assert found(result) == [("warning", "commented_out_task", line)]
    assert "HTML comment" in result.warnings[0].message


def test_a_dependency_on_a_commented_out_task_says_where_the_task_went() -> None:
    text = HEAD + task(1) + "<!-- ### T002: Later -->\n\n" + task(3, extra="**Dependencies:** T002\n")
    result, _ = parsed(text)
    unknown = [d for d in result.errors if d.code == "unknown_dependency"]
    assert len(unknown) == 1 and "inside an HTML comment" in unknown[0].message


def test_an_unclosed_comment_that_hides_tasks_is_an_error_naming_them() -> None:
    text = HEAD + task(1) + "<!-- switched off for now\n" + task(2) + task(3)
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001"]
    assert [(d.code, d.severity) for d in result.errors] == [("unclosed_html", "error")]
    assert "HTML comment" in result.errors[0].message and "'-->'" in result.errors[0].message


def test_a_comment_between_fields_is_invisible_to_them() -> None:
    text = HEAD + task(1, "`pytest -q`\n<!-- - `make slow` -->\n- `ruff check .`")
    result, doc = parsed(text)
    assert doc.tasks[0].verification == ("pytest -q", "ruff check .") and result.diagnostics == []


def test_task_headings_one_level_too_deep_are_read_as_tasks_with_a_warning_each() -> None:
    text = HEAD + task(1).replace("### ", "#### ") + task(2).replace("### ", "#### ")
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001", "T002"]
    lines = [i + 1 for i, line in enumerate(text.split("\n")) if line.startswith("#### T")]
    assert found(result) == [("warning", "wrong_heading_level", n) for n in lines]
    assert "'### T001: Task 1'" in result.warnings[0].message


def test_numbered_steps_under_a_task_are_not_read_as_tasks() -> None:
    text = HEAD + task(1, extra="#### T001.1: Write the schema\n\nFirst step.\n\n")
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001"] and result.diagnostics == []
    assert "#### T001.1: Write the schema" in doc.tasks[0].description


def test_a_task_heading_outside_the_tasks_section_is_a_located_error() -> None:
    text = HEAD.replace("## Tasks", "## Notes\n\n### T009: Forgotten\n\n## Tasks") + task(1)
    result, doc = parsed(text)
    assert [t.id for t in doc.tasks] == ["T001"]
    assert ("error", "misplaced_task", text.split("\n").index("### T009: Forgotten") + 1) in found(result)
    assert "under '## Notes'" in next(d.message for d in result.errors if d.code == "misplaced_task")


def test_a_prose_line_starting_with_dependencies_stays_prose_with_a_warning_and_never_blocks() -> None:
    text = HEAD + task(1, extra="Dependencies: this needs the database work to land first.\n")
    result, doc = parsed(text)
    assert result.ok and doc.tasks[0].dependencies == ()
    assert "Dependencies: this needs" in doc.tasks[0].description
    [warning] = result.warnings
    assert warning.code == "field_like_prose" and "kept as prose" in warning.message
    assert "read as the field" not in warning.message


def test_an_unbolded_field_with_ids_is_still_read_as_the_field() -> None:
    text = HEAD + task(1) + task(2, extra="Dependencies: T001\n")
    result, doc = parsed(text)
    assert doc.tasks[1].dependencies == ("T001",)
    assert [d.code for d in result.warnings] == ["unbolded_field"]
    assert "is read as the field" in result.warnings[0].message and "reads as prose" not in result.warnings[0].message


def test_the_reference_templates_prd_wide_sections_are_kept() -> None:
    text = ("# Project: X\n\n## Summary\n\nUsers.\n\n## Acceptance Criteria\n\n- Every page loads in 1 s.\n\n"
            "## Risks\n\n- The vendor API may change.\n- Load spikes.\n\n## Assumptions\n\n- One region.\n\n"
            "## Risks and Mitigations\n\n- Cache misses: warm the cache.\n")
    result, doc = parsed(text)
    assert doc.acceptance_criteria == ("Every page loads in 1 s.",)
    assert doc.risks == ("The vendor API may change.", "Load spikes.", "Cache misses: warm the cache.")
    assert doc.assumptions == ("One region.",)
    assert "unknown_section" not in {d.code for d in result.diagnostics}


def test_text_underlined_as_a_setext_heading_is_read_as_text_with_a_warning() -> None:
    text = HEAD + task(1, extra="Closing words.\n---\n") + "- `pytest -q`\n---\n"
    result, doc = parsed(text)
    assert doc.tasks[0].feature_id == "F001" and "Closing words." in doc.tasks[0].description
    line = text.split("\n").index("**Feature:** F001") + 1
    assert found(result) == [("warning", "setext_heading", line)]  # the second '---' ends a list: a rule


def test_indented_code_and_quotes_are_never_read_as_fields() -> None:
    text = HEAD + ("### T001: A\n\nAn example:\n\n    **Priority:** low\n\n> **Dependencies:** T009\n\n"
                   "**Feature:** F001\n**Acceptance criteria:**\n- ok\n**Verification:**\n- `true`\n")
    result, doc = parsed(text)
    t = doc.tasks[0]
    assert (t.priority, t.dependencies) == ("medium", ()) and result.diagnostics == []
    assert "    **Priority:** low" in t.description and "> **Dependencies:** T009" in t.description


def test_nested_and_continued_list_items_are_entries_of_their_own_or_of_their_item() -> None:
    text = HEAD + ("### T001: A\n\n**Feature:** F001\n**Acceptance criteria:**\n- Parent criterion\n"
                   "  - child one\n  - child two\n- Second criterion\n\n  with a later paragraph.\n"
                   "**Verification:**\n- `true`\n")
    _, doc = parsed(text)
    assert doc.tasks[0].acceptance_criteria == ("Parent criterion", "child one", "child two",
                                                "Second criterion with a later paragraph.")


def test_errors_and_warnings_show_at_most_twenty_in_all() -> None:
    from anvil.engine.prd.source import bounded_errors_and_warnings

    tasks = "".join(f"### T{n:03d}: T\n**Feature:** F001\n**Priority:** nope\n\n" for n in range(1, 16))
    result, _ = parsed(HEAD + tasks)
    errors, warnings = bounded_errors_and_warnings(result.diagnostics)
    assert errors["count"] == 15 and warnings["count"] == 30  # no criteria, no verification
    assert (errors["shown"], warnings["shown"]) == (15, 5) and warnings["omitted"] == 25


def test_declared_conflicts_are_read_and_checked() -> None:
    text = HEAD + task(1, extra="**Conflicts:** T002, T009, T001\n") + task(2)
    result, doc = parsed(text)
    assert doc.tasks[0].conflicts == ("T002", "T009")
    assert {(d.code, d.severity) for d in result.diagnostics} == {("self_conflict", "warning"),
                                                                 ("unknown_conflict", "error")}


def diagnostic_codes() -> set[str]:
    """Every code the parser's modules pass to ``add(severity, line, code, message)``."""
    import ast
    from pathlib import Path

    prd = Path(__file__).resolve().parents[3] / "anvil" / "engine" / "prd"
    codes: set[str] = set()
    for name in ("parser.py", "checks.py"):
        tree = ast.parse((prd / name).read_text(encoding="utf-8"))
        assigned: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, set()).update(
                    c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str))
        for node in ast.walk(tree):
            func = node.func if isinstance(node, ast.Call) else None
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called == "add" and len(node.args) == 4:  # type: ignore[union-attr]
                code = node.args[2]  # type: ignore[union-attr]
                if isinstance(code, ast.Constant):
                    codes.add(code.value)
                elif isinstance(code, ast.JoinedStr):
                    text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in code.values)
                    codes |= {text.format(noun) for noun in ("task", "feature")}
                elif isinstance(code, ast.Name):
                    codes |= {c for c in assigned.get(code.id, ()) if "_" in c and c.replace("_", "").isalpha()}
            elif called == "Diagnostic" and len(node.args) == 4 and isinstance(node.args[2], ast.Constant):  # type: ignore[union-attr]
                codes.add(node.args[2].value)  # type: ignore[union-attr]
    return codes


def test_every_diagnostic_code_the_parser_can_give_is_documented() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "prd-format.md").read_text(encoding="utf-8")
    codes = diagnostic_codes()
    assert {"unclosed_fence", "unclosed_html", "commented_out_task", "misplaced_task", "foreign_format",
            "malformed_task_id", "missing_feature_title"} <= codes
    assert sorted(c for c in codes if f"| `{c}` |" not in page) == []
