"""The parsed form of a PRD: plain dataclasses that serialize to canonical JSON.

The parser (``parser.py``) builds these from markdown, the renderer (``render.py``) turns them
back into markdown, and the planner reads them. ``to_dict`` gives the JSON form stored in events.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
        return asdict(self)


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (tuples become lists)."""
        return asdict(self)

    def material_dict(self) -> dict[str, Any]:
        """The content that matters for approval: everything except source line numbers."""
        return _strip_lines(self.to_dict())


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


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        # Empty contract fields are left out, so a PRD without them keeps the digest it had before.
        return {k: _strip_lines(v) for k, v in value.items()
                if k != "line" and not (k in ("claims", "artifacts") and not v)}
    if isinstance(value, (list, tuple)):
        return [_strip_lines(v) for v in value]
    return value
