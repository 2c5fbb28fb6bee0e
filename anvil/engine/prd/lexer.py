"""The lexical layer of the PRD format: line classes, blocks, markers and text helpers.

:class:`SourceLines` classifies every line (fenced code, heading, bullet, bold field, prose,
blank), groups lines into blocks and finds the ``[NEEDS DECISION]`` markers; the parser builds the
document on top of it. Every pattern here is anchored or stops at a delimiter, so lexing stays
linear in the input size.
"""

from __future__ import annotations

import re

HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
BULLET = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]+(.*))?$")
_FIELD = re.compile(r"[ \t]*(?:[-*+][ \t]+)?\*\*([^*]{1,60})\*\*(.*)$")
_FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z _/-]*$")
_CHECKBOX = re.compile(r"\[[ xX]\][ \t]+")
# The question stops at the next bracket so an unclosed marker cannot make the scan quadratic.
MARKER = re.compile(r"\[[ \t]*needs[ \t_-]+decision[ \t]*(?:[:\-\u2013\u2014]([^\[\]]*))?\]", re.IGNORECASE)
CODE_SPAN = re.compile(r"`[^`]*`")

SECTIONS = {"summary": "summary", "goals": "goals", "non goals": "non_goals", "nongoals": "non_goals",
            "requirements": "requirements", "open questions": "open_questions", "features": "features",
            "tasks": "tasks"}
SECTION_TITLES = {"summary": "Summary", "goals": "Goals", "non_goals": "Non-Goals", "requirements": "Requirements",
                  "open_questions": "Open Questions", "features": "Features", "tasks": "Tasks"}
# Field names after norm_name(), mapped to the parser's keys.
TASK_FIELDS = {"feature": "feature", "priority": "priority", "type": "type", "task type": "type",
               "likely files": "files", "likely file": "files", "files": "files", "dependencies": "deps",
               "dependency": "deps", "depends on": "deps", "deps": "deps", "acceptance criteria": "criteria",
               "acceptance criterion": "criteria", "acceptance": "criteria", "verification": "verify",
               "verify": "verify", "verification commands": "verify", "verification command": "verify",
               "claims": "claims", "named claims": "claims", "artifacts": "artifacts",
               "artifact assertions": "artifacts"}
FEATURE_FIELDS = {"requirements": "reqs", "requirement": "reqs"}
LIST_FIELDS = ("files", "deps", "criteria", "verify", "reqs", "claims", "artifacts")
NONE_VALUES = frozenset({"", "none", "n/a", "na", "-", "\u2013", "\u2014", "nil", "null", "nothing"})
PLACEHOLDERS = NONE_VALUES | {"none identified", "none yet", "none so far", "none at this time",
                              "no open questions", "no questions"}



def clip(text: str, limit: int = 80) -> str:
    """A quoted, single-line, printable excerpt of user text for a message.

    Args:
        text: User text of any length.
        limit: The most characters kept (before quoting); a cut ends in ``...``.

    Returns:
        The excerpt in single quotes, whitespace collapsed, non-printable characters as ``?``.

    Raises:
        Nothing.
    """
    s = " ".join(text.split())
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return "'" + "".join(c if c.isprintable() else "?" for c in s) + "'"


def cap(text: str, limit: int = 1000) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking a cut with an ellipsis.

    Args:
        text: Any text.
        limit: The most characters returned.

    Returns:
        ``text`` itself when short enough, else its head followed by ``...``.

    Raises:
        Nothing.
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_placeholder(text: str) -> bool:
    """Tell whether an open-question item only says there are none.

    Args:
        text: The item, e.g. "None identified." or "N/A".

    Returns:
        True for placeholders ("None", "None yet", "N/A", "-", ...), case and final "." or "!" ignored.

    Raises:
        Nothing.
    """
    return text.strip().lower().rstrip(".!").strip() in PLACEHOLDERS


def norm_name(text: str) -> str:
    """Normalise a section or field name for lookup.

    Args:
        text: The name as written, e.g. "Non-Goals:" or "Likely_Files".

    Returns:
        Lower case, dashes and underscores as spaces, spaces collapsed, trailing colon dropped.

    Raises:
        Nothing.
    """
    return " ".join(text.lower().replace("-", " ").replace("_", " ").split()).rstrip(":").strip()


def fence_marker(line: str) -> tuple[str, int] | None:
    """Recognise a code fence line (three or more backticks or tildes, indented at most 3 spaces).

    Args:
        line: One source line.

    Returns:
        ``(character, run length)`` for a fence line, else ``None``.

    Raises:
        Nothing.
    """
    s = line.lstrip(" ")
    if len(line) - len(s) > 3 or s[:3] not in ("```", "~~~"):
        return None
    n = len(s) - len(s.lstrip(s[0]))
    if s[0] == "`" and "`" in s[n:]:
        return None
    return s[0], n


def closes_fence(line: str, fence: tuple[str, int]) -> bool:
    """Tell whether ``line`` closes the code block opened by ``fence``.

    Args:
        line: One source line.
        fence: What :func:`fence_marker` returned for the opening line.

    Returns:
        True for a bare fence of the same character that is at least as long.

    Raises:
        Nothing.
    """
    f = fence_marker(line)
    return f is not None and f[0] == fence[0] and f[1] >= fence[1] and not line.strip().strip(f[0])


def heading_text(raw: str | None) -> str:
    """Strip an ATX heading's text of surrounding space and its optional closing ``#`` run.

    Args:
        raw: The text after the opening hashes (``None`` for an empty heading).

    Returns:
        The heading text; "C#" keeps its hash because no space precedes it.

    Raises:
        Nothing.
    """
    s = (raw or "").strip()
    t = s.rstrip("#")
    if t != s and (not t or t[-1] in " \t"):  # a closing sequence, not part of "C#"
        s = t.rstrip()
    return s


