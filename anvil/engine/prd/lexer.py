"""The lexical layer of the PRD format: line classes, blocks, markers and text helpers.

:class:`SourceLines` classifies every line (code, HTML, heading, bullet, bold field, prose,
blank) on top of the CommonMark block structure (:mod:`anvil.engine.prd.blocks`), groups lines
into blocks and finds the ``[NEEDS DECISION]`` markers; the parser builds the document on top of
it. Every pattern here is anchored or stops at a delimiter, so lexing stays linear in the input
size.
"""

from __future__ import annotations

import re

from anvil.engine.prd.blocks import scan

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
            "tasks": "tasks", "acceptance criteria": "acceptance_criteria", "assumptions": "assumptions",
            "risks": "risks", "risks and mitigations": "risks"}
SECTION_TITLES = {"summary": "Summary", "goals": "Goals", "non_goals": "Non-Goals", "requirements": "Requirements",
                  "acceptance_criteria": "Acceptance Criteria", "assumptions": "Assumptions", "risks": "Risks",
                  "open_questions": "Open Questions", "features": "Features", "tasks": "Tasks"}
# Field names after norm_name(), mapped to the parser's keys.
TASK_FIELDS = {"feature": "feature", "priority": "priority", "type": "type", "task type": "type",
               "likely files": "files", "likely file": "files", "files": "files", "dependencies": "deps",
               "dependency": "deps", "depends on": "deps", "deps": "deps", "acceptance criteria": "criteria",
               "acceptance criterion": "criteria", "acceptance": "criteria", "verification": "verify",
               "verify": "verify", "verification commands": "verify", "verification command": "verify",
               "claims": "claims", "named claims": "claims", "artifacts": "artifacts",
               "artifact assertions": "artifacts", "conflicts": "conflicts", "conflicts with": "conflicts",
               "conflict with": "conflicts"}
FEATURE_FIELDS = {"requirements": "reqs", "requirement": "reqs"}
LIST_FIELDS = ("files", "deps", "criteria", "verify", "reqs", "claims", "artifacts", "conflicts")
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

    Args:
        lines: Source lines, blank ones included (a fence or HTML block that ended without its closing
            line already has the closing line after it, see :attr:`SourceLines.closers`).

    Returns:
        The lines with trailing spaces dropped and blank runs collapsed to one, stripped.

    Raises:
        Nothing.
    """
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


OPAQUE = "OCXKM"
"""Kinds of lines whose text is never read as structure: code (fenced or indented) and HTML blocks."""
_MARKER_WORD = re.compile("decision", re.IGNORECASE)
# What closes an HTML block of types 2 to 5 (the table index of ``blocks._HTML``); type 1 names its tag.
_HTML_CLOSERS = ("", "-->", "?>", ">", "]]>")
_RAW_TAG = re.compile(r"[ \t]*<([A-Za-z]+)")


class SourceLines:
    """The lines of a PRD with their kinds, blocks and decision markers.

    The block structure comes from :func:`anvil.engine.prd.blocks.scan` (CommonMark); this class
    reads its text lines the PRD way. Kinds: ``O``/``C``/``X`` fence open/close/content, ``K``
    indented code, ``M`` HTML block, ``B`` blank (or a thematic break), ``H`` heading (ATX, outside
    any list or quote), ``L`` bullet, ``F`` bold field, ``P`` a later paragraph of a list item,
    ``T`` other text (a block quote's lines included). A block is a heading, a field line, a bullet
    with the text lines right after it, or a run of text lines; ``block_of[i]`` is the index of the
    block's first line (``-1`` outside blocks). ``fields[i]`` is what :func:`field_of` says of a
    field line, or of a bullet holding ``**``. ``closers[i]`` is the line that closes a code fence
    or HTML block ending at line ``i`` without its closing line (its list item or the text ended),
    so that text holding it can be written out again without swallowing what follows.
    """

    def __init__(self, text: str) -> None:
        if text.startswith("\ufeff"):
            text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.lines = text.split("\n")
        self.blocks = scan(self.lines)
        self.kinds: list[str] = []
        self.block_of: list[int] = []
        self.fields: dict[int, tuple[str, str] | None] = {}
        self.closers: dict[int, str] = {}
        self.markers: list[tuple[int, str, str]] = []  # (line index, question, section title)
        self._contexts: dict[int, str] = {}
        self._lex()
        for last, first in self.blocks.ended.items():
            self.closers[last] = self._closer(first)
        if _MARKER_WORD.search(text):
            self._find_markers(text)

    def _lex(self) -> None:
        kinds, block_of, fields = self.kinds, self.block_of, self.fields
        append, mark = kinds.append, block_of.append
        underlines = {u for _, u, _ in self.blocks.setext}
        previous = "B"
        for i, (line, c) in enumerate(zip(self.lines, self.blocks.classes, strict=True)):
            if c in "PpczL":
                s = line.lstrip(" \t")
                head = s[:1]
                if c == "L" or head and head in "-*+0123456789" and BULLET.match(line):
                    k = "L"
                    if "**" in s:
                        fields[i] = field_of(line)
                elif head == "*" and s[1:2] == "*" and (found := field_of(line)) is not None:
                    k = "F"
                    fields[i] = found
                else:
                    k = "P" if c == "p" else "T"
            elif c == "B" or c == "S" and i in underlines and line.lstrip()[:1] == "-":
                k = "B"
            elif c in "QNS":
                k = "T"
            else:
                k = c  # H, O, C, X, K, M
            append(k)
            if k in "OCXKMB":
                mark(-1)
            else:
                mark(block_of[i - 1] if k == "T" and previous in "TLP" else i)
            previous = k

    def _closer(self, first: int) -> str:
        """The line closing the fence or HTML block that starts at line ``first``."""
        line = self.lines[first]
        html_type = self.blocks.html_starts.get(first)
        if html_type is None:
            s = line.lstrip(" \t")
            return line[: len(line) - len(s)] + s[0] * (len(s) - len(s.lstrip(s[0])))
        if html_type == 0:
            tag = _RAW_TAG.match(line)
            return f"</{tag.group(1).lower()}>" if tag else ">"
        return _HTML_CLOSERS[html_type]

    def _find_markers(self, text: str) -> None:
        """``[NEEDS DECISION]`` markers outside code, HTML and inline code, with their sections."""
        lines, kinds = self.lines, self.kinds
        ends: list[int] = []
        offset = 0
        for line in lines:
            offset += len(line) + 1
            ends.append(offset)
        candidates: list[int] = []
        j = 0
        for m in _MARKER_WORD.finditer(text):
            while ends[j] <= m.start():
                j += 1
            if not candidates or candidates[-1] != j:
                candidates.append(j)
        section, done = "", 0
        for i in candidates:
            for h in range(done, i + 1):  # the section is named by the last level-1 or -2 heading
                if kinds[h] == "H":
                    hm = HEADING.match(lines[h])
                    if hm and len(hm.group(1)) <= 2:
                        section = section_title(heading_text(hm.group(2))) if len(hm.group(1)) == 2 else ""
            done = i + 1
            line = lines[i]
            if kinds[i] in OPAQUE or kinds[i] == "B":
                continue
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
