"""Advisory behavioural-readiness review of a parsed PRD.

The findings never block anything; they point at places where an agent would have to guess: who
the user is, what is out of scope, which requirement no feature covers, which acceptance criterion
cannot be checked. Every rule is a fixed word list or a structural check, so the same PRD always
yields the same findings in the same order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from anvil.engine.prd.lexer import CODE_SPAN, OPAQUE, SourceLines, clip
from anvil.engine.prd.model import PrdDocument, TaskSpec

MESSAGE_LIMIT = 300
_ROLE = re.compile(
    r"\b(users?|customers?|clients?|admins?|administrators?|operators?|developers?|engineers?|maintainers?|"
    r"owners?|members?|teams?|staff|managers?|analysts?|students?|teachers?|patients?|buyers?|sellers?|"
    r"visitors?|readers?|authors?|editors?|agents?|personas?|roles?|people|employees?|contributors?|"
    r"reviewers?|subscribers?|players?|shoppers?|consumers?|testers?|designers?|researchers?|marketers?|"
    r"as an?)\b", re.IGNORECASE)
_VAGUE = re.compile(
    r"\b(fast|faster|quick|quickly|easy|easily|simple|simply|robust|user[- ]friendly|intuitive|intuitively|"
    r"seamless|seamlessly|scalable|efficient|efficiently|performant|responsive|reliable|reliably|flexible|"
    r"nice|good|better|clean|modern|smooth|smoothly|appropriate|appropriately|properly|adequate|adequately|"
    r"reasonable|reasonably|optimal|optimized|secure|securely|etc)\b", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9]")
_EARS_OPENERS = ("when ", "while ", "if ", "where ", "the ")
_GHERKIN_OPENERS = ("given ", "when ")
_SHALL = re.compile(r"\bshall\b")
_THEN = re.compile(r"\bthen\b")
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])(TBD|TODO|FIXME|XXX)(?![A-Za-z])|\?\?\?")


def assess_prd(doc: PrdDocument, text: str) -> list[dict[str, Any]]:
    """Review ``doc`` (and its source ``text``) for gaps that make behaviour ambiguous.

    Rules: empty summary or a summary naming no user or role; no goals; no non-goals; no
    requirements; a requirement no feature references; a feature with no requirements or no tasks;
    a task with no acceptance criteria, no verification command or no likely files; an acceptance
    criterion using a vague word ("fast", "robust", "user-friendly", ...) without any number; and
    TBD/TODO/FIXME/??? placeholders left in the source outside code blocks. Criteria written in EARS
    ("When ..., the system shall ...") or Gherkin (Given/When/Then) form count as observable and are
    not checked for vague words; plain criteria are equally acceptable.

    Args:
        doc: The parsed document.
        text: The PRD source the document was parsed from (for placeholder scanning).

    Returns:
        Findings in a fixed order (document, requirements, features, tasks, source placeholders), each
        ``{"id": "BR-001", "category", "severity": "warning"|"info", "location", "message",
        "challenge_question"}``; messages are at most 300 characters and quote at most 60 characters
        of user text.

    Raises:
        Nothing.
    """
    found: list[tuple[str, str, str, str, str]] = []

    def add(category: str, severity: str, location: str, message: str, question: str) -> None:
        found.append((category, severity, location, message, question))

    if not doc.summary.strip():
        add("users", "warning", "## Summary", "The summary is empty, so nobody can tell who the product serves.",
            "Who will use this, and what problem does it solve for them?")
    elif not _ROLE.search(doc.summary):
        add("users", "warning", "## Summary", "The summary names no user or role.",
            "Who exactly uses this (which role or persona), and what do they do with it?")
    if not doc.goals:
        add("goals", "warning", "## Goals", "No goals are listed.", "What outcome would make this project a success?")
    if not doc.non_goals:
        add("scope", "info", "## Non-Goals", "No non-goals are listed, so the scope has no stated edge.",
            "What will this project deliberately not do?")
    if not doc.requirements:
        add("traceability", "warning", "## Requirements", "No requirements are listed.",
            "Which behaviours must the product have?")
    covered = {r for f in doc.features for r in f.requirements}
    for req in doc.requirements:
        if req.id not in covered:
            add("traceability", "warning", req.id, f"Requirement {req.id} is not referenced by any feature.",
                f"Which feature delivers {req.id}, or should it be dropped?")
    with_tasks = {t.feature_id for t in doc.tasks if t.feature_id}
    for feature in doc.features:
        if not feature.requirements:
            add("traceability", "info", feature.id, f"Feature {feature.id} references no requirement.",
                f"Which requirement does {feature.id} satisfy?")
        if feature.id not in with_tasks:
            add("planning", "warning", feature.id, f"Feature {feature.id} has no tasks.",
                f"Which tasks build {feature.id}?")
    for task in doc.tasks:
        _task_findings(task, add)
    for number, line in _placeholder_lines(text):
        add("placeholders", "info", f"line {number}", f"A placeholder is left in the text: {clip(line, 60)}.",
            "What should this placeholder say?")
    return [{"id": f"BR-{i:03d}", "category": c, "severity": s, "location": loc, "message": _bound(m),
             "challenge_question": _bound(q)} for i, (c, s, loc, m, q) in enumerate(found, start=1)]


def is_structured_criterion(criterion: str) -> bool:
    """Tell whether a criterion is written in EARS or Gherkin form.

    Args:
        criterion: One acceptance criterion.

    Returns:
        True for "When/While/If/Where ..., the ... shall ..." or "The ... shall ..." (EARS) and for
        "Given/When ... then ..." (Gherkin); case is ignored.

    Raises:
        Nothing.
    """
    s = " ".join(criterion.lower().split())
    ears = s.startswith(_EARS_OPENERS) and _SHALL.search(s) is not None
    gherkin = s.startswith(_GHERKIN_OPENERS) and _THEN.search(s) is not None
    return ears or gherkin


def vague_word(criterion: str) -> str | None:
    """Find the vague word that makes a criterion untestable.

    Args:
        criterion: One acceptance criterion.

    Returns:
        The first vague word ("fast", "robust", ...) of a plain criterion that states no number;
        ``None`` for EARS/Gherkin criteria, criteria with a number, and criteria without one.

    Raises:
        Nothing.
    """
    if is_structured_criterion(criterion) or _NUMBER.search(criterion):
        return None
    m = _VAGUE.search(criterion)
    return m.group(1).lower() if m else None


def _task_findings(task: TaskSpec, add: Callable[[str, str, str, str, str], None]) -> None:
    if not task.acceptance_criteria:
        add("testability", "warning", task.id, f"Task {task.id} has no acceptance criteria.",
            f"How will a reviewer know {task.id} is done?")
    for criterion in task.acceptance_criteria:
        word = vague_word(criterion)
        if word:
            add("testability", "warning", task.id,
                f"Criterion {clip(criterion, 60)} of {task.id} uses '{word}' without a measurable threshold.",
                f"What number or observable result would prove '{word}' for {task.id}?")
    if not task.verification:
        add("verification", "warning", task.id, f"Task {task.id} has no verification command.",
            f"Which command proves {task.id} works?")
    if not task.likely_files:
        add("scope", "info", task.id, f"Task {task.id} lists no likely files, so conflicts cannot be predicted.",
            f"Which files will {task.id} most likely change?")


def _placeholder_lines(text: str) -> list[tuple[int, str]]:
    src = SourceLines(text)
    return [(i + 1, line) for i, (line, kind) in enumerate(zip(src.lines, src.kinds, strict=True))
            if kind not in OPAQUE and _PLACEHOLDER.search(CODE_SPAN.sub(" ", line))]


def _bound(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."
