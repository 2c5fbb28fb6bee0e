"""The reviewer of a multi-process drain, shared by the benchmark and the drain tests.

The agents of a drain bump a shared change counter (``changes``, under ``cond``) on every write;
the reviewer approves what reached needs_review and otherwise waits for the next change, so it
never polls. ``done`` tells the agents the reviewer has stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def approve_as_submitted(list_waiting: Callable[[], list[str]], approve: Callable[[str], None], total: int,
                         approved: list[str], *, cond: Any, changes: Any, done: Any, deadline: float) -> None:
    """Approve every task ``list_waiting`` names until ``total`` are in ``approved`` or ``deadline``
    (``time.monotonic``) passes; ``done`` is set however it ends.

    ``approved`` is filled in place, so a caller still has it when an approval raises.

    Raises:
        Exception: whatever ``list_waiting`` or ``approve`` raised (the callers report it).
    """
    try:
        while len(approved) < total and time.monotonic() < deadline:
            seen = changes.value
            waiting = list_waiting()
            for task_id in waiting:
                approve(task_id)
                approved.append(task_id)
                with cond:
                    changes.value += 1
                    cond.notify_all()
            if not waiting:
                with cond:
                    cond.wait_for(lambda seen=seen: changes.value != seen, timeout=5)
    finally:
        with cond:
            done.set()
            cond.notify_all()
