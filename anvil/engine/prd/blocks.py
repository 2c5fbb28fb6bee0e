"""The CommonMark block structure of a PRD's lines, in one linear pass and the standard library only.

:func:`scan` follows the block-parsing strategy of the CommonMark specification (0.31): for each
line it first continues the open containers (block quotes, list items), then looks for new
block starts (block quote, ATX heading, code fence, HTML block, setext underline, thematic
break, list item, indented code), and otherwise continues or starts a paragraph, lazily when
the containers did not match. Tabs count to the next multiple of four columns where they make
structure. What it reports is each line's block class, which is all the PRD reader needs:
code and HTML are opaque, headings outside containers are structure, everything else is text
it reads with its own field and bullet rules. ``tests/engine/prd/test_blocks.py`` compares the
classes with markdown-it-py's tokens on generated documents (the reference tokenizer; it is
not imported here, parsing through it costs several times the whole parse, see
``docs/architecture.md``).

Classes (one character per line):

``B`` blank or thematic break, ``H`` ATX heading outside any container, ``N`` heading inside
one, ``O``/``C``/``X`` code fence opening, closing and content, ``K`` indented code, ``M`` HTML
block, ``Q`` inside a block quote, ``L`` the first line of a list item, ``P`` the first line of
a paragraph (``p`` inside a list item), ``c`` a paragraph's next line, ``z`` a lazy continuation line, ``S`` a setext
heading underline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r"(`{3,})(?!.*`)|(~{3,})")
_CLOSING = re.compile(r"(`{3,}|~{3,})[ \t]*$")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|(?:-[ \t]*){3,})$")
_BULLET = re.compile(r"[*+-]")
_ORDERED = re.compile(r"([0-9]{1,9})[.)]")
_BLOCK_NAMES = ("address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
                "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|"
                "hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|"
                "section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul")
_ATTRIBUTE = r"""(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>`\x00-\x20]+|'[^']*'|"[^"]*"))?)"""
# (opening pattern, closing pattern or None for "ends at a blank line", may interrupt a paragraph)
_HTML: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, bool], ...] = (
    (re.compile(r"<(?:script|pre|style|textarea)(?:\s|>|$)", re.IGNORECASE),
     re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE), True),
    (re.compile(r"<!--"), re.compile(r"-->"), True),
    (re.compile(r"<\?"), re.compile(r"\?>"), True),
    (re.compile(r"<![A-Za-z]"), re.compile(r">"), True),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>"), True),
    (re.compile(f"</?(?:{_BLOCK_NAMES})(?:\\s|/?>|$)", re.IGNORECASE), None, True),
    (re.compile(f"(?:<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*\\s*/?>|</[A-Za-z][A-Za-z0-9-]*\\s*>)\\s*$"), None, False),
)
COMMENT = 1
"""Index in the HTML block table of ``<!--`` comments."""
# Characters that may start something other than paragraph text at a line's first non-space.
_SPECIAL = frozenset("#`~<>-*+_=0123456789")

# After "**" at a line's start, what stops it from being text for sure (a break, a bullet, the end).
_NOT_TEXT = frozenset(("", "*", " ", "\t"))
_QUOTE, _ITEM = 0, 1
_NONE, _PARA, _FENCED, _INDENTED, _HTML_BLOCK = range(5)


@dataclass(slots=True)
class Unclosed:
    """A code fence or HTML block still open at the end of the text: it runs to the end."""

    kind: str  # "fence" or "html"
    line: int  # 0-based index of its first line
    html_type: int = -1  # index into the HTML block table (``COMMENT`` for a comment)


@dataclass(slots=True)
class Blocks:
    """What :func:`scan` found: a class per line, the HTML blocks, and the blocks that ended early."""

    classes: list[str]
    html_starts: dict[int, int] = field(default_factory=dict)  # first line -> HTML block type index
    setext: list[tuple[int, int, int]] = field(default_factory=list)  # (first text line, underline, level)
    # Last line -> first line of each fence or HTML block (types 1 to 5) that ended without its
    # closing line: its container ended, or the text did (then it is also ``unclosed``).
    ended: dict[int, int] = field(default_factory=dict)
    unclosed: Unclosed | None = None


def _next_nonspace(line: str, pos: int, col: int) -> tuple[int, int]:
    """Position and column of the first character at or after ``pos`` (at column ``col``, the start of
    the character there even when a tab is partly consumed) that is not a space or tab."""
    n = len(line)
    while pos < n:
        ch = line[pos]
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
        pos += 1
    return pos, col


def _advance(line: str, pos: int, col: int, partial: int, count: int) -> tuple[int, int, int]:
    """Consume ``count`` columns from ``(pos, col, partial)``; a tab may be left partly consumed."""
    n = len(line)
    while count > 0 and pos < n:
        if line[pos] == "\t":
            width = 4 - col % 4 - partial
            if count < width:
                return pos, col, partial + count
            count -= width
            col += 4 - col % 4
            partial = 0
        else:
            col += 1
            count -= 1
        pos += 1
    return pos, col, partial


def _plain_item(line: str) -> bool:
    """Whether ``line`` (``"- "``, ``"* "`` or ``"+ "`` first) is a list item holding the start of a
    paragraph: its text cannot start another block (a fence, a nested item, a break, HTML, ...)."""
    c2 = line[2:3]
    if not c2 or c2 in " \t":
        return False
    if c2 not in _SPECIAL:
        return True
    if c2 == "`":
        return not line.startswith("```", 2)
    return c2 == "*" and line[3:4] == "*" and line[4:5] not in _NOT_TEXT and line[0] != "*"


def _interrupts(line: str, pos: int) -> bool:
    """Whether the text at ``pos`` starts a block that ends a paragraph (an item's lazy line test)."""
    ch = line[pos]
    if ch == "#":
        return _ATX.match(line, pos) is not None
    if ch in "`~":
        return _FENCE.match(line, pos) is not None
    if ch == ">":
        return True
    if ch == "<":
        return any(start.match(line, pos) for start, _, interrupts in _HTML if interrupts)
    if ch in "*-_" and _BREAK.match(line, pos):
        return True
    marker = _BULLET.match(line, pos) if ch in "*+-" else _ORDERED.match(line, pos)
    return marker is not None and (marker.end() == len(line) or line[marker.end()] in " \t")


def scan(lines: list[str]) -> Blocks:
    """Classify every line by the CommonMark block it belongs to (see the module docstring).

    Args:
        lines: The text's lines, without line ends.

    Returns:
        The :class:`Blocks`: ``classes[i]`` for line ``i``, the HTML blocks by first line, setext
        headings, and the fences and HTML blocks still open at the end.

    Raises:
        Nothing.
    """
    out: list[str] = []
    found = Blocks(out)
    # Open containers: [kind, content column relative to the parent, has content, content column].
    stack: list[list[int]] = []
    leaf = _NONE
    fence_char, fence_len = "", 0
    html_close: re.Pattern[str] | None = None
    html_type = -1
    opened = 0  # first line of the open fence or HTML block
    para_start = 0
    append = out.append
    for i, line in enumerate(lines):
        # Fast paths for what most PRD lines are, when no code or HTML block is open: text, a bold
        # field, a bullet or a heading at the first column, and blank lines. Each gives what the
        # general path below would.
        if leaf <= _PARA:
            if not line:
                leaf = _NONE
                for k, container in enumerate(stack):
                    if container[0] == _QUOTE or not container[2]:
                        del stack[k:]
                        break
                append("B")
                continue
            c0 = line[0]
            if c0 not in _SPECIAL and c0 != " " and c0 != "\t" or (
                    c0 == "*" and line[1:2] == "*" and line[2:3] not in _NOT_TEXT):
                if leaf == _PARA:
                    append("c" if not stack else "Q" if any(c[0] == _QUOTE for c in stack) else "z")
                else:
                    stack.clear()
                    leaf, para_start = _PARA, i
                    append("P")
                continue
            if c0 in "-*+" and line[1:2] == " " and _plain_item(line):
                for container in stack:
                    container[2] = 1
                stack.clear()
                stack.append([_ITEM, 2, 1, 2])
                leaf, para_start = _PARA, i
                append("L")
                continue
            if c0 == "#" and _ATX.match(line):
                stack.clear()
                leaf = _NONE
                append("H")
                continue
        pos, col, partial = 0, 0, 0
        n = len(line)
        matched = 0
        depth = len(stack)
        quoted = False
        while matched < depth:
            kind = stack[matched]
            npos, ncol = _next_nonspace(line, pos, col)
            indent = ncol - col - partial
            if kind[0] == _QUOTE:
                if indent <= 3 and npos < n and line[npos] == ">":
                    pos, col, partial = npos + 1, ncol + 1, 0
                    if pos < n and line[pos] in " \t":
                        pos, col, partial = _advance(line, pos, col, partial, 1)
                    matched += 1
                    quoted = True
                    continue
                break
            if npos >= n:  # a blank line continues an item that has content
                if not kind[2]:
                    break
                pos, col, partial = npos, ncol, 0
            elif indent >= kind[1]:
                pos, col, partial = _advance(line, pos, col, partial, kind[1])
            else:
                break
            matched += 1
        all_matched = matched == depth
        # The open leaf, when every container matched.
        if all_matched and leaf == _FENCED:
            npos, ncol = _next_nonspace(line, pos, col)
            m = _CLOSING.match(line, npos) if ncol - col - partial <= 3 and npos < n else None
            if m and line[npos] == fence_char and len(m.group(1)) >= fence_len:
                leaf = _NONE
                append("Q" if quoted else "C")
            else:
                append("Q" if quoted else "X")
            continue
        if all_matched and leaf == _HTML_BLOCK:
            npos, _ = _next_nonspace(line, pos, col)
            if html_close is None and npos >= n:
                leaf = _NONE  # types 6 and 7 end before a blank line
            else:
                if html_close is not None and html_close.search(line, pos):
                    leaf = _NONE
                append("Q" if quoted else "M")
                continue
        if all_matched and leaf == _INDENTED:
            npos, ncol = _next_nonspace(line, pos, col)
            if npos >= n:
                append("B")
                continue
            if ncol - col - partial >= 4:
                append("Q" if quoted else "K")
                continue
            leaf = _NONE
        if not all_matched and leaf in (_FENCED, _HTML_BLOCK, _INDENTED):
            if leaf == _FENCED or leaf == _HTML_BLOCK and html_close is not None:
                found.ended[i - 1] = opened  # closed with its container, before its closing line
            leaf = _NONE
        para_open = leaf == _PARA  # the tip is a paragraph (perhaps in an unmatched container)
        para_here = para_open and all_matched  # ... and it is the current container
        closed = False  # whether a new block closed the unmatched containers
        item_line = False
        result = ""
        while True:
            npos, ncol = _next_nonspace(line, pos, col)
            indent = ncol - col - partial
            blank = npos >= n
            if blank:
                break
            ch = line[npos]
            if indent >= 4:
                if not para_open:
                    del stack[matched:]
                    closed = True
                    leaf = _INDENTED
                    result = "K"
                break
            if ch not in _SPECIAL:
                break
            if ch == ">":
                del stack[matched:]
                closed, para_open, para_here = True, False, False
                leaf = _NONE
                stack.append([_QUOTE, 0, 1, 0])
                matched = len(stack)
                quoted = True
                pos, col, partial = npos + 1, ncol + 1, 0
                if pos < n and line[pos] in " \t":
                    pos, col, partial = _advance(line, pos, col, partial, 1)
                continue
            if ch == "#" and _ATX.match(line, npos):
                del stack[matched:]
                closed, leaf = True, _NONE
                result = "H" if not stack else "N"
                break
            if ch in "`~":
                m = _FENCE.match(line, npos)
                if m:
                    del stack[matched:]
                    closed, leaf, opened = True, _FENCED, i
                    fence_char, fence_len = ch, len(m.group(1) or m.group(2))
                    result = "O"
                    break
            if ch == "<":
                for number, (start, close, interrupts) in enumerate(_HTML):
                    if start.match(line, npos) and (interrupts or not para_open):
                        del stack[matched:]
                        closed, leaf, opened = True, _HTML_BLOCK, i
                        html_close, html_type = close, number
                        found.html_starts[i] = number
                        result = "M"
                        if close is not None and close.search(line, pos):
                            leaf = _NONE
                        break
                if result:
                    break
            if para_here and ch in "=-" and _SETEXT.match(line, npos):
                leaf = _NONE
                found.setext.append((para_start, i, 1 if ch == "=" else 2))
                result = "S"
                break
            if ch in "*-_" and _BREAK.match(line, npos):
                del stack[matched:]
                closed, leaf = True, _NONE
                result = "B"
                break
            marker = _BULLET.match(line, npos) if ch in "*+-" else _ORDERED.match(line, npos)
            if marker is not None and (ch in "*+-" or not para_here or marker.group(1) == "1"):
                after = marker.end()
                if after < n and line[after] not in " \t":
                    break
                width = after - npos
                tpos, tcol = _next_nonspace(line, after, ncol + width)
                empty = tpos >= n
                if para_here and empty:
                    break
                spaces = tcol - ncol - width
                if empty or spaces >= 5:
                    padding = width + 1
                    spos, scol, spartial = _advance(line, after, ncol + width, 0, 1)
                else:
                    padding = width + spaces
                    spos, scol, spartial = tpos, tcol, 0
                del stack[matched:]
                closed, para_open, para_here = True, False, False
                leaf = _NONE
                for item in stack:
                    if item[0] == _ITEM:
                        item[2] = 1
                stack.append([_ITEM, indent + padding, 0, scol + spartial])
                matched = len(stack)
                item_line = True
                pos, col, partial = spos, scol, spartial
                continue
            break
        if not result:
            npos, _ = _next_nonspace(line, pos, col)
            blank = npos >= n
            if not closed and not all_matched and not blank and leaf == _PARA:
                result = "z"  # a lazy continuation: the containers stay open
            else:
                del stack[matched:]
                if blank:
                    if leaf == _PARA:
                        leaf = _NONE
                    result = "B"
                elif leaf == _PARA and not closed:
                    result = "c"
                else:
                    leaf, para_start = _PARA, i
                    result = "p" if any(item[0] == _ITEM for item in stack) else "P"
        if result not in "BSz":
            for item in stack:
                if item[0] == _ITEM:
                    item[2] = 1
        if quoted or (result == "z" and any(item[0] == _QUOTE for item in stack)):
            result = "Q"
        elif item_line and result not in "OM":
            result = "L"
        append(result)
    if leaf == _FENCED or leaf == _HTML_BLOCK and html_close is not None:
        found.unclosed = Unclosed("fence" if leaf == _FENCED else "html", opened, html_type)
        found.ended[len(lines) - 1] = opened
    return found
