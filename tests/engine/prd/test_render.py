"""Rendering is canonical and parsing is total: property tests with Hypothesis."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvil.engine.prd.model import Feature, OpenQuestion, PrdDocument, Requirement, TaskSpec
from anvil.engine.prd.parser import parse_prd
from anvil.engine.prd.render import render_prd
from anvil.engine.vocab import PRIORITIES
from tests.conftest import sized

HERE = Path(__file__).parent
SAMPLE = HERE.parents[2] / "anvil" / "engine" / "prd" / "sample.md"
# 100 examples in the everyday run (Hypothesis' own default), 200 with ANVIL_LONG_TESTS=1
SETTINGS = settings(max_examples=sized(50, 200), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def material(value: Any) -> Any:
    """The document without line numbers (tuples and lists alike)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {k: material(v) for k, v in value.items() if k != "line"}
    if isinstance(value, list | tuple):
        return [material(v) for v in value]
    return value


def parsed(text: str) -> PrdDocument:
    doc = parse_prd(text).document
    assert doc is not None
    return doc


# -- strategies for valid documents -----------------------------------------------------------------
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéßøñΩπ中文語"
first_word = st.text(alphabet=LETTERS, min_size=1, max_size=8)
word = st.one_of(
    st.text(alphabet=LETTERS + "0123456789", min_size=1, max_size=8),
    st.sampled_from(["-", "*", "#", "**bold**", "`code`", "a,b", "(x)", "50ms", "R001", "T002", "x:y", "e.g.",
                     "**Note:**", "C#", "100%", "<tag>", "~~~", "```"]),
)
marker = st.one_of(st.just(""), st.just(" [NEEDS DECISION]"),
                   st.builds(lambda w: f" [NEEDS DECISION: {w}?]", first_word))
phrase = st.builds(lambda first, rest, mark: " ".join([first, *rest]) + mark,
                   first_word, st.lists(word, max_size=6), marker)
plain_phrase = st.builds(lambda first, rest: " ".join([first, *rest]), first_word, st.lists(word, max_size=6))
paragraph = st.lists(st.one_of(phrase, phrase.map(lambda p: "- " + p)), min_size=1, max_size=3).map("\n".join)
code_block = st.sampled_from(["```\n## Not a heading\n**Priority:** x\n- y\n```",
                              "~~~text\n### T999: nope\n[NEEDS DECISION: no]\n~~~"])
prose_text = st.lists(st.one_of(paragraph, code_block), max_size=3).map("\n\n".join)
path = st.builds(lambda a, b: f"src/{a}/{b}.py", st.text(alphabet="abc_", min_size=1, max_size=5),
                 st.text(alphabet="xyz0123456789", min_size=1, max_size=5))
command = st.one_of(plain_phrase, st.builds(lambda p: f"pytest -q {p}", path),
                    st.builds(lambda p: f"echo `date` > {p}", path))


@st.composite
def documents(draw: st.DrawFn) -> PrdDocument:
    """A valid PRD: unique ids, references only to existing ids, dependencies only on earlier tasks."""
    req_ids = [f"R{n:03d}" for n in draw(st.lists(st.integers(1, 999), unique=True, max_size=5))]
    feat_ids = [f"F{n:03d}" for n in draw(st.lists(st.integers(1, 999), unique=True, max_size=3))]
    task_ids = [f"T{n:03d}" for n in draw(st.lists(st.integers(1, 999), unique=True, max_size=5))]
    requirements = tuple(Requirement(r, draw(phrase), 0) for r in req_ids)
    features = tuple(
        Feature(f, draw(phrase), draw(prose_text), tuple(draw(st.lists(st.sampled_from(req_ids), unique=True)))
                if req_ids else (), 0)
        for f in feat_ids)
    tasks = []
    for i, t in enumerate(task_ids):
        earlier = task_ids[:i]
        tasks.append(TaskSpec(
            id=t, title=draw(phrase), feature_id=draw(st.one_of(st.none(), st.sampled_from(feat_ids)))
            if feat_ids else None,
            priority=draw(st.sampled_from(PRIORITIES)), type=draw(st.sampled_from([None, "feature", "test", "docs"])),
            likely_files=tuple(draw(st.lists(path, unique=True, max_size=3))),
            dependencies=tuple(draw(st.lists(st.sampled_from(earlier), unique=True))) if earlier else (),
            acceptance_criteria=tuple(draw(st.lists(phrase, max_size=3))),
            verification=tuple(draw(st.lists(command, max_size=2))), description=draw(prose_text), line=0))
    return PrdDocument(
        project_name=draw(plain_phrase), summary=draw(prose_text), goals=tuple(draw(st.lists(phrase, max_size=3))),
        non_goals=tuple(draw(st.lists(phrase, max_size=3))), requirements=requirements,
        open_questions=tuple(OpenQuestion(q + "?", 0) for q in draw(st.lists(phrase, max_size=2))),
        features=features, tasks=tuple(tasks))


