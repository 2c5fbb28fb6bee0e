"""Human output through Rich: the screen, tables that give way column by column, label lists.

A :class:`Screen` is the layout the rules of docs/architecture.md ("Human output") give a stream:
its width (None: piped without ``COLUMNS``, nothing wraps), colour (``NO_COLOR``, ``FORCE_COLOR``,
``TERM=dumb``) and whether it is laid out for a terminal. Renderers build items (text lines,
:class:`rich.text.Text`, Rich tables) and :func:`lines` prints them; Rich loads only there, so
``--json`` never pays for it. Everything shown comes from data and goes through :func:`clean`
first, so a control or escape character in a task title can never move the cursor.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TextIO

STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
          "cyan": "36"}
MIN_TEXT_WIDTH = 16
GAP = 2
UNLIMITED = 100_000  # the layout width of piped output without COLUMNS: nothing wraps


class Screen(NamedTuple):
    """Where human output goes: its width (None: unlimited), whether it may use colour, and whether it
    is laid out for a terminal (rendered markdown, folded text)."""

    width: int | None
    color: bool
    tty: bool

    def style(self, text: str, *names: str) -> str:
        """``text`` in the named styles as ANSI codes, when this screen shows colour (help screens)."""
        codes = ";".join(STYLES[name] for name in names if name in STYLES)
        return f"\x1b[{codes}m{text}\x1b[0m" if self.color and codes and text else text


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


def wrap(text: str, width: int | None) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between words (for the help screens)."""
    import textwrap

    return [line for paragraph in text.split("\n") for line in
            ((textwrap.wrap(paragraph, width, break_on_hyphens=False) or [""]) if width and len(paragraph) > width
             else [paragraph.rstrip()])]


class Raw(str):
    """Text printed exactly as it is when piped (markdown stays markdown), folded to a terminal's width."""


def styled(text: object, *names: str, fold: bool = True) -> Any:
    """Cleaned ``text`` in the named Rich styles (``bold``, ``dim``, ``green``...); ``fold=False``: never
    folded (a line naming a command: the terminal wraps it, and it pastes whole)."""
    from rich.text import Text

    return Text(clean(text), style=" ".join(n for n in names if n), no_wrap=not fold or None)


def hint(text: object) -> Any:
    return styled(text, "dim", fold=False)


def renderable(item: Any) -> Any:
    """An item of a renderer's output as Rich renders it (a text line becomes cleaned text)."""
    from rich.text import Text

    return Text(clean(item, newlines=True)) if isinstance(item, str) else item


def console(screen: Screen, file: TextIO) -> Any:
    """A Rich console writing ``screen``'s layout to ``file``: no markup, no guessing from the environment."""
    from rich.console import Console

    return Console(file=file, width=screen.width or UNLIMITED, color_system="standard" if screen.color else None,
                   force_terminal=screen.color or None, highlight=False, markup=False, emoji=False,
                   soft_wrap=screen.width is None, legacy_windows=False, _environ={})


def lines(items: Sequence[Any], screen: Screen) -> list[str]:
    """The printed lines of ``items`` (text lines and Rich renderables) on ``screen``."""
    if all(isinstance(item, Raw) for item in items) and not screen.tty:
        return [line for item in items for line in item.split("\n")]  # verbatim: no Rich needed
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
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    cells = [{c.key: clean(row.get(c.key, "")) for c in columns} for row in rows]
    widths = {c.key: max([cell_len(c.header)] + [cell_len(cell[c.key]) for cell in cells]) for c in columns}
    kept = list(columns)  # the least useful go before a text column is squeezed (Rich would shred every cell)
    while screen.width is not None and [c for c in kept if c.drop] and screen.width < GAP * (len(kept) - 1) + sum(
            min(widths[c.key], MIN_TEXT_WIDTH) if c.text else widths[c.key] for c in kept):
        kept.remove(min((c for c in kept if c.drop), key=lambda c: c.drop))
    grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
    for c in kept:
        grid.add_column(c.header, no_wrap=not c.text, overflow="fold" if c.text else "ellipsis",
                        min_width=min(widths[c.key], MIN_TEXT_WIDTH) if c.text else widths[c.key])
    for cell in cells:
        grid.add_row(*(Text(cell[c.key], style=(c.style or {}).get(cell[c.key], "")) for c in kept))
    return ([styled(title, "bold")] if title else []) + [grid]


def pairs(items: Sequence[tuple[str, Any]], screen: Screen, *, label_style: str = "bold", gap: int = GAP) -> list[Any]:
    """``label  value`` rows with the labels aligned (never wrapped); long values fold under themselves."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, gap, 0, 0))
    grid.add_column(style=label_style, max_width=24, overflow="fold")
    grid.add_column(overflow="fold")
    for label, value in items:
        grid.add_row(Text(clean(label)), Text(clean(value, newlines=True)) if isinstance(value, str) else value)
    return [grid] if items else []


def paragraph(text: Any, screen: Screen, indent: str = "") -> list[Any]:
    """``text`` (cleaned, or already styled) wrapped to the screen, every line indented by ``indent``."""
    from rich.padding import Padding

    body = renderable(text)
    return [Padding(body, (0, 0, 0, len(indent)), expand=False) if indent else body]
