"""The progress bar: drawn on a terminal only for work that takes a while, and cleared afterwards."""

from __future__ import annotations

import io

import pytest

from anvil.cli import progress as bar_module
from anvil.cli.progress import Bar


def test_short_work_never_shows_a_bar() -> None:
    stream = io.StringIO()
    bar = Bar(stream)
    bar("planning", 1, 4)
    bar.close()
    assert stream.getvalue() == ""


def test_long_work_draws_one_line_in_place_and_clears_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bar_module, "DELAY", 0.0)
    monkeypatch.setattr(bar_module, "INTERVAL", 0.0)
    stream = io.StringIO()
    bar = Bar(stream)
    bar("parsing the PRD", 50, 200)
    bar("parsing the PRD", 200, 200)
    bar.close()
    text = stream.getvalue()
    assert "\rparsing" not in text and "\r\x1b[Kparsing the PRD  50/200  [######..................]  25%" in text
    assert "200/200" in text and "100%" in text and text.endswith("\r\x1b[K") and "\n" not in text
