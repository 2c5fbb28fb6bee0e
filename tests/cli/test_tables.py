"""Human layout through Rich: text is made safe, tables fit the screen, piped output is plain and stable."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len as width_of

from anvil.cli.tables import (
    Column,
    Raw,
    Screen,
    clean,
    hint,
    lines,
    pairs,
    paragraph,
    rich_lines,
    screen_for,
    styled,
    table,
)

PLAIN = Screen(None, False, False)


def test_control_and_escape_characters_never_reach_the_terminal() -> None:
    assert clean("red \x1b[31m alert\x07") == "red ?[31m alert?"
    assert clean("right\u202eto left") == "right?to left"
    assert clean("two\nlines") == "two lines" and clean("two\nlines", newlines=True) == "two\nlines"
    assert clean(None) == "-" and clean(3) == "3"


COLUMNS = [Column("id", "id"), Column("status", "status"), Column("feature", "feature", drop=1),
           Column("tier", "tier", drop=2), Column("title", "title", text=True)]
ROWS = [{"id": "T001", "status": "ready", "feature": "F001", "tier": "standard",
         "title": "Daily statistics endpoint for the team lead"},
        {"id": "T002", "status": "needs_review", "feature": "F002", "tier": "max", "title": "URL validation"}]


def test_a_table_is_aligned_without_trailing_spaces() -> None:
    shown = lines(table(ROWS, COLUMNS, PLAIN), PLAIN)
    assert shown[0] == "id    status        feature  tier      title"
    assert shown[1] == "T001  ready         F001     standard  Daily statistics endpoint for the team lead"
    assert all(line == line.rstrip() for line in shown)


def test_a_narrow_screen_wraps_the_text_column_before_dropping_anything() -> None:
    screen = Screen(60, False, True)
    shown = lines(table(ROWS, COLUMNS, screen), screen)
    assert shown[0].split() == ["id", "status", "feature", "tier", "title"]
    assert all(width_of(line) <= 60 for line in shown)
    title = " ".join(line[39:].strip() for line in shown[1:] if not line.startswith("T002"))
    assert title == "Daily statistics endpoint for the team lead" and len(shown) > 3


def test_a_very_narrow_screen_drops_the_least_useful_columns_first() -> None:
    screen = Screen(40, False, True)
    shown = lines(table(ROWS, COLUMNS, screen), screen)
    assert shown[0].split() == ["id", "status", "title"]  # feature went first, then tier
    assert all(width_of(line) <= 40 for line in shown)
    words = " ".join(line[20:] for line in shown[1:]).split()
    assert "Daily" in words and "endpoint" in words  # whole words, none cut in the middle


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("abc 日x"), min_size=1, max_size=40), min_size=1, max_size=5),
       st.integers(30, 120))
def test_a_table_with_a_text_column_always_fits(titles: list[str], width: int) -> None:
    rows = [{**ROWS[0], "title": title} for title in titles]
    screen = Screen(width, False, True)
    assert all(width_of(line) <= width for line in lines(table(rows, COLUMNS, screen), screen))


def test_label_lists_align_labels_and_wrap_values_under_themselves() -> None:
    screen = Screen(40, False, True)
    shown = lines(pairs([("task", "T001"), ("description", "word " * 12)], screen), screen)
    assert shown[0] == "task         T001"
    assert all(width_of(line) <= 40 for line in shown)
    assert shown[2].startswith(" " * 13) and shown[1].startswith("description  word")


def test_colour_only_on_a_terminal_that_wants_it() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert screen_for(io.StringIO(), {}).color is False
    assert screen_for(Tty(), {"COLUMNS": "90"}) == Screen(90, True, True)
    assert screen_for(Tty(), {"COLUMNS": "90", "NO_COLOR": "1"}).color is False
    assert screen_for(Tty(), {"COLUMNS": "90", "TERM": "dumb"}).color is False
    assert screen_for(io.StringIO(), {"COLUMNS": "70"}).width == 70
    assert screen_for(io.StringIO(), {}).width is None  # piped: one row per line
    assert screen_for(io.StringIO(), {"FORCE_COLOR": "1"}) == Screen(80, True, True)
    assert screen_for(io.StringIO(), {"FORCE_COLOR": "1", "COLUMNS": "50", "NO_COLOR": "1"}) == Screen(50, False, True)


@pytest.mark.parametrize("width", [20, 25])
def test_the_smallest_screens_still_show_every_row(width: int) -> None:
    screen = Screen(width, False, True)
    shown = lines(table(ROWS, COLUMNS, screen), screen)
    assert any(line.startswith("T001") for line in shown) and any(line.startswith("T002") for line in shown)


def test_colour_is_ansi_only_where_the_screen_shows_colour() -> None:
    item = [styled("ready", "green", "bold")]
    assert lines(item, Screen(40, True, True)) == ["\x1b[1;32mready\x1b[0m"]
    assert lines(item, Screen(40, False, True)) == lines(item, PLAIN) == ["ready"]


def test_no_line_is_longer_than_the_terminal_and_piped_lines_are_never_folded() -> None:
    value = "word " * 400 + "x" * 300
    folded = lines(pairs([("description", value)], Screen(50, False, True)), Screen(50, False, True))
    assert all(width_of(line) <= 50 for line in folded) and "".join(folded).replace(" ", "").count("x") == 300
    assert len(lines(pairs([("description", value)], PLAIN), PLAIN)) == 1


def test_raw_text_is_verbatim_when_piped_and_folded_on_a_terminal() -> None:
    text = Raw("# Title\n\n" + "- `a long item` " * 20)
    assert lines([text], Screen(30, False, False)) == text.split("\n")
    assert all(width_of(line) <= 30 for line in lines([text], Screen(30, False, True)))


TEXT = st.text(alphabet=st.sampled_from("ab Z-_.,:*09\n\t\x1b\u00e9\u65e5\u0301\u200b "), max_size=30)
CELL = st.text(alphabet=st.sampled_from("ab Z-_.,*09\u00e9\u65e5 "), max_size=12)
STYLES = st.sampled_from(["", "bold", "dim", "green", "bold underline"])


@st.composite
def rendered_items(draw: st.DrawFn) -> list[object]:
    """One renderer's output: any mix of what this module's helpers build."""
    items: list[object] = []
    for kind in draw(st.lists(st.sampled_from(["str", "raw", "styled", "hint", "table", "pairs", "para"]),
                              max_size=5)):
        if kind == "str":
            items.append(draw(TEXT))
        elif kind == "raw":
            items.append(Raw(draw(TEXT)))
        elif kind == "styled":
            line = styled(draw(TEXT), draw(STYLES), fold=draw(st.booleans()))
            items.append(line + clean(draw(TEXT)) if draw(st.booleans()) else line)
        elif kind == "hint":
            items.append(hint(draw(TEXT)))
        elif kind == "table":
            keys = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=True))
            columns = [Column(draw(CELL) or key, key, text=draw(st.booleans())) for key in keys]
            rows = draw(st.lists(st.fixed_dictionaries({key: CELL for key in keys}), max_size=4))
            items += table(rows, columns, PLAIN, draw(st.none() | CELL))
        elif kind == "pairs":
            entries = draw(st.lists(st.tuples(st.text(alphabet=st.sampled_from("ab _\u65e5"), max_size=30),
                                              TEXT | TEXT.map(lambda text: styled(text, "dim"))), max_size=4))
            items += pairs(entries, PLAIN)
        else:
            items += paragraph(draw(TEXT | TEXT.map(lambda text: styled(text, "bold"))), PLAIN,
                               " " * draw(st.integers(0, 6)))
    return items


@settings(max_examples=500, deadline=None)
@given(rendered_items())
def test_piped_output_laid_out_without_rich_is_what_rich_prints(items: list[object]) -> None:
    if items and all(isinstance(item, Raw) for item in items):  # only verbatim text: Rich is never asked
        assert lines(items, PLAIN) == [row for item in items for row in str(item).split("\n")]
    else:
        assert lines(items, PLAIN) == rich_lines(items, PLAIN)


def test_piped_tables_and_label_lists_are_laid_out_without_loading_rich() -> None:
    code = ("import sys\nfrom anvil.cli.tables import Column, Screen, lines, pairs, styled, table\n"
            "screen = Screen(None, False, False)\n"
            "items = [styled('title', 'bold'), *pairs([('task', 'T001'), ('notes', 'two\\nlines')], screen),\n"
            "         *table([{'id': 'T001', 'title': 'Ship it'}], [Column('id', 'id'), Column('title', 'title', "
            "text=True)], screen)]\n"
            "print(lines(items, screen))\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shown, loaded = result.stdout.splitlines()
    assert shown == str(["title", "task   T001", "notes  two", "       lines", "id    title", "T001  Ship it"])
    assert loaded == "[]"
