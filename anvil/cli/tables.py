"""Human output through Rich: the screen, tables that give way column by column, label lists.

A :class:`Screen` is the layout the rules of docs/architecture.md ("Human output") give a stream:
its width (None: piped without ``COLUMNS``, nothing wraps), colour (``NO_COLOR``, ``FORCE_COLOR``,
``TERM=dumb``) and whether it is laid out for a terminal. Renderers build items (text lines and this
module's :class:`Styled`, :class:`Grid`, :class:`Pairs` and :class:`Indented`, or Rich renderables) and
:func:`lines` prints them; Rich loads only there, so ``--json`` never pays for it, and piped output
without a width or colour is laid out without Rich where the two agree (:func:`plain_lines`).
Everything shown comes from data and goes through :func:`clean` first, so a control or escape
character in a task title can never move the cursor.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TextIO

MIN_TEXT_WIDTH = 16
GAP = 2
UNLIMITED = 100_000  # the layout width of piped output without COLUMNS: nothing wraps


class Screen(NamedTuple):
    """Where human output goes: its width (None: unlimited), whether it may use colour, and whether it
    is laid out for a terminal (rendered markdown, folded text)."""

    width: int | None
    color: bool
    tty: bool


def screen_for(stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> Screen:
    """The screen of ``stream`` (stdout by default) under ``env`` (the process environment by default)."""
    stream = sys.stdout if stream is None else stream
    env = os.environ if env is None else env
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    forced = bool(env.get("FORCE_COLOR", "").strip())
    columns = env.get("COLUMNS", "").strip()
    width: int | None = int(columns) if columns.isdigit() and int(columns) > 0 else None
    if tty and width is None:
        try:
            width = os.get_terminal_size(stream.fileno()).columns or 80
        except (OSError, AttributeError, ValueError):
            width = 80
    elif forced and width is None:
        width = 80
    color = not env.get("NO_COLOR") and (forced or (tty and env.get("TERM", "") != "dumb"))
    return Screen(max(width, 20) if width is not None else None, color, tty or forced)


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
        else:
            out.append(char if char.isprintable() else "?")
    return "".join(out)


class Raw(str):
    """Text printed exactly as it is when piped (markdown stays markdown), folded to a terminal's width."""


PLAIN_LIMIT = 50_000
"""The longest line the plain layout writes itself (far under :data:`UNLIMITED`, where Rich would fold)."""


class Styled:
    """A line of cleaned text in Rich styles, made without loading Rich: it becomes a ``rich.text.Text``
    only where it is printed through Rich (``__rich__``), and plain piped output never needs Rich."""

    __slots__ = ("text", "style", "no_wrap")

    def __init__(self, text: str, style: str, no_wrap: bool | None):  # noqa: D107
        self.text, self.style, self.no_wrap = text, style, no_wrap

    def __repr__(self) -> str:
        return f"Styled({self.text!r}, {self.style!r}, {self.no_wrap!r})"

    def __add__(self, other: str) -> Styled:
        """``Text + str``: the text goes on in the same base style (as Rich's ``Text.__add__`` does)."""
        if not isinstance(other, str):
            return NotImplemented
        return Styled(self.text + other, self.style, self.no_wrap)

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(self.text, style=self.style, no_wrap=self.no_wrap)


def styled(text: object, *names: str, fold: bool = True) -> Styled:
    """Cleaned ``text`` in the named Rich styles (``bold``, ``dim``, ``green``...); ``fold=False``: never
    folded (a line naming a command: the terminal wraps it, and it pastes whole)."""
    return Styled(clean(text), " ".join(n for n in names if n), not fold or None)


def hint(text: object) -> Styled:
    return styled(text, "dim", fold=False)


def renderable(item: Any) -> Any:
    """An item of a renderer's output as Rich renders it (a text line becomes cleaned text)."""
    from rich.text import Text

    if isinstance(item, str):
        return Text(clean(item, newlines=True))
    return item.__rich__() if isinstance(item, (Styled, Grid, Pairs, Indented)) else item


def console(screen: Screen, file: TextIO) -> Any:
    """A Rich console writing ``screen``'s layout to ``file``: no markup, no guessing from the environment."""
    from rich.console import Console

    return Console(file=file, width=screen.width or UNLIMITED, color_system="standard" if screen.color else None,
                   force_terminal=screen.color or None, highlight=False, markup=False, emoji=False,
                   soft_wrap=screen.width is None, legacy_windows=False, _environ={})


