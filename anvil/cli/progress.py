"""A Rich progress bar on stderr for long engine work (:mod:`anvil.engine.progress`), on a terminal.

Installed by :func:`anvil.cli.output.run_call` around a direct call when stderr is a terminal. Drawn
only once the work has taken half a second (short calls never load Rich), redrawn in place at most
ten times a second: ``stage ━━━━╺━━━━ 45% 450/1000 3,120/s 0:00:02``; cleared when the call ends.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

DELAY = 0.5
INTERVAL = 0.1


class Bar:
    """Shows the engine's ``(stage, done, total)`` reports on ``stream``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.progress: Any = None
        self.tasks: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.started < DELAY or (now - self.drawn_at < INTERVAL and not 0 < total <= done):
            return
        self.drawn_at = now
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn
            from rich.progress import TimeRemainingColumn as Left

            console = Console(file=self.stream, force_terminal=True, highlight=False, markup=False, emoji=False)
            rate = TextColumn("{task.fields[rate]}", style="progress.data.speed")
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                     MofNCompleteColumn(), rate, Left(), console=console, transient=True,
                                     auto_refresh=False)
            self.progress.start()
        if stage not in self.tasks:  # a new stage: the last one's line gives way to its own count and rate
            for task in self.tasks.values():
                self.progress.remove_task(task)
            self.tasks = {stage: self.progress.add_task(stage, total=max(total, 1), rate="-/s")}
        task = self.tasks[stage]
        self.progress.update(task, completed=done, total=max(total, 1))
        speed = self.progress.tasks[0].speed
        self.progress.update(task, rate=f"{speed:,.0f}/s" if speed else "-/s")
        self.progress.refresh()

    def close(self) -> None:
        """Clear the bar's line (when one was drawn)."""
        if self.progress is not None:
            self.progress.stop()
