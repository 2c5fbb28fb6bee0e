"""Collecting needs-decision markers, open questions and missing task fields."""

from __future__ import annotations

from pathlib import Path

from anvil.engine.prd.decisions import find_decisions, is_placeholder
from anvil.engine.prd.model import DecisionMarker, OpenQuestion, PrdDocument
from anvil.engine.prd.parser import parse_prd

SAMPLE = Path(__file__).parents[3] / "anvil" / "engine" / "prd" / "sample.md"

TEXT = """# Project: X

## Summary

Agents shorten links. [NEEDS DECISION: which agents?]

## Open Questions

- None
- Which database? [NEEDS DECISION]
- N/A

## Tasks

### T010: Ten

**Acceptance criteria:**
- ok

### T002: Two

**Verification:**
- `true`
"""


def parsed() -> PrdDocument:
    doc = parse_prd(TEXT).document
    assert doc is not None
    return doc


def test_decisions_come_in_kind_order_with_per_kind_ids() -> None:
    out = find_decisions(parsed(), [])
    got = [(d["id"], d["kind"], d["location"], d["text"], d["suggested_resolution_field"]) for d in out["decisions"]]
    assert got == [
        ("ND-001", "needs_decision", "Summary (line 5)", "which agents?", "inline rewrite"),
        ("ND-002", "needs_decision", "Open Questions (line 10)", "a decision is needed (no question given)",
         "inline rewrite"),
        ("OQ-001", "open_question", "Open Questions (line 10)", "Which database? [NEEDS DECISION]",
         "## Open Questions"),
        ("MF-001", "missing_field", "T002", "T002 has no acceptance criteria", "**Acceptance criteria:**"),
        ("MF-002", "missing_field", "T010", "T010 has no verification command", "**Verification:**"),
    ]
    assert out["counts_by_kind"] == {"needs_decision": 2, "open_question": 1, "missing_field": 2}
    assert out["total"] == 5
    assert out["decisions"][0]["context_paragraph"] == "Agents shorten links. [NEEDS DECISION: which agents?]"
    assert out["decisions"][3]["context_paragraph"] == "T002: Two"
    assert list(out["decisions"][0]) == ["id", "kind", "location", "text", "context_paragraph",
                                         "suggested_resolution_field"]


def test_planned_tasks_take_precedence_over_the_document_tasks() -> None:
    tasks = [{"id": "T3", "acceptance_criteria": ["a"], "verification": []},
             {"id": "T20", "acceptance_criteria": [], "verification": ["make"]},
             {"id": "T100", "acceptance_criteria": ["a"], "verification": ["make"]}]
    out = find_decisions(parsed(), tasks)
    missing = [(d["location"], d["text"]) for d in out["decisions"] if d["kind"] == "missing_field"]
    assert missing == [("T3", "T3 has no verification command"), ("T20", "T20 has no acceptance criteria")]


def test_malformed_task_dicts_count_as_missing_fields() -> None:
    out = find_decisions(PrdDocument(project_name="X", summary=""), [{"id": "T001"},
                                                                   {"id": "T002", "acceptance_criteria": [" "],
                                                                    "verification": None}])
    assert out["counts_by_kind"]["missing_field"] == 4


def test_context_is_bounded_to_five_hundred_characters() -> None:
    doc = PrdDocument(project_name="X", summary="", decisions=(DecisionMarker("q" * 900, 3, "Summary", "c" * 900),),
                      open_questions=(OpenQuestion("o" * 900, 4),))
    for d in find_decisions(doc, [])["decisions"]:
        assert len(d["context_paragraph"]) <= 500 and len(d["text"]) <= 500


def test_markers_sort_by_line_and_a_marker_before_any_section_has_a_plain_location() -> None:
    doc = PrdDocument(project_name="X", summary="", decisions=(DecisionMarker("b", 9, "Goals", "b"),
                                                               DecisionMarker("a", 1, "", "a")))
    assert [d["location"] for d in find_decisions(doc, [])["decisions"]] == ["line 1", "Goals (line 9)"]


def test_placeholders() -> None:
    for text in ("None", "none identified.", "N/A", "-", " none yet "):
        assert is_placeholder(text)
    assert not is_placeholder("None of the APIs are versioned; should they be?")


def test_the_sample_has_exactly_its_one_open_question() -> None:
    doc = parse_prd(SAMPLE.read_text(encoding="utf-8")).document
    assert doc is not None
    out = find_decisions(doc, [])
    assert out["counts_by_kind"] == {"needs_decision": 0, "open_question": 1, "missing_field": 0}
