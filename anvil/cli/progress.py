"""A progress bar on stderr for long engine work, shown only on a terminal.

Installed around a direct call by :func:`anvil.cli.output.run_call` when stderr is a terminal:
the engine's reports (:mod:`anvil.engine.progress`) become one line redrawn in place, at most ten
times a second, and only once the work has taken half a second (short calls never flash a bar).
The line is cleared when the call ends, so the result prints on a clean screen.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY = 0.5
INTERVAL = 0.1
WIDTH = 24


class Bar:
    """Draws ``stage  done/total  [#####.....]  45%`` on ``stream``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = total > 0 and done >= total
        if now - self.started < DELAY or (now - self.drawn_at < INTERVAL and not finished):
            return
        self.drawn_at = now
        part = min(done / total, 1.0) if total > 0 else 0.0
        filled = int(part * WIDTH)
        self.stream.write(f"\r\x1b[K{stage}  {done}/{total}  [{'#' * filled}{'.' * (WIDTH - filled)}]  "
                          f"{int(part * 100)}%")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Clear the bar's line (when one was drawn)."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
