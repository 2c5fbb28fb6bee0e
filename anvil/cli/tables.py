"""Plain-text layout for human output: the screen, display width, wrapping, tables and label lists.

Standard library only, and cheap to import: every human command pays for it. Everything shown
comes from data (PRD text, actor names) and goes through :func:`clean` first, so a control or
escape character in a task title can never move the cursor or recolour the terminal.

A :class:`Screen` says how wide the output may be and whether it may use colour: on a terminal,
its width (``COLUMNS`` wins) and colour unless ``NO_COLOR`` is set or ``TERM=dumb``; piped, the
width ``COLUMNS`` gives or no limit at all (one row per line, for grep and scripts), and no
colour. Tables fit the width by wrapping their text column, then by dropping their least useful
columns; nothing is ever cut without a mark.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple, TextIO

GAP = "  "
STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
          "cyan": "36"}
MIN_TEXT_WIDTH = 16


class Screen(NamedTuple):
    """Where human output goes: its width (None: unlimited) and whether it may use colour."""

    width: int | None
    color: bool
    tty: bool

    def style(self, text: str, *names: str) -> str:
        """``text`` in the named styles (bold, dim, green...), when this screen shows colour."""
        if not self.color or not names or not text:
            return text
        codes = ";".join(STYLES[name] for name in names if name in STYLES)
        return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


def screen_for(stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> Screen:
    """The screen of ``stream`` (stdout by default) under ``env`` (the process environment by default)."""
    stream = sys.stdout if stream is None else stream
    env = os.environ if env is None else env
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    columns = env.get("COLUMNS", "").strip()
    width: int | None = int(columns) if columns.isdigit() and int(columns) > 0 else None
    if tty and width is None:
        try:
            width = os.get_terminal_size(stream.fileno()).columns or 80
        except (OSError, AttributeError, ValueError):
            width = 80
    color = tty and not env.get("NO_COLOR") and env.get("TERM", "") != "dumb"
    return Screen(max(width, 20) if width is not None else None, color, tty)


def clean(value: object, *, newlines: bool = False) -> str:
    """``value`` as text safe to print: control, format and escape characters become ``?``.

    Args:
        value: anything; None is ``-``.
        newlines: keep line breaks (blocks of text); otherwise they become spaces (cells).

    Returns:
        Printable text.
    """
    text = "-" if value is None else str(value)
    if text.isascii() and text.isprintable():
        return text
    out = []
    for char in text:
        if char == "\n":
            out.append("\n" if newlines else " ")
        elif char == "\t":
            out.append("    " if newlines else " ")
        elif char.isprintable():
            out.append(char)
        else:
            out.append("?")
    return "".join(out)


def width_of(text: str) -> int:
    """How many terminal columns ``text`` takes (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    import unicodedata

    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def _cut(word: str, width: int) -> tuple[str, str]:
    """The longest head of ``word`` that fits ``width`` columns, and the rest."""
    if word.isascii():
        return word[:width], word[width:]
    used = 0
    for index, char in enumerate(word):
        used += width_of(char)
        if used > width:
            return word[:max(index, 1)], word[max(index, 1):]
    return word, ""


def wrap(text: str, width: int | None) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words (a word longer than a
    line is split). Line breaks in ``text`` are kept; None means no limit."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        if width is None or width_of(paragraph) <= width:
            lines.append(paragraph.rstrip())
            continue
        line, used = "", 0
        for word in paragraph.split():
            size = width_of(word)
            if line and used + 1 + size <= width:
                line, used = f"{line} {word}", used + 1 + size
                continue
            if line:
                lines.append(line)
                line, used = "", 0
            while size > width:
                head, word = _cut(word, width)
                lines.append(head)
                size = width_of(word)
            line, used = word, size
        lines.append(line)
    return lines


def pad(text: str, width: int) -> str:
    return text + " " * max(width - width_of(text), 0)


class Column(NamedTuple):
    """One column of a table: its header, the output key it shows, and how it gives way.

    ``text`` columns wrap to fit (at least :data:`MIN_TEXT_WIDTH` wide); ``drop`` ranks the
    columns removed, lowest first, when the table still does not fit (0: never dropped).
    ``style`` maps a cell's value to a style name (e.g. status colours).
    """

    header: str
    key: str
    text: bool = False
    drop: int = 0
    style: Mapping[str, str] | None = None


def _fit(columns: list[Column], widths: dict[str, int], limit: int | None) -> tuple[list[Column], dict[str, int]]:
    """The columns kept and their widths, so the table fits ``limit`` columns when it can."""
    kept = list(columns)
    while True:
        sizes = {c.key: widths[c.key] for c in kept}
        total = sum(sizes.values()) + len(GAP) * (len(kept) - 1)
        if limit is None or total <= limit:
            return kept, sizes
        texts = [c for c in kept if c.text]
        fixed = sum(sizes[c.key] for c in kept if not c.text) + len(GAP) * (len(kept) - 1)
        room = limit - fixed
        if texts and room >= MIN_TEXT_WIDTH * len(texts):
            share = room // len(texts)
            for column in texts:
                sizes[column.key] = min(sizes[column.key], max(share, MIN_TEXT_WIDTH))
            return kept, sizes
        droppable = [c for c in kept if c.drop]
        if not droppable:
            for column in texts:  # last resort: the text shares whatever is left
                sizes[column.key] = max(room // max(len(texts), 1), 8)
            return kept, sizes
        kept.remove(min(droppable, key=lambda c: c.drop))


def table(rows: Sequence[Mapping[str, str]], columns: Sequence[Column], screen: Screen,
          title: str | None = None) -> list[str]:
    """A table of ``rows`` (each a mapping of column key to already cleaned text) fitted to ``screen``."""
    cells = [{c.key: clean(row.get(c.key, "")) for c in columns} for row in rows]
    widths = {c.key: max([width_of(c.header)] + [width_of(cell[c.key]) for cell in cells]) for c in columns}
    kept, sizes = _fit(list(columns), widths, screen.width)
    out: list[str] = []
    if title:
        out.extend(screen.style(line, "bold") for line in wrap(clean(title), screen.width))
    out.append(GAP.join(screen.style(pad(c.header, sizes[c.key]), "bold") for c in kept).rstrip())
    for cell in cells:
        parts = {c.key: wrap(cell[c.key], sizes[c.key]) if c.text else [cell[c.key]] for c in kept}
        height = max(len(lines) for lines in parts.values())
        for index in range(height):
            line = []
            for c in kept:
                value = parts[c.key][index] if index < len(parts[c.key]) else ""
                shown = pad(value, sizes[c.key])
                style = (c.style or {}).get(cell[c.key]) if index == 0 else None
                line.append(screen.style(shown, style) if style else shown)
            out.append(GAP.join(line).rstrip())
    return out


def pairs(items: Sequence[tuple[str, str]], screen: Screen, *, label_style: str = "bold") -> list[str]:
    """``label  value`` lines with the labels aligned; long values wrap under themselves."""
    if not items:
        return []
    label_width = min(max(width_of(label) for label, _ in items), 24)
    value_width = None if screen.width is None else screen.width - label_width - len(GAP)
    out: list[str] = []
    for label, value in items:
        text = clean(value, newlines=True)
        if value_width is not None and value_width < MIN_TEXT_WIDTH:
            out.append(screen.style(label, label_style))
            out.extend("  " + line for line in wrap(text, max(screen.width - 2, 8) if screen.width else None))
            continue
        lines = wrap(text, value_width) or [""]
        head = pad(label, label_width)
        out.append(f"{screen.style(head, label_style)}{GAP}{lines[0]}".rstrip())
        out.extend((" " * (label_width + len(GAP)) + line).rstrip() for line in lines[1:])
    return out


def paragraph(text: str, screen: Screen, indent: str = "") -> list[str]:
    """Cleaned ``text`` wrapped to the screen, every line indented by ``indent``."""
    width = None if screen.width is None else max(screen.width - len(indent), 8)
    return [(indent + line).rstrip() for line in wrap(clean(text, newlines=True), width)]
