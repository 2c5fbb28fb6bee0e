"""Progress of long engine work, for a surface that wants to show it.

Parsing and planning a PRD of thousands of tasks, rebuilding the database from the event log and
copying a large state take seconds. The engine reports how far it got with :func:`report`; it
costs one context-variable read when nobody listens. A surface installs a reporter around a call
with :func:`reporting` (the CLI does, when stderr is a terminal, and draws a bar there); the
reporter belongs to the calling thread's context, so a server's other calls never see it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Reporter = Callable[[str, int, int], None]
"""``(stage, done, total)``: ``stage`` says what is going on (``planning``), ``done`` of ``total`` units."""

_REPORTER: ContextVar[Reporter | None] = ContextVar("anvil_progress", default=None)


def report(stage: str, done: int, total: int) -> None:
    """Tell the installed reporter (if any) that ``done`` of ``total`` units of ``stage`` are done."""
    reporter = _REPORTER.get()
    if reporter is not None:
        reporter(stage, done, total)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Send the progress of the engine work run inside to ``reporter``."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)