def lines(items: Sequence[Any], screen: Screen) -> list[str]:
    """The printed lines of ``items`` (text lines, this module's items and Rich renderables) on ``screen``.

    Piped output without a width or colour (what scripts and agents read) is laid out here without
    Rich wherever :func:`plain_lines` can: the same lines Rich prints (a property test holds the two
    equal), without Rich's import and per-cell rendering. Everything else goes through Rich.
    """
    if all(isinstance(item, Raw) for item in items) and not screen.tty:
        return [line for item in items for line in item.split("\n")]  # verbatim: no Rich needed
    if screen.width is not None or screen.color or screen.tty:
        return rich_lines(items, screen)
    out: list[str] = []
    pending: list[Any] = []  # a run of items only Rich lays out
    for item in items:
        plain = plain_lines(item)
        if plain is None:
            pending.append(item)
            continue
        if pending:
            out += rich_lines(pending, screen)
            pending = []
        out += plain
    return out + (rich_lines(pending, screen) if pending else [])


def rich_lines(items: Sequence[Any], screen: Screen) -> list[str]:
    """The printed lines of ``items`` on ``screen``, every one laid out by Rich."""
    import io

    buffer = io.StringIO()
    printer = console(screen, buffer)
    for item in items:
        if isinstance(item, Raw) and not screen.tty:
            buffer.write(item + "\n")
        else:
            shown = renderable(item)
            printer.print(shown, soft_wrap=getattr(shown, "no_wrap", None) is True or None)
    out = buffer.getvalue().split("\n")[:-1]
    return out if screen.color else [line.rstrip() for line in out]


def _plain_text(text: str) -> list[str] | None:
    rows = text.split("\n")
    return [row.rstrip() for row in rows] if all(len(row) < PLAIN_LIMIT for row in rows) else None


def _aligned(text: str) -> bool:
    """Whether Rich lays ``text`` out in a cell one character per column (so padding it here agrees)."""
    return text.isascii() and text.isprintable() and len(text) < PLAIN_LIMIT


def plain_lines(item: Any) -> list[str] | None:
    """The lines of ``item`` as Rich prints it piped (unlimited width, no colour), or None when only Rich
    can say (a Rich renderable, wide or combining characters in a column, a label Rich would fold)."""
    if isinstance(item, Raw):
        return [row.rstrip() for row in item.split("\n")]
    if isinstance(item, str):
        return _plain_text(clean(item, newlines=True))
    if isinstance(item, Styled):
        return _plain_text(item.text)
    if isinstance(item, Indented):
        text = clean(item.body, newlines=True) if isinstance(item.body, str) else (
            item.body.text if isinstance(item.body, Styled) else None)
        if text is None or not all(_aligned(row) or row == "" for row in text.split("\n")):
            return None  # Rich measures the paragraph's width by its cells
        if not any(text.split("\n")):  # Rich lays out a paragraph of no width as no line at all
            return []
        body = _plain_text(text)
        return None if body is None else [(" " * item.indent + row).rstrip() for row in body]
    if isinstance(item, Grid):
        return item.plain()
    if isinstance(item, Pairs):
        return item.plain()
    return None


class Column(NamedTuple):
    """A table column: header, output key, and how it gives way: ``text`` columns wrap between words, the
    others never; ``drop`` ranks the columns removed, lowest first (0: never), before a text column would
    get under :data:`MIN_TEXT_WIDTH`. ``style`` maps a cell's value to a style (status colours)."""

    header: str
    key: str
    text: bool = False
    drop: int = 0
    style: Mapping[str, str] | None = None


def table(rows: Sequence[Mapping[str, str]], columns: Sequence[Column], screen: Screen,
          title: str | None = None) -> list[Any]:
    """A title line and a table of ``rows`` (each a mapping of column key to text) fitted to ``screen``."""
    cells = [{c.key: clean(row.get(c.key, "")) for c in columns} for row in rows]
    if all(_aligned(c.header) for c in columns) and all(_aligned(text) for cell in cells for text in cell.values()):
        widths = {c.key: max([len(c.header)] + [len(cell[c.key]) for cell in cells]) for c in columns}
    else:
        from rich.cells import cell_len

        widths = {c.key: max([cell_len(c.header)] + [cell_len(cell[c.key]) for cell in cells]) for c in columns}
    kept = list(columns)  # the least useful go before a text column is squeezed (Rich would shred every cell)
    while screen.width is not None and [c for c in kept if c.drop] and screen.width < GAP * (len(kept) - 1) + sum(
            min(widths[c.key], MIN_TEXT_WIDTH) if c.text else widths[c.key] for c in kept):
        kept.remove(min((c for c in kept if c.drop), key=lambda c: c.drop))
    return ([styled(title, "bold")] if title else []) + [Grid(kept, cells, widths)]


