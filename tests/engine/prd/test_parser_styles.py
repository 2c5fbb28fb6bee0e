"""The style corpus: PRDs written the ways real authors write them parse to the tasks they hold.

``styles/`` is written by ``scripts/prdstyles.py`` from a model of each backlog (the expectation
is the model, not a capture of the parser): long backlogs with code spans in titles, files and
criteria, notes after verification commands, nested and tab-indented lists, fenced code holding
headings and bold lines, a task switched off in an HTML comment, a BOM with CRLF line ends, tasks
one heading level too deep, and two other tools' formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.prd.parser import parse_prd
from scripts.prdstyles import corpus

STYLES = Path(__file__).parent / "styles"
NAMES = sorted(p.stem for p in STYLES.glob("*.md"))
READ = ("id", "title", "feature_id", "priority", "type", "likely_files", "dependencies", "acceptance_criteria",
        "verification", "verification_notes")


def expectation(name: str) -> dict[str, Any]:
    return dict(json.loads((STYLES / f"{name}.json").read_text(encoding="utf-8")))


def test_the_corpus_files_are_what_the_generator_writes() -> None:
    generated = corpus()
    assert sorted(generated) == NAMES and len(NAMES) >= 6
    for name, (text, expected) in generated.items():
        assert (STYLES / f"{name}.md").read_bytes() == text.encode("utf-8"), f"run python scripts/prdstyles.py ({name})"
        assert expectation(name) == json.loads(json.dumps(expected))


@pytest.mark.parametrize("name", NAMES)
def test_a_style_file_parses_to_the_tasks_it_holds_and_only_the_expected_diagnostics(name: str) -> None:
    expected = expectation(name)
    result = parse_prd((STYLES / f"{name}.md").read_bytes().decode("utf-8"))
    assert result.document is not None
    tasks = [{k: t[k] for k in READ} for t in json.loads(json.dumps(result.document.to_dict()["tasks"]))]
    assert tasks == expected["tasks"]
    assert [[d.severity, d.code, d.line] for d in result.diagnostics] == expected["diagnostics"]
    if "foreign" in expected:
        assert expected["foreign"] in result.diagnostics[0].message


def test_the_windows_export_gives_the_very_document_the_plain_file_gives() -> None:
    plain = parse_prd((STYLES / "reference_backlog.md").read_text(encoding="utf-8"))
    windows = parse_prd((STYLES / "windows_export.md").read_bytes().decode("utf-8"))
    assert plain.document is not None and windows.document is not None
    assert windows.document == plain.document and windows.diagnostics == plain.diagnostics


def test_long_backlogs_with_hidden_headings_in_code_give_no_task_from_the_code() -> None:
    doc = parse_prd((STYLES / "converted_backlog.md").read_text(encoding="utf-8")).document
    assert doc is not None and len(doc.tasks) == 93 and "T999" not in {t.id for t in doc.tasks}
    assert all(t.priority != "not a field" for t in doc.tasks)
    assert "```python" in doc.tasks[0].description and "### T999" in doc.tasks[0].description
