"""The landing queue's small reads: the project's landing settings and the queue in numbers.

Kept apart from :mod:`anvil.engine.work.landing` (which records landings and reads approvals), so
the project's status can count the queue without importing the review rules.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import format_ts


def landing_config(conn: Connection) -> dict[str, Any]:
    """The project's landing settings: ``target``, ``remote``, ``method``, ``delete_branch``."""
    row = conn.execute("SELECT config FROM project").fetchone()
    config = json.loads(row[0]) if row else {}
    return {"target": config.get("land_target"), "remote": config.get("land_remote"),
            "method": config.get("land_method") or "merge",
            "delete_branch": (config.get("land_delete_branch") or "on") == "on"}


def stamp_of(now: Any) -> str:
    """``now`` (a datetime, or a formatted time) as the store formats times."""
    return now if isinstance(now, str) else format_ts(now)


def counts(conn: Connection, now: Any) -> dict[str, Any] | None:
    """The landing queue in numbers (``status`` and the board): the target, and how many approved
    tasks wait, are being verified, landed, or bounced back; None when the project does not land work."""
    config = landing_config(conn)
    if not config["target"]:
        return None
    waiting = conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'done' AND landed_seq IS NULL").fetchone()[0]
    verifying = conn.execute(
        "SELECT COUNT(DISTINCT l.task_id) FROM landings l JOIN tasks t ON t.id = l.task_id WHERE t.status = 'done' "
        "AND t.landed_seq IS NULL AND l.outcome = 'started' AND l.lease_expires_at > ? AND l.seq = (SELECT MAX(seq) "
        "FROM landings x WHERE x.task_id = l.task_id)", (stamp_of(now),)).fetchone()[0]
    landed = conn.execute("SELECT COUNT(*) FROM tasks WHERE landed_seq IS NOT NULL").fetchone()[0]
    bounced = conn.execute(
        "SELECT COUNT(*) FROM landings l JOIN tasks t ON t.id = l.task_id WHERE l.outcome = 'bounced' AND "
        "t.status != 'done' AND l.seq = (SELECT MAX(seq) FROM landings x WHERE x.task_id = l.task_id)").fetchone()[0]
    return {"target": config["target"], "remote": config["remote"], "approved": waiting - verifying,
            "verifying": verifying, "landed": landed, "bounced": bounced}
