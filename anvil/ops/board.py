"""The team board's data: snapshots of the served project, and waiting for the next change.

Standard library and engine only; the HTTP side (:mod:`anvil.mcp.board`) runs these in worker
threads. A snapshot is a pure read (no reaping, no writes), so any number of viewers and
replicas can take them; a wait is woken by the commit that changes the state
(:func:`anvil.engine.storage.changes.wait_for_change`), never by polling.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from anvil.engine.errors import NotFound
from anvil.engine.project import project_row
from anvil.engine.storage import changes
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store, format_ts
from anvil.engine.work.board import board_view

EMPTY: dict[str, Any] = {"head": 0, "tasks": [], "claims": [], "review_queue": [], "landing_queue": [], "events": [],
                         "counts": {}}


def snapshot(env: Mapping[str, str], cwd: str) -> dict[str, Any]:
    """Everything the board shows now (see :func:`anvil.engine.work.board.board_view`), with the
    project's name; ``initialized`` is false (and the lists empty) before ``anvil init``.

    Raises:
        AnvilError: the state exists but cannot be read.
    """
    location = resolve_state(env, cwd)
    if not location.initialized:
        return _uninitialized()
    try:
        store = Store.open(location)
    except NotFound as exc:  # a PostgreSQL database that holds no project yet
        if exc.code != "not_initialized":
            raise
        return _uninitialized()
    with store:
        with store.snapshot() as conn:
            view = board_view(conn, format_ts(store.clock()))
            name = project_row(store).get("name")
    return {**view, "initialized": True, "project": name}


def _uninitialized() -> dict[str, Any]:
    from anvil.engine.storage.store import system_clock

    return {**EMPTY, "initialized": False, "project": None, "now": format_ts(system_clock())}


def wait_for_change(env: Mapping[str, str], cwd: str, after_seq: int, timeout: float,
                    cancelled: threading.Event | None = None) -> int:
    """Block until an event after ``after_seq`` is committed or ``timeout`` seconds pass; the head.

    Before ``anvil init`` there is nothing to wake on: the wait lasts ``timeout`` (or until
    ``cancelled`` is set) and answers 0.

    Raises:
        OSError: the state directory cannot hold a waiter.
    """
    location = resolve_state(env, cwd)
    if not location.initialized:
        (cancelled or threading.Event()).wait(timeout)
        return 0
    return changes.wait_for_change(location, after_seq, timeout)
