"""Diagnostics about a PRD's block structure, and PRDs written in another tool's format.

The parser reads what CommonMark says the text is. These checks say where that differs from
what the author most likely meant, each at the line it concerns: a code fence or HTML comment
never closed (so it runs to the end and hides what follows), a task heading inside an HTML
comment (how authors switch a task off), text underlined as a setext heading, and a document
that is not in anvil's format at all but in Task Master's or spec-kit's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from anvil.engine.prd.lexer import HEADING, SourceLines, clip, field_of, heading_text
from anvil.engine.vocab import Severity

LOOKS_LIKE_TASK = re.compile(r"[Tt][0-9]{1,9}(?![0-9]|[.][0-9])[ \t]*[:.)\-\u2013\u2014][ \t]*\S")
"""A heading text that reads as a task heading: an id, a separator and a title (``T001.1`` is a step)."""
LOOKS_LIKE_FEATURE = re.compile(r"[Ff][0-9]{1,9}(?![0-9]|[.][0-9])[ \t]*[:.)\-\u2013\u2014][ \t]*\S")
_TASK_ID = re.compile(r"[Tt][0-9]{1,9}")
FORMAT_HELP = "`anvil prd template` prints one to start from, and `anvil docs prd-format` describes the format"

Add = Callable[[Severity, int, str, str], None]

# (what was found, how to recognise it) for PRDs in other tools' formats, most specific first.
_TASKS_JSON = re.compile(r"\s*\{\s*\"(?:tasks|master|metadata)\"\s*:")
_FOREIGN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Task Master task file ('# Task ID:' lines)", re.compile(r"#\s*Task ID:\s*\S", re.IGNORECASE)),
    ("a spec-kit tasks.md (a '- [ ] T001 ...' checklist)", re.compile(r"\s*[-*] \[[ xX]\] T[0-9]{3,}\b")),
    ("a spec-kit spec ('# Feature Specification:')",
     re.compile(r"#\s*(?:Feature Specification|Implementation Plan)\s*:", re.IGNORECASE)),
    ("a Task Master PRD (its <context> and <PRD> blocks)", re.compile(r"\s*</?(?:PRD|context)>\s*$")),
    ("a Task Master PRD ('# Overview', '# Core Features', '# Development Roadmap')",
     re.compile(r"#\s*(?:Core Features|Development Roadmap|Logical Dependency Chain)\s*$", re.IGNORECASE)),
)


def block_diagnostics(src: SourceLines, add: Add) -> dict[str, int]:
    """Report unclosed fences and HTML blocks, task headings inside HTML, and setext headings.

    Args:
        src: The lexed PRD.
        add: Records one diagnostic (severity, 1-based line, code, message).

    Returns:
        The ids of tasks whose heading sits inside an HTML block, with that line (1-based), so that a
        dependency on one can say where it went.

    Raises:
        Nothing.
    """
    lines, kinds = src.lines, src.kinds
    unclosed = src.blocks.unclosed
    hidden: dict[str, int] = {}
    for start in src.blocks.html_starts:
        if unclosed is not None and unclosed.line == start:
            continue
        j = start
        while j < len(lines) and kinds[j] == "M" and (j == start or j not in src.blocks.html_starts):
            task = _heading_task(lines[j])
            if task is not None:
                task_id, text = task
                what = "an HTML comment" if lines[start].lstrip().startswith("<!--") else "an HTML block"
                add("warning", j + 1, "commented_out_task",
                    f"task heading {clip(text, 60)} is inside {what} (from line {start + 1}), so it is not read: "
                    "take it out of the comment to plan the task")
                hidden.setdefault(task_id, j + 1)
            j += 1
    if unclosed is not None:
        _unclosed(src, unclosed.line, unclosed.kind, add)
    for first, underline, level in src.blocks.setext:
        mark = lines[underline].strip()[:3]
        add("warning", first + 1, "setext_heading",
            f"{clip(lines[first], 60)} above '{mark}' is a level-{level} heading in CommonMark (GitHub shows it as "
            f"one), but anvil reads only '#' headings, so it is read as text here: write '{'#' * level} ...' for a "
            "heading, or leave a blank line above the line of dashes for a rule")
    return hidden


def _heading_task(line: str) -> tuple[str, str] | None:
    """The task id and heading text of a task heading written inside an HTML block, if the line is one."""
    inner = line.strip()
    if inner.startswith("<!--"):
        inner = inner[4:]
    if inner.endswith("-->"):
        inner = inner[:-3]
    hm = HEADING.match(inner.strip())
    if hm is None:
        return None
    text = heading_text(hm.group(2))
    if not LOOKS_LIKE_TASK.match(text):
        return None
    found = _TASK_ID.match(text)
    return (found.group(0).upper(), text) if found else None


def _unclosed(src: SourceLines, start: int, kind: str, add: Add) -> None:
    """A fence or HTML block open to the end: an error when it hides headings or fields, else a warning."""
    headings = [j for j in range(start + 1, len(src.lines)) if HEADING.match(src.lines[j])]
    fields = sum(1 for j in range(start + 1, len(src.lines)) if field_of(src.lines[j]) is not None)
    comment = kind == "html" and src.lines[start].lstrip().startswith("<!--")
    what = "code fence" if kind == "fence" else "HTML comment" if comment else "HTML block"
    code = "unclosed_fence" if kind == "fence" else "unclosed_html"
    closing = src.closers.get(len(src.lines) - 1, "")
    fix = f"close it with '{clip(closing.strip(), 20)[1:-1]}'" if closing.strip() else "close it"
    if headings or fields:
        first = headings[0] if headings else start
        shown = f"; the first is line {first + 1}, {clip(src.lines[first], 60)}" if headings else ""
        add("error", start + 1, code,
            f"the {what} opened here is never closed, so it runs to the end and hides {len(headings)} heading(s) and "
            f"{fields} field line(s) after it{shown}: {fix}")
    else:
        add("warning", start + 1, code, f"the {what} opened here is never closed and runs to the end of the PRD: {fix}")


def foreign_format(lines: list[str]) -> tuple[str, int] | None:
    """Recognise a PRD written in another tool's format.

    Args:
        lines: The PRD's lines.

    Returns:
        ``(what was found, 1-based line of the first sign of it)``, or ``None``.

    Raises:
        Nothing.
    """
    if _TASKS_JSON.match("\n".join(lines[:20])):
        return "a Task Master tasks.json", 1
    for what, pattern in _FOREIGN:
        for i, line in enumerate(lines[:5000]):
            if pattern.match(line):
                return what, i + 1
    return None
