"""A Rich progress bar on stderr for long engine work, shown only on a terminal.

Installed around a direct call by :func:`anvil.cli.output.run_call` when stderr is a terminal:
the engine's reports (:mod:`anvil.engine.progress`) become one line redrawn in place, at most ten
times a second, and only once the work has taken half a second (short calls never load Rich or
flash a bar): ``stage ━━━━━╺━━━━ 45% 450/1000 3,120/s 0:00:02``. The line is cleared when the call
ends, so the result prints on a clean screen.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

DELAY = 0.5
INTERVAL = 0.1


class Bar:
    """Shows the engine's ``(stage, done, total)`` reports on ``stream`` with counts, rate and ETA."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.progress: Any = None
        self.task: Any = None
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = total > 0 and done >= total
        if now - self.started < DELAY or (now - self.drawn_at < INTERVAL and not finished):
            return
        self.drawn_at = now
        if self.progress is None:
            self.progress = _progress(self.stream)
            self.progress.start()
        if self.task is None or stage != self.stage:  # a new stage starts its own count and rate
            if self.task is not None:
                self.progress.remove_task(self.task)
            self.task, self.stage = self.progress.add_task(stage, total=max(total, 1)), stage
        self.progress.update(self.task, completed=done, total=max(total, 1))
        self.progress.refresh()

    def close(self) -> None:
        """Clear the bar's line (when one was drawn)."""
        if self.progress is not None:
            self.progress.stop()


def _progress(stream: TextIO) -> Any:
    """A transient Rich progress display on ``stream``, redrawn only when a report comes."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskProgressColumn,
                               TextColumn, TimeRemainingColumn)
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{task.speed:,.0f}/s" if task.speed else "-/s", style="progress.data.speed")

    console = Console(file=stream, force_terminal=True, highlight=False, markup=False, emoji=False)
    return Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), MofNCompleteColumn(),
                    Rate(), TimeRemainingColumn(), console=console, transient=True, auto_refresh=False)
