"""The PRD parser: structure, leniency, diagnostics with lines, bounds, and speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.prd import parser as parser_module
from anvil.engine.prd.model import PrdDocument
from anvil.engine.prd.parser import find_cycles, parse_prd
from scripts.prdgen import chained_prd

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
SAMPLE = HERE.parents[2] / "anvil" / "engine" / "prd" / "sample.md"
SAMPLE_TEXT = SAMPLE.read_text(encoding="utf-8")

E, W = "error", "warning"
# Every diagnostic each corpus file must produce, as (severity, code, line); nothing more, nothing less.
EXPECTED: dict[str, set[tuple[str, str, int]]] = {
    "valid_minimal.md": set(),
    "valid_lenient.md": set(),
    "valid_fences.md": set(),
    "empty.md": {(E, "missing_project_heading", 0), (W, "missing_summary", 0), (W, "missing_requirements", 0),
                 (W, "missing_features", 0), (W, "missing_tasks", 0)},
    "missing_project.md": {(E, "missing_project_heading", 0), (W, "missing_features", 0), (W, "missing_tasks", 0)},
    "wrong_h1.md": {(E, "missing_project_heading", 1), (W, "missing_features", 0), (W, "missing_tasks", 0)},
    "empty_project_name.md": {(E, "empty_project_name", 1), (W, "missing_requirements", 0),
                              (W, "missing_features", 0), (W, "missing_tasks", 0)},
    "duplicate_ids.md": {(E, "duplicate_requirement_id", 10), (E, "duplicate_feature_id", 18),
                         (E, "duplicate_task_id", 32)},
    "malformed_ids.md": {(E, "malformed_requirement_id", 9), (E, "malformed_requirement_id", 10),
                         (E, "malformed_feature_id", 15), (E, "malformed_reference", 19),
                         (E, "malformed_task_id", 23), (E, "malformed_reference", 30)},
    "unknown_refs.md": {(E, "unknown_requirement", 15), (E, "unknown_feature", 21), (E, "unknown_dependency", 22)},
    "self_dependency.md": {(E, "self_dependency", 22)},
    "cycle.md": {(E, "dependency_cycle", 28), (E, "dependency_cycle", 55)},
    "invalid_priority.md": {(E, "invalid_priority", 22), (E, "invalid_priority", 31)},
    "missing_titles.md": {(E, "empty_requirement", 10), (E, "missing_feature_title", 14),
                          (E, "missing_task_title", 20)},
    "warnings_only.md": {(W, "ignored_content", 1), (W, "unresolved_decision", 7), (W, "unknown_section", 9),
                         (W, "ignored_content", 25), (W, "task_without_feature", 27),
                         (W, "missing_acceptance_criteria", 27), (W, "missing_verification", 27),
                         (W, "unknown_task_field", 29), (W, "duplicate_field", 31), (W, "unresolved_decision", 37)},
}


def codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in parse_prd(text).diagnostics]


def doc_of(text: str) -> PrdDocument:
    doc = parse_prd(text).document
    assert doc is not None
    return doc


def test_the_corpus_is_fully_covered_by_expectations() -> None:
    files = {p.name for p in CORPUS.glob("*.md")}
    assert files == set(EXPECTED)
    assert len(files) >= 12


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_yields_exactly_the_expected_diagnostics(name: str) -> None:
    result = parse_prd((CORPUS / name).read_text(encoding="utf-8"))
    assert result.document is not None
    got = {(d.severity, d.code, d.line) for d in result.diagnostics}
    assert got == EXPECTED[name]
    assert result.ok == (not any(sev == E for sev, _, _ in EXPECTED[name]))


def test_the_sample_parses_without_any_diagnostic() -> None:
    result = parse_prd(SAMPLE.read_text(encoding="utf-8"))
    assert result.diagnostics == []
    doc = result.document
    assert doc is not None and doc.project_name == "Shortlink"
    assert 5 <= len(doc.requirements) <= 8 and len(doc.features) == 3 and 8 <= len(doc.tasks) <= 10
    assert len(doc.open_questions) == 1
    files = [f for t in doc.tasks for f in t.likely_files]
    assert len(files) > len(set(files)), "some likely files must be shared between tasks"
    assert all(t.acceptance_criteria and t.verification and t.feature_id for t in doc.tasks)


def test_a_full_task_is_read_field_by_field() -> None:
    doc = doc_of((CORPUS / "valid_lenient.md").read_text(encoding="utf-8"))
    t1, t2 = doc.tasks
    assert (t1.id, t1.title, t1.feature_id, t1.priority, t1.type) == ("T001", "Backup script", "F001", "high",
                                                                       "feature")
    assert t1.likely_files == ("scripts/backup.sh", "scripts/common.sh")
    assert t1.dependencies == ()
    assert t1.acceptance_criteria == ("A run creates one archive named by date, such as `wiki-2024-01-31.tar.gz`.",
                                      "The exit status is 0 on success.")
    assert t1.verification == ("bash scripts/backup.sh --dry-run", "bash -n scripts/backup.sh")
    assert (t2.id, t2.title, t2.dependencies) == ("T2", "Pruning", ("T001",))
    assert t2.acceptance_criteria == ("Archives older than 14 days are removed.",)
    assert t2.verification == ("bash scripts/prune.sh --dry-run",)
    assert doc.features[0].requirements == ("R001", "R002")
    assert doc.non_goals == ("Replication", "Point-in-time restore")
    assert doc.open_questions == ()


def test_fenced_code_hides_headings_fields_and_markers() -> None:
    doc = doc_of((CORPUS / "valid_fences.md").read_text(encoding="utf-8"))
    assert [t.id for t in doc.tasks] == ["T001"] and [f.id for f in doc.features] == ["F001"]
    assert doc.decisions == ()
    assert "**Priority:** not a field" in doc.tasks[0].description
    assert doc.tasks[0].priority == "medium"


def test_empty_and_blank_text_still_give_a_document() -> None:
    for text in ("", "   \n\t\n"):
        result = parse_prd(text)
        assert result.document is not None and result.document.project_name == ""
        assert ("missing_project_heading", 0) in codes(text)
        assert not result.ok


def test_bom_and_crlf_line_ends_keep_line_numbers() -> None:
    text = "\ufeff# Project: X\r\n## Tasks\r\n### T001: A\r\n**Priority:** nope\r\n"
    assert ("invalid_priority", 4) in codes(text)
    assert doc_of(text).project_name == "X"


def test_field_forms_are_accepted_with_or_without_bullet_and_colon_placement() -> None:
    text = "# Project: X\n## Tasks\n### T001: A\n- **Priority:** low\n**Type**: Docs\n- **Likely Files**: a.py\n"
    task = doc_of(text).tasks[0]
    assert (task.priority, task.type, task.likely_files) == ("low", "docs", ("a.py",))


def test_plain_field_like_text_is_read_as_the_field_with_a_warning() -> None:
    result = parse_prd("# Project: X\n## Tasks\n### T001: A\nPriority: high\nNote: it is prose\n")
    task = result.document.tasks[0]  # type: ignore[union-attr]
    assert task.priority == "high" and task.description == "Note: it is prose"
    assert [(d.code, d.line) for d in result.warnings if d.code == "unbolded_field"] == [("unbolded_field", 4)]


def test_dependencies_are_deduplicated_and_none_means_empty() -> None:
    text = "# Project: X\n## Tasks\n### T001: A\n**Dependencies:** none\n### T002: B\n**Dependencies:** T001, t001\n"
    doc = doc_of(text)
    assert doc.tasks[0].dependencies == () and doc.tasks[1].dependencies == ("T001",)


def test_verification_backticks_are_stripped_only_around_a_single_code_span() -> None:
    text = ("# Project: X\n## Tasks\n### T001: A\n**Verification:**\n- `pytest -q`\n- echo `date`\n"
            "- `a` && `b`\n")
    assert doc_of(text).tasks[0].verification == ("pytest -q", "echo `date`", "`a` && `b`")


def test_list_field_bullets_end_at_prose_after_a_blank_line() -> None:
    text = ("# Project: X\n## Tasks\n### T001: A\nIntro.\n**Acceptance criteria:**\n- one\n  wrapped\n\n- two\n\n"
            "Closing words.\n")
    task = doc_of(text).tasks[0]
    assert task.acceptance_criteria == ("one wrapped", "two")
    assert task.description == "Intro.\n\nClosing words."


def test_decision_markers_carry_line_section_and_context() -> None:
    text = ("# Project: X\n## Summary\nFirst line\nsecond [NEEDS DECISION: who pays?] line\n\n## Goals\n"
            "- goal [needs decision]\n  continued\n## Tasks\n### T001: Title [NEEDS DECISION: rename?]\n"
            "**Dependencies:** T002 [NEEDS DECISION: maybe]\n### T002: B\n")
    doc = doc_of(text)
    got = [(d.question, d.line, d.section, d.context) for d in doc.decisions]
    assert got == [
        ("who pays?", 4, "Summary", "First line second [NEEDS DECISION: who pays?] line"),
        ("", 7, "Goals", "goal [needs decision] continued"),
        ("rename?", 10, "Tasks", "T001: Title [NEEDS DECISION: rename?]"),
        ("maybe", 11, "Tasks", "**Dependencies:** T002 [NEEDS DECISION: maybe]"),
    ]
    assert doc.tasks[0].dependencies == ("T002",), "a marker inside an id field is not an id"
    assert [c for c, _ in codes(text)].count("unresolved_decision") == 4


def test_markers_inside_code_spans_are_not_markers() -> None:
    assert doc_of("# Project: X\n## Summary\nWrite `[NEEDS DECISION: q]` to ask.\n").decisions == ()


def test_open_question_placeholders_are_dropped() -> None:
    text = "# Project: X\n## Open Questions\n- None identified.\n- N/A\n- -\n- Which database?\n"
    assert [q.text for q in doc_of(text).open_questions] == ["Which database?"]


def test_a_duplicate_task_keeps_the_first_definition() -> None:
    doc = doc_of("# Project: X\n## Tasks\n### T001: First\n### T001: Second\n")
    assert [t.title for t in doc.tasks] == ["First"]


def test_unknown_reference_is_reported_at_the_field_line() -> None:
    text = "# Project: X\n## Features\n### F001: F\n## Tasks\n### T001: A\n\n**Feature:** F002\n"
    assert ("unknown_feature", 7) in codes(text)


def test_a_second_feature_id_on_the_feature_line_is_malformed() -> None:
    assert ("malformed_reference", 4) in codes("# Project: X\n## Tasks\n### T001: A\n**Feature:** F001, F002\n")


def test_messages_echo_at_most_about_eighty_characters_of_user_text() -> None:
    long = "Z" * 5000 + "\x1b[31m"
    text = f"# Project: X\n## Tasks\n### {long}\n### T001: A\n**Priority:** {long}\n## {long}\n"
    for diag in parse_prd(text).diagnostics:
        assert diag.message.count("Z") <= 80
        assert len(diag.message) < 200
        assert "\x1b" not in diag.message


def test_diagnostics_come_sorted_by_line() -> None:
    lines = [d.line for d in parse_prd((CORPUS / "warnings_only.md").read_text(encoding="utf-8")).diagnostics]
    assert lines == sorted(lines)


def test_a_long_cycle_is_reported_once_with_a_bounded_message() -> None:
    parts = ["# Project: X", "## Tasks"]
    for i in range(1, 501):
        parts += [f"### T{i:03d}: t", f"**Dependencies:** T{i % 500 + 1:03d}"]
    cycles = [d for d in parse_prd("\n".join(parts)).diagnostics if d.code == "dependency_cycle"]
    assert len(cycles) == 1
    assert cycles[0].line == 3 and "500 tasks" in cycles[0].message and len(cycles[0].message) < 200


def test_find_cycles_returns_one_concrete_cycle_per_component_from_its_earliest_node() -> None:
    order = ["A", "B", "C", "D", "E", "F"]
    edges = {"A": ["B"], "B": ["C"], "C": ["A", "B"], "D": ["D"], "E": ["F"], "F": ["E"]}
    assert find_cycles(order, edges) == [["A", "B", "C"], ["E", "F"]]
    assert find_cycles(["X"], {}) == []


def test_find_cycles_is_iterative_on_a_deep_chain() -> None:
    n = 50_000
    order = [str(i) for i in range(n)]
    edges = {str(i): [str(i + 1)] for i in range(n - 1)}
    edges[str(n - 1)] = ["0"]
    (cycle,) = find_cycles(order, edges)
    assert len(cycle) == n and cycle[0] == "0"


def test_the_parser_never_raises_even_on_an_internal_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object) -> None:
        raise RuntimeError("secret content")

    monkeypatch.setattr(parser_module._Parser, "run", boom)
    result = parse_prd("# Project: X")
    assert result.document is None
    assert [(d.code, d.line) for d in result.diagnostics] == [("internal_parser_error", 0)]
    assert "secret" not in result.diagnostics[0].message


def test_a_four_thousand_task_prd_parses_completely_without_a_diagnostic() -> None:
    """Its speed is a figure of ``scripts/bench_parse.py`` (target: well under a second), not a timed
    assertion that a busy machine could fail."""
    text = chained_prd(4000)
    assert len(text.encode()) > 1_500_000
    result = parse_prd(text)
    assert result.ok and result.diagnostics == [] and len(result.document.tasks) == 4000  # type: ignore[union-attr]
    assert result.document.tasks[-1].dependencies == ("T3999", "T3993")  # type: ignore[union-attr]


def test_the_example_in_the_format_documentation_parses_cleanly() -> None:
    doc_text = (HERE.parents[2] / "docs" / "prd-format.md").read_text(encoding="utf-8")
    example = doc_text.split("```markdown\n", 1)[1].split("\n```\n", 1)[0]
    result = parse_prd(example)
    assert result.diagnostics == [] and result.document is not None and len(result.document.tasks) == 2


def test_a_field_written_without_bold_is_read_as_the_field_with_a_warning_saying_how_to_write_it() -> None:
    text = SAMPLE_TEXT.replace("**Priority:** critical", "Priority: urgent", 1)
    text = text.replace("**Feature:** F001", "Feature: F009", 1)
    result = parse_prd(text)
    warnings = [d for d in result.diagnostics if d.code == "unbolded_field"]
    assert [d.message.split(":")[0] for d in warnings] == ["T001", "T001"]
    assert "write **Priority:**" in " ".join(d.message for d in warnings)
    codes = {d.code for d in result.errors}
    assert {"invalid_priority", "unknown_feature"} <= codes  # checked like the bold fields
    priority = next(d for d in result.errors if d.code == "invalid_priority")
    assert "low, medium, high, critical" in priority.message
    assert priority.line == next(d.line for d in warnings if "Priority" in d.message)


def test_a_note_beside_dependencies_is_one_warning_and_the_ids_are_read() -> None:
    noted = "**Dependencies:** T002 (needs the store first)"
    result = parse_prd(SAMPLE_TEXT.replace("**Dependencies:** none", noted, 1))
    notes = [d for d in result.diagnostics if d.code == "note_in_reference"]
    assert len(notes) == 1 and "'(needs the store first)'" in notes[0].message
    assert not [d for d in result.diagnostics if d.code == "malformed_reference"]
    words = parse_prd(SAMPLE_TEXT.replace("**Dependencies:** none", "**Dependencies:** T002 needs the store", 1))
    malformed = [d for d in words.errors if d.code == "malformed_reference"]
    assert len(malformed) == 1 and "'needs', 'the', 'store' are not ids like 'T001'" in malformed[0].message


def test_an_unknown_requirement_in_an_unbolded_line_is_located() -> None:
    text = SAMPLE_TEXT.replace("**Requirements:** R001, R006", "Requirements: R001, R777", 1)
    result = parse_prd(text)
    unknown = [d for d in result.errors if d.code == "unknown_requirement"]
    assert len(unknown) == 1 and "R777" in unknown[0].message
    assert text.splitlines()[unknown[0].line - 1].startswith("Requirements: R001, R777")
