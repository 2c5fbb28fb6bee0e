"""Advisory behavioural-readiness findings."""

from __future__ import annotations

from pathlib import Path

from anvil.engine.prd.assess import assess_prd, is_structured_criterion, vague_word
from anvil.engine.prd.model import PrdDocument
from anvil.engine.prd.parser import parse_prd

SAMPLE = Path(__file__).parents[3] / "anvil" / "engine" / "prd" / "sample.md"

BASE = """# Project: X

## Summary

{summary}

## Goals

- Ship it.

## Non-Goals

- Nothing else.

## Requirements

- R001: Covered.
- R002: Not covered.

## Features

### F001: Covered

**Requirements:** R001

### F002: Empty

**Requirements:** R001

## Tasks

### T001: Work

**Feature:** F001
**Likely files:** a.py
**Acceptance criteria:**
- {criterion}
**Verification:**
- `pytest -q`

### T002: Bare

**Feature:** F001
"""


def doc_and_text(summary: str = "Support agents use it.", criterion: str = "Returns 200.") -> tuple[PrdDocument,
                                                                                                     str]:
    text = BASE.format(summary=summary, criterion=criterion)
    doc = parse_prd(text).document
    assert doc is not None
    return doc, text


def findings(**kwargs: str) -> list[dict[str, object]]:
    doc, text = doc_and_text(**kwargs)
    return assess_prd(doc, text)


def keyed(items: list[dict[str, object]]) -> set[tuple[object, object, object]]:
    return {(f["category"], f["severity"], f["location"]) for f in items}


def test_the_sample_has_no_findings() -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    doc = parse_prd(text).document
    assert doc is not None
    assert assess_prd(doc, text) == []


def test_structural_gaps_are_found_in_a_fixed_order_with_sequential_ids() -> None:
    items = findings()
    assert [f["id"] for f in items] == [f"BR-{i:03d}" for i in range(1, len(items) + 1)]
    assert [(f["category"], f["severity"], f["location"]) for f in items] == [
        ("traceability", "warning", "R002"),
        ("planning", "warning", "F002"),
        ("testability", "warning", "T002"),
        ("verification", "warning", "T002"),
        ("scope", "info", "T002"),
    ]
    for f in items:
        assert set(f) == {"id", "category", "severity", "location", "message", "challenge_question"}
        assert f["severity"] in ("warning", "info")


def test_a_summary_without_a_user_or_role_is_challenged() -> None:
    assert ("users", "warning", "## Summary") in keyed(findings(summary="It shortens links quickly."))
    assert ("users", "warning", "## Summary") not in keyed(findings(summary="As an admin I shorten links."))


def test_missing_goals_and_non_goals() -> None:
    doc = PrdDocument(project_name="X", summary="")
    got = keyed(assess_prd(doc, ""))
    assert {("users", "warning", "## Summary"), ("goals", "warning", "## Goals"), ("scope", "info", "## Non-Goals"),
            ("traceability", "warning", "## Requirements")} <= got


def test_vague_criteria_without_numbers_are_flagged() -> None:
    items = [f for f in findings(criterion="The page loads fast and is user-friendly.")
             if f["location"] == "T001"]
    assert [f["category"] for f in items] == ["testability"]
    assert "fast" in str(items[0]["message"])
    assert not [f for f in findings(criterion="The page loads fast: under 200 ms at p95.") if f["location"] == "T001"]


def test_ears_and_gherkin_criteria_are_recognised_as_observable() -> None:
    assert is_structured_criterion("When a link is opened, the system shall answer with a 302.")
    assert is_structured_criterion("The service shall reject URLs longer than 2048 characters")
    assert is_structured_criterion("Given a stored link When it is opened Then the visit is counted")
    assert not is_structured_criterion("Links are short.")
    assert vague_word("Given a user, when they log in, then it is easy") is None
    assert vague_word("It is easy to use") == "easy"
    assert vague_word("Robust to 3 retries") is None


def test_placeholders_in_the_source_are_found_outside_code() -> None:
    doc, text = doc_and_text(summary="Support agents use it. TBD: pricing.")
    text += "\n```\nTODO inside code is fine\n```\nInline `TODO` is fine too.\n"
    places = [f for f in assess_prd(doc, text) if f["category"] == "placeholders"]
    assert [f["location"] for f in places] == ["line 5"]


def test_messages_are_bounded_and_quote_little_user_text() -> None:
    long = "fast " + "x" * 5000
    for f in findings(criterion=long, summary="y" * 5000):
        assert len(str(f["message"])) <= 300 and len(str(f["challenge_question"])) <= 300
        assert str(f["message"]).count("x") <= 60


def test_assessment_is_deterministic() -> None:
    doc, text = doc_and_text(criterion="Robust and fast.")
    assert assess_prd(doc, text) == assess_prd(doc, text)
