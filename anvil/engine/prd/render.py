"""Render a :class:`PrdDocument` as canonical PRD markdown.

The output uses one fixed layout (section order, field order, spacing) so that rendering a parsed
document and parsing the result again is a fixed point: ``render(parse(render(doc))) == render(doc)``
and the re-parsed document equals ``doc`` apart from line numbers. Decision markers are not rendered
separately; they live inside the text that holds them and are found again by the parser.
"""

from __future__ import annotations

import re

from anvil.engine.prd.model import Feature, PrdDocument, TaskSpec


def render_prd(doc: PrdDocument) -> str:
    """Render ``doc`` as canonical markdown ending with a single newline.

    The Summary section is always written; the other sections only when they have content. Task
    fields come in a fixed order and ``Priority`` is always written.

    Args:
        doc: The document to render.

    Returns:
        The markdown text.

    Raises:
        Nothing for any well-formed ``PrdDocument``.
    """
    out: list[str] = [_heading_line(f"# Project: {_one_line(doc.project_name)}"), "", "## Summary", ""]
    if doc.summary.strip():
        out += [doc.summary.strip(), ""]
    _bullets(out, "Goals", doc.goals)
    _bullets(out, "Non-Goals", doc.non_goals)
    _bullets(out, "Requirements", [f"{r.id}: {r.text}" for r in doc.requirements])
    _bullets(out, "Acceptance Criteria", doc.acceptance_criteria)
    _bullets(out, "Assumptions", doc.assumptions)
    _bullets(out, "Risks", doc.risks)
    _bullets(out, "Open Questions", [q.text for q in doc.open_questions])
    if doc.features:
        out += ["## Features", ""]
        for feature in doc.features:
            _feature(out, feature)
    if doc.tasks:
        out += ["## Tasks", ""]
        for task in doc.tasks:
            _task(out, task)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    # Items are single lines when they come from the parser; a hand-built multi-line value is folded.
    return " ".join(text.split()) if "\n" in text or "\r" in text else text.strip()


def _heading_line(line: str) -> str:
    line = line.rstrip()
    # A trailing "#" would read as an ATX closing sequence; an explicit closing "#" keeps it text.
    return f"{line} #" if line.endswith("#") else line


def _bullets(out: list[str], title: str, items: tuple[str, ...] | list[str]) -> None:
    if items:
        out += [f"## {title}", ""] + [f"- {_one_line(item)}".rstrip() for item in items] + [""]


def _heading(out: list[str], ident: str, title: str, description: str) -> None:
    out += [_heading_line(f"### {ident}: {_one_line(title)}"), ""]
    if description.strip():
        out += [description.strip(), ""]


def _feature(out: list[str], feature: Feature) -> None:
    _heading(out, feature.id, feature.title, feature.description)
    if feature.requirements:
        out += [f"**Requirements:** {', '.join(feature.requirements)}", ""]


def _command(command: str, note: str = "") -> str:
    command, note = _one_line(command), _one_line(note)
    if not note:
        # Backticks inside the command would end the code span early, so such commands stay bare.
        return f"`{command}`" if command and "`" not in command else command
    # With a note after it the command must be a code span; a longer backtick run keeps its own.
    ticks = "`" * (max((len(run) for run in re.findall("`+", command)), default=0) + 1)
    return (f"{ticks}{command}{ticks}" if ticks == "`" else f"{ticks} {command} {ticks}") + f" {note}"


def _task(out: list[str], task: TaskSpec) -> None:
    _heading(out, task.id, task.title, task.description)
    if task.feature_id:
        out.append(f"**Feature:** {task.feature_id}")
    out.append(f"**Priority:** {task.priority}")
    if task.type:
        out.append(f"**Type:** {_one_line(task.type)}")
    if task.likely_files:
        out.append(f"**Likely files:** {', '.join(_one_line(f) for f in task.likely_files)}")
    if task.dependencies:
        out.append(f"**Dependencies:** {', '.join(task.dependencies)}")
    if task.conflicts:
        out.append(f"**Conflicts:** {', '.join(task.conflicts)}")
    if task.acceptance_criteria:
        out.append("**Acceptance criteria:**")
        out += [f"- {_one_line(c)}".rstrip() for c in task.acceptance_criteria]
    if task.verification:
        notes = {n.command: n.note for n in task.verification_notes}
        out.append("**Verification:**")
        out += [f"- {_command(v, notes.get(v, ''))}".rstrip() for v in task.verification]
    if task.claims:
        out.append("**Claims:**")
        out += [f"- {c.name}: " + ", ".join(f"`{x}`" for x in c.commands) for c in task.claims]
    if task.artifacts:
        out.append("**Artifacts:**")
        out += [f"- `{a}`" for a in task.artifacts]
    out.append("")