@SETTINGS
@given(documents())
def test_render_then_parse_gives_back_the_document(generated: PrdDocument) -> None:
    text = render_prd(generated)
    assert text == render_prd(generated)
    assert text.startswith("# Project:") and text.endswith("\n") and not text.endswith("\n\n")
    result = parse_prd(text)
    assert result.errors == []
    doc = result.document
    assert doc is not None
    expected = material(generated)
    got = material(doc)
    expected.pop("decisions")
    decisions = got.pop("decisions")
    assert got == expected
    assert len(decisions) == text.count("[NEEDS DECISION") - text.count("[NEEDS DECISION: no]")
    # With its decisions filled in, the document is a fixed point of parse . render, decisions included.
    again = parsed(render_prd(doc))
    assert material(again) == material(doc)
    assert render_prd(again) == text


FRAGMENTS = [
    "# Project: X", "# Project:", "# Other", "## Summary", "## Goals", "## Non Goals", "## non-goals",
    "## Requirements", "## Open Questions", "## Features", "## Tasks", "## Weird", "### T001: a", "### T002: b ##",
    "### T1", "### F001: f", "### Task one", "#### Acceptance criteria", "**Feature:** F001", "**Priority:** high",
    "**Priority:** bad", "**Type:** docs", "**Likely files:** a.py, b.py", "**Dependencies:** T001, T002",
    "**Dependencies:**", "**Acceptance criteria:**", "**Verification:**", "- `pytest`", "- item", "  continued",
    "- [ ] box", "1. one", "- R001: req", "- R1x: bad", "**Requirements:** R001", "```", "~~~", "```py", "````",
    "[NEEDS DECISION: q]", "text [NEEDS DECISION] more", "[needs decision: [nested]", "---", "", "   ",
    "**Bogus:** x", "- **Priority:** low", "None", "- none", "`[NEEDS DECISION]`", "plain prose", "\t- tabbed",
    "#", "##", "- ", "-", "**", "- **Feature:** F002", "- T001", "* star", "+ plus", "- - -", "\ufeff# Project: Y",
    "x\r", "\r\n", "\u2028", "\x00", "é中文", "🙂 emoji", "\u202e rtl", "<!-- comment -->", "| a | b |",
    "# Project: \ud800", "[NEEDS DECISION: \udcff]",
    # CommonMark blocks: comments and HTML, indented code, quotes, deep headings, notes, the later sections
    "<!--", "-->", "<!-- ### T009: off -->", "<div>", "</div>", "    **Priority:** low", "> **Feature:** F001",
    "- `pytest -q` (a note)", "- `` echo `date` `` note", "#### T003: deep", "## T004: shallow", "**Conflicts:** T001",
    "## Risks", "## Assumptions", "## Acceptance Criteria", "  - nested", "\t-\ttab", "===", "<pre>",
    "Dependencies: prose here", "- Run it by hand.", "#### T001.1: step",
]
markdownish = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=40).map("\n".join)


@settings(max_examples=sized(100, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=400), st.text(st.characters(exclude_categories=()), max_size=200), markdownish))
def test_the_parser_never_raises_and_always_returns_a_document(text: str) -> None:
    result = parse_prd(text)
    assert result.document is not None
    assert all(d.code != "internal_parser_error" for d in result.diagnostics)
    for d in result.diagnostics:
        assert d.severity in ("error", "warning") and d.line >= 0 and len(d.message.encode()) <= 1024


@SETTINGS
@given(markdownish)
def test_parse_render_is_a_fixed_point_for_any_input(text: str) -> None:
    doc = parsed(text)
    once = render_prd(doc)
    again = parsed(once)
    assert render_prd(again) == once
    # Everything except decision markers (which may sit in fields or ignored sections) survives.
    before, after = material(doc), material(again)
    before.pop("decisions")
    after.pop("decisions")
    assert after == before


def test_the_sample_round_trips_exactly() -> None:
    doc = parsed(SAMPLE.read_text(encoding="utf-8"))
    text = render_prd(doc)
    again = parse_prd(text)
    assert again.diagnostics == []
    assert material(again.document) == material(doc)
    assert render_prd(again.document) == text  # type: ignore[arg-type]


def test_render_layout_is_canonical() -> None:
    doc = PrdDocument(
        project_name="P", summary="Users do things.", goals=("g",), non_goals=(),
        requirements=(Requirement("R001", "r", 0),), open_questions=(),
        features=(Feature("F001", "F", "", ("R001",), 0),),
        tasks=(TaskSpec("T001", "T", "F001", "high", "docs", ("a.py", "b.py"), (), ("c",), ("make x",), "", 0),))
    assert render_prd(doc) == (
        "# Project: P\n\n## Summary\n\nUsers do things.\n\n## Goals\n\n- g\n\n## Requirements\n\n- R001: r\n\n"
        "## Features\n\n### F001: F\n\n**Requirements:** R001\n\n## Tasks\n\n### T001: T\n\n**Feature:** F001\n"
        "**Priority:** high\n**Type:** docs\n**Likely files:** a.py, b.py\n**Acceptance criteria:**\n- c\n"
        "**Verification:**\n- `make x`\n")