class Grid:
    """A table from :func:`table`: its kept columns, cleaned cells and content widths (Rich's ``Table``
    is built only where it is printed through Rich)."""

    __slots__ = ("columns", "cells", "widths")

    def __init__(self, columns: list[Column], cells: list[dict[str, str]], widths: dict[str, int]):  # noqa: D107
        self.columns, self.cells, self.widths = columns, cells, widths

    def __repr__(self) -> str:
        return f"Grid({self.columns!r}, {self.cells!r})"

    def __rich__(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
        for c in self.columns:
            width = self.widths[c.key]
            grid.add_column(c.header, no_wrap=not c.text, overflow="fold" if c.text else "ellipsis",
                            min_width=min(width, MIN_TEXT_WIDTH) if c.text else width)
        for cell in self.cells:
            grid.add_row(*(Text(cell[c.key], style=(c.style or {}).get(cell[c.key], "")) for c in self.columns))
        return grid

    def plain(self) -> list[str] | None:
        """The rows padded to their columns, as Rich prints them piped; None when a text needs Rich."""
        if not all(_aligned(c.header) for c in self.columns) or not all(
                _aligned(cell[c.key]) for cell in self.cells for c in self.columns):
            return None
        widths = [self.widths[c.key] for c in self.columns]
        gap = " " * GAP
        header = gap.join(c.header.ljust(w) for c, w in zip(self.columns, widths, strict=True)).rstrip()
        return [header] + [gap.join(cell[c.key].ljust(w) for c, w in zip(self.columns, widths, strict=True)).rstrip()
                           for cell in self.cells]


def pairs(items: Sequence[tuple[str, Any]], screen: Screen, *, label_style: str = "bold", gap: int = GAP) -> list[Any]:
    """``label  value`` rows with the labels aligned (never wrapped); long values fold under themselves."""
    return [Pairs(list(items), label_style, gap)] if items else []


LABEL_WIDTH = 24
"""The widest label of :func:`pairs` before it folds."""


class Pairs:
    """The label list of :func:`pairs` (Rich's grid is built only where it is printed through Rich)."""

    __slots__ = ("items", "label_style", "gap")

    def __init__(self, items: list[tuple[str, Any]], label_style: str, gap: int):  # noqa: D107
        self.items, self.label_style, self.gap = items, label_style, gap

    def __repr__(self) -> str:
        return f"Pairs({self.items!r})"

    def __rich__(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, self.gap, 0, 0))
        grid.add_column(style=self.label_style, max_width=LABEL_WIDTH, overflow="fold")
        grid.add_column(overflow="fold")
        for label, value in self.items:
            grid.add_row(Text(clean(label)), Text(clean(value, newlines=True)) if isinstance(value, str)
                         else renderable(value))
        return grid

    def plain(self) -> list[str] | None:
        """The aligned rows as Rich prints them piped; None when a label or value needs Rich."""
        labels = [clean(label) for label, _ in self.items]
        if not all(_aligned(label) and len(label) <= LABEL_WIDTH for label in labels):
            return None
        values: list[list[str]] = []
        for _, value in self.items:
            text = clean(value, newlines=True) if isinstance(value, str) else (
                value.text if isinstance(value, Styled) else None)
            if text is None or not all(len(row) < PLAIN_LIMIT for row in text.split("\n")):
                return None
            values.append(text.split("\n"))
        width = max(len(label) for label in labels)
        gap = " " * self.gap
        out: list[str] = []
        for label, rows in zip(labels, values, strict=True):
            out += [((label if index == 0 else "").ljust(width) + gap + row).rstrip() for index, row in enumerate(rows)]
        return out


def paragraph(text: Any, screen: Screen, indent: str = "") -> list[Any]:
    """``text`` (cleaned, or already styled) wrapped to the screen, every line indented by ``indent``."""
    return [Indented(text, len(indent))] if indent else [text]


class Indented:
    """A paragraph from :func:`paragraph` indented by ``indent`` columns (Rich's ``Padding`` where printed)."""

    __slots__ = ("body", "indent")

    def __init__(self, body: Any, indent: int):  # noqa: D107
        self.body, self.indent = body, indent

    def __repr__(self) -> str:
        return f"Indented({self.body!r}, {self.indent})"

    def __rich__(self) -> Any:
        from rich.padding import Padding

        return Padding(renderable(self.body), (0, 0, 0, self.indent), expand=False)
