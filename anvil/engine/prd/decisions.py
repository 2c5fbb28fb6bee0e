"""Collect what a human still has to decide before a PRD's plan can be trusted.

Three kinds, in a fixed order: inline ``[NEEDS DECISION]`` markers (source order), items of the
``## Open Questions`` section (PRD order, placeholders such as "None" skipped), and tasks missing
acceptance criteria or verification commands (task-id order). Read-only and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from anvil.engine.prd.lexer import is_placeholder
from anvil.engine.prd.model import PrdDocument

CONTEXT_LIMIT = 500
__all__ = ["find_decisions", "is_placeholder"]

KINDS = ("needs_decision", "open_question", "missing_field")
_PREFIX = {"needs_decision": "ND", "open_question": "OQ", "missing_field": "MF"}
_TASK_NUMBER = re.compile(r"[A-Za-z]*([0-9]+)$")
_MISSING = (("acceptance_criteria", "has no acceptance criteria", "**Acceptance criteria:**"),
            ("verification", "has no verification command", "**Verification:**"))


def find_decisions(doc: PrdDocument, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """List the open decisions of ``doc`` and the incomplete tasks of its plan.

    Args:
        doc: The parsed PRD.
        tasks: Planned task dicts with at least ``id``, ``acceptance_criteria`` (list) and
            ``verification`` (list); a missing or non-list field counts as empty. When empty, the
            document's own task specs are used instead.

    Returns:
        ``{"decisions": [...], "counts_by_kind": {kind: n}, "total": n}``; each decision has ``id``
        (``ND-001``, ``OQ-001``, ``MF-001``, numbered per kind), ``kind``, ``location``, ``text``,
        ``context_paragraph`` (at most 500 characters) and ``suggested_resolution_field``.

    Raises:
        Nothing for a well-formed document.
    """
    found: list[dict[str, Any]] = []
    for marker in sorted(doc.decisions, key=lambda m: m.line):
        where = f"{marker.section} (line {marker.line})" if marker.section else f"line {marker.line}"
        found.append(_entry("needs_decision", where, marker.question or "a decision is needed (no question given)",
                            marker.context, "inline rewrite"))
    for question in doc.open_questions:
        if not is_placeholder(question.text):
            found.append(_entry("open_question", f"Open Questions (line {question.line})", question.text,
                                question.text, "## Open Questions"))
    rows = [dict(t) for t in tasks] if tasks else [
        {"id": t.id, "title": t.title, "acceptance_criteria": list(t.acceptance_criteria),
         "verification": list(t.verification)} for t in doc.tasks]
    for row in sorted(rows, key=lambda r: _task_key(str(r.get("id", "")))):
        task_id = str(row.get("id", ""))
        title = str(row.get("title") or "")
        for key, what, field_name in _MISSING:
            if not _present(row.get(key)):
                found.append(_entry("missing_field", task_id, f"{task_id} {what}",
                                    f"{task_id}: {title}" if title else task_id, field_name))
    counters = dict.fromkeys(KINDS, 0)
    for item in found:
        counters[item["kind"]] += 1
        item["id"] = f"{_PREFIX[item['kind']]}-{counters[item['kind']]:03d}"
    return {"decisions": found, "counts_by_kind": counters, "total": len(found)}


def _bound(text: str, limit: int = CONTEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _entry(kind: str, location: str, text: str, context: str, resolution: str) -> dict[str, Any]:
    return {"id": "", "kind": kind, "location": _bound(location, 120), "text": _bound(text),
            "context_paragraph": _bound(context), "suggested_resolution_field": resolution}


def _present(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        return False
    return any(str(v).strip() for v in value)


def _task_key(task_id: str) -> tuple[int, int, str]:
    m = _TASK_NUMBER.match(task_id)
    return (0, int(m.group(1)), task_id) if m else (1, 0, task_id)
