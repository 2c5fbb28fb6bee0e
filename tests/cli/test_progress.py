"""The progress bar: drawn with Rich on a terminal only for work that takes a while, and cleared afterwards."""

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


def test_long_work_draws_one_line_in_place_with_counts_rate_and_eta_and_clears_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bar_module, "DELAY", 0.0)
    monkeypatch.setattr(bar_module, "INTERVAL", 0.0)
    stream = io.StringIO()
    bar = Bar(stream)
    bar("parsing the PRD", 50, 200)
    bar("parsing the PRD", 200, 200)
    bar("planning", 1, 4)  # a new stage: its own count
    bar.close()
    text = stream.getvalue()
    assert "parsing the PRD" in text and "50/200" in text and " 25%" in text and "200/200" in text
    assert "/s" in text and "1/4" in text and ("-:--:--" in text or "0:00:00" in text)  # rate and time left
    drawn, cleared = text.rsplit("\n", 1)
    assert "\n" not in drawn and cleared == "\x1b[?25h\r\x1b[1A\x1b[2K"  # redrawn in place, then wiped