def field_of(line: str) -> tuple[str, str] | None:
    """Split a bold field line such as ``**Priority:** high`` or ``- **Type**: docs``.

    Args:
        line: One source line.

    Returns:
        ``(name, value)``, both stripped, or ``None`` when the line is not a field line.

    Raises:
        Nothing.
    """
    m = _FIELD.match(line)
    if not m:
        return None
    name, rest = m.group(1).strip(), m.group(2)
    if name.endswith(":"):
        name = name[:-1].rstrip()
    elif rest.lstrip().startswith(":"):
        rest = rest.lstrip()[1:]
    else:
        return None
    return (name, rest.strip()) if _FIELD_NAME.match(name) else None


def item_text(line: str) -> str:
    """Take the text of a bullet line.

    Args:
        line: A bullet line (any other line is just stripped).

    Returns:
        The text without the bullet and without a leading ``[ ]``/``[x]`` checkbox.

    Raises:
        Nothing.
    """
    m = BULLET.match(line)
    text = (m.group(1) or "").strip() if m else line.strip()
    c = _CHECKBOX.match(text)
    return text[c.end():] if c else text


def unwrap(text: str) -> str:
    """Remove the backticks around a value written as a single code span.

    Args:
        text: A value, possibly a command written in backticks.

    Returns:
        The stripped value, unwrapped only when no other backtick is inside.

    Raises:
        Nothing.
    """
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == "`" and "`" not in s[1:-1]:
        return s[1:-1].strip()
    return s


def prose(lines: list[str]) -> str:
    """Join prose lines into one text.

    A fenced code block left open at the end is closed, so that the text can be rendered in front
    of other content without swallowing it.

    Args:
        lines: Source lines, blank ones included.

    Returns:
        The lines with trailing spaces dropped and blank runs collapsed to one, stripped.

    Raises:
        Nothing.
    """
    out: list[str] = []
    fence: tuple[str, int] | None = None
    for line in lines:
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
        if fence is not None:
            fence = None if closes_fence(line, fence) else fence
        else:
            fence = fence_marker(line)
    if fence is not None:
        out.append(fence[0] * fence[1])
    return "\n".join(out).strip()


def _is_break(line: str) -> bool:
    s = line.replace(" ", "").replace("\t", "")
    return len(s) >= 3 and s[0] in "-*_" and s == s[0] * len(s)


class SourceLines:
    """The lines of a PRD with their kinds, blocks and decision markers.

    Kinds: ``O``/``C`` fence open/close, ``X`` inside a fence, ``B`` blank (or a thematic break),
    ``H`` heading, ``L`` bullet, ``F`` bold field, ``T`` other text. A block is a heading, a field
    line, a bullet with the text lines right after it, or a run of text lines; ``block_of[i]`` is the
    index of the block's first line (``-1`` outside blocks).
    """

    def __init__(self, text: str) -> None:
        if text.startswith("\ufeff"):
            text = text[1:]
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.kinds: list[str] = []
        self.block_of: list[int] = []
        self.markers: list[tuple[int, str, str]] = []  # (line index, question, section title)
        self._contexts: dict[int, str] = {}
        self._lex()

    def _lex(self) -> None:
        fence: tuple[str, int] | None = None
        kinds, block_of, section = self.kinds, self.block_of, ""
        for i, line in enumerate(self.lines):
            if fence is not None:
                closing = closes_fence(line, fence)
                kinds.append("C" if closing else "X")
                fence = None if closing else fence
                block_of.append(-1)
                continue
            fence = fence_marker(line)
            hm = None if fence else HEADING.match(line)
            if fence:
                k = "O"
            elif not line.strip() or _is_break(line):
                k = "B"
            elif hm:
                k = "H"
                if len(hm.group(1)) <= 2:
                    section = section_title(heading_text(hm.group(2))) if len(hm.group(1)) == 2 else ""
            elif BULLET.match(line):
                k = "L"
            else:
                k = "F" if field_of(line) else "T"
            kinds.append(k)
            if k in "OB":
                block_of.append(-1)
                continue
            block_of.append(block_of[i - 1] if k == "T" and i and kinds[i - 1] in "TL" else i)
            for m in MARKER.finditer(CODE_SPAN.sub(" ", line) if "`" in line else line):
                self.markers.append((i, (m.group(1) or "").strip(), section))

    def context(self, index: int) -> str:
        """The context of a marker: the block holding line ``index``.

    Args:
        index: A 0-based line index.

    Returns:
        The block's text joined on one line (bullet and heading marks removed), at most 1000
        characters; ``""`` for a line outside any block.

    Raises:
        IndexError: when ``index`` is out of range.
    """
        start = self.block_of[index]
        if start < 0:
            return ""
        if start not in self._contexts:
            parts: list[str] = []
            j = start
            while j < len(self.lines) and self.block_of[j] == start:
                line, k = self.lines[j], self.kinds[j]
                if j == start and k == "H":
                    parts.append(heading_text(HEADING.match(line).group(2)))  # type: ignore[union-attr]
                else:
                    parts.append(item_text(line) if j == start and k == "L" else line.strip())
                j += 1
            self._contexts[start] = cap(" ".join(p for p in parts if p))
        return self._contexts[start]


def section_title(text: str) -> str:
    """Name a ``##`` section for a decision marker.

    Args:
        text: The heading text.

    Returns:
        The canonical title of a known section ("Non-Goals"), else the text clipped to 80 characters.

    Raises:
        Nothing.
    """
    key = SECTIONS.get(norm_name(text))
    return SECTION_TITLES[key] if key else clip(text)[1:-1]
