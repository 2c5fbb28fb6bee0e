"""The parsed form of a PRD: plain dataclasses that serialize to canonical JSON.

The parser (``parser.py``) builds these from markdown, the renderer (``render.py``) turns them
back into markdown, and the planner reads them. ``to_dict`` gives the JSON form stored in events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil.engine.vocab import Severity


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One located finding of the parser; errors block persisting, warnings do not."""

    severity: Severity
    line: int  # 1-based line of the source; 0 when the finding concerns the whole document
    code: str  # stable machine code, e.g. "missing_project_heading", "duplicate_task_id"
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "line": self.line, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class Requirement:
    id: str  # "R001"
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Feature:
    id: str  # "F001"
    title: str
    description: str  # prose under the heading, blank lines collapsed, stripped
    requirements: tuple[str, ...]  # requirement ids, in source order
    line: int


@dataclass(frozen=True, slots=True)
class TaskSpec:
    id: str  # "T001"
    title: str
    feature_id: str | None
    priority: str  # one of PRIORITIES; "medium" when absent
    type: str | None  # free label such as "feature", "test", "docs"
    likely_files: tuple[str, ...]
    dependencies: tuple[str, ...]  # task ids, in source order, no duplicates
    acceptance_criteria: tuple[str, ...]
    verification: tuple[str, ...]  # shell commands
    description: str  # prose that is not a field line
    line: int
    # The evidence contract beyond the verification commands (see docs/prd-format.md): named
    # claims, each proven by passing proofs of its commands, and paths the work must change.
    claims: tuple[NamedClaim, ...] = ()
    artifacts: tuple[str, ...] = ()
    # What was written after a verification command (`` `pytest -q` (the live suites) ``), per command.
    verification_notes: tuple[CommandNote, ...] = ()
    # Tasks this one must not run beside though they share no likely file (``**Conflicts:**``).
    conflicts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CommandNote:
    """The note a PRD gives beside one of a task's verification commands."""

    command: str
    note: str


@dataclass(frozen=True, slots=True)
class NamedClaim:
    """A claim a task's evidence must prove: its name and the commands whose passing proofs prove it."""

    name: str
    commands: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DecisionMarker:
    """An inline ``[NEEDS DECISION: question]`` marker."""

    question: str  # "" when the marker has no question
    line: int
    section: str  # title of the enclosing ``##`` section, "" before the first one
    context: str  # the paragraph or list item holding the marker, stripped


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class PrdDocument:
    project_name: str
    summary: str
    goals: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    requirements: tuple[Requirement, ...] = ()
    open_questions: tuple[OpenQuestion, ...] = ()
    features: tuple[Feature, ...] = ()
    tasks: tuple[TaskSpec, ...] = ()
    decisions: tuple[DecisionMarker, ...] = ()
    # The PRD-wide lists of ``## Acceptance Criteria``, ``## Assumptions`` and ``## Risks``.
    acceptance_criteria: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: nested dataclasses as dicts (what ``dataclasses.asdict`` gives, faster)."""
        return _plain(self)  # type: ignore[no-any-return]

    def stored_dict(self) -> dict[str, Any]:
        """The form recorded with a revision: :meth:`to_dict` without the sections and task fields
        added since documents were first recorded while they are empty, so a PRD that uses none of
        them is recorded exactly as before they existed (and reads back with their defaults)."""
        data = self.to_dict()
        for key in LATER_SECTIONS:
            if not data[key]:
                del data[key]
        data["tasks"] = tuple({k: v for k, v in task.items() if v or k not in LATER_TASK_FIELDS[2:]}
                              for task in data["tasks"])
        return data

    def material_dict(self) -> dict[str, Any]:
        """The content that matters for approval: everything except source line numbers.

        Sections and fields added since digests were first taken are left out while empty, so a PRD
        without them keeps the material digest it had before they existed."""
        return _strip_lines(self.stored_dict())


@dataclass(slots=True)
class ParseResult:
    document: PrdDocument | None  # None only when nothing usable could be read
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def ok(self) -> bool:
        return self.document is not None and not self.errors


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``value`` with its dataclasses as dicts, as ``dataclasses.asdict`` would give it. Strings and
    numbers are immutable, so tuples of them are shared rather than copied (a document is a tree
    of frozen dataclasses, tuples and strings, so nothing else needs a copy)."""
    cls = type(value)
    if cls is tuple:
        return tuple(_plain(v) for v in value) if value and hasattr(value[0], "__dataclass_fields__") else value
    names = _FIELD_NAMES.get(cls)
    if names is None:
        fields = getattr(cls, "__dataclass_fields__", None)
        if fields is None:
            return value
        names = _FIELD_NAMES[cls] = tuple(fields)
    return {name: _plain(getattr(value, name)) for name in names}


LATER_SECTIONS = ("acceptance_criteria", "assumptions", "risks")
"""Document sections read since material digests exist (left out of the digest while empty)."""
LATER_TASK_FIELDS = ("claims", "artifacts", "verification_notes", "conflicts")
"""Task fields read since material digests exist (left out of the digest while empty; the last two,
read since issue 22, are also left out of the recorded document while empty)."""


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items()
                if k != "line" and not (k in LATER_TASK_FIELDS and not v)}
    if isinstance(value, (list, tuple)):
        return [_strip_lines(v) for v in value]
    return value
