"""The parsed document's JSON forms: what a revision records, and the material its approval binds."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from anvil.engine.planning.state import document_from_dict
from anvil.engine.prd.parser import parse_prd

SAMPLE = (Path(__file__).resolve().parents[3] / "anvil" / "engine" / "prd" / "sample.md").read_text(encoding="utf-8")
BEFORE_TASK_KEYS = {"id", "title", "feature_id", "priority", "type", "likely_files", "dependencies",
                    "acceptance_criteria", "verification", "description", "line", "claims", "artifacts"}
BEFORE_KEYS = {"project_name", "summary", "goals", "non_goals", "requirements", "open_questions", "features",
               "tasks", "decisions"}


def test_to_dict_is_what_dataclasses_asdict_gives() -> None:
    doc = parse_prd(SAMPLE).document
    assert doc is not None and doc.to_dict() == dataclasses.asdict(doc)


def test_a_prd_using_none_of_the_later_fields_is_recorded_in_the_shape_it_had_before_them() -> None:
    doc = parse_prd(SAMPLE).document
    assert doc is not None
    stored = doc.stored_dict()
    assert set(stored) == BEFORE_KEYS and all(set(t) == BEFORE_TASK_KEYS for t in stored["tasks"])
    again = document_from_dict(json.loads(json.dumps(stored)))
    assert json.loads(json.dumps(again.to_dict())) == json.loads(json.dumps(doc.to_dict()))


def test_the_later_fields_are_recorded_when_used_and_read_back() -> None:
    text = SAMPLE.replace("**Dependencies:** none", "**Dependencies:** none\n**Conflicts:** T002", 1)
    text = text.replace("## Open Questions", "## Risks\n\n- Slow disks.\n\n## Open Questions", 1)
    doc = parse_prd(text).document
    assert doc is not None
    stored = json.loads(json.dumps(doc.stored_dict()))
    assert stored["risks"] == ["Slow disks."] and stored["tasks"][0]["conflicts"] == ["T002"]
    again = document_from_dict(stored)
    assert again.risks == ("Slow disks.",) and again.tasks[0].conflicts == ("T002",)
    assert doc.material_dict() != parse_prd(SAMPLE).document.material_dict()  # type: ignore[union-attr]
