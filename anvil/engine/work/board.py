"""The team board's read model: one snapshot of everything a board shows, read in one go.

Tasks (for the status columns and the dependency graph), the live claims with their leases, the
review queue, and the most recent events. A snapshot is read-only (it reaps nothing: a lease that
ran out but was not reaped yet is shown as expired), and it carries the head event sequence, so a
viewer knows which change it reflects. Events are shown by type, actor, time and task only: never
their payloads, which may hold things a board has no business showing.
"""

from __future__ import annotations

import json
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.proof.contract import trust_levels
from anvil.engine.storage.connection import Connection

RECENT_EVENTS = 40
SUBMITTED = ("needs_review", "accepted", "done")
"""Statuses whose task carries a submission, shown with its trust level."""


def _task_of(payload_text: str) -> str | None:
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return None
    task_id = payload.get("task_id") if isinstance(payload, dict) else None
    return task_id if isinstance(task_id, str) else None


def board_view(conn: Connection, now: str, *, recent: int = RECENT_EVENTS) -> dict[str, Any]:
    """Everything the board shows, as of the newest committed event.

    Args:
        conn: an open state connection (read only).
        now: the current time (the store's clock, formatted), to mark leases that ran out.
        recent: how many of the newest events to include.

    Returns:
        ``head`` (the newest event sequence), ``now``, ``tasks`` (id, title, status, priority,
        feature, dependencies, holder, the trust level of a submitted task's proofs), ``claims``
        (task, holder, generation, claimed and expiry times, ``expired``), ``review_queue`` (tasks
        waiting for review with who submitted when, the commit and the proofs' trust level),
        ``landing_queue`` (approved tasks waiting or being verified, then recent bounces and landings, when
        the project lands work), ``events`` (newest first: seq, time, actor, type, task) and ``counts`` by status.
    """
    head_row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
    claims = [
        {"task_id": r[0], "actor": r[1], "generation": r[2], "claimed_at": r[3], "lease_expires_at": r[4],
         "expired": r[4] <= now}
        for r in conn.execute("SELECT task_id, actor, generation, claimed_at, lease_expires_at FROM claims "
                              "WHERE status = 'active' ORDER BY lease_expires_at, task_id")]
    holder = {claim["task_id"]: claim["actor"] for claim in claims}
    rows = task_rows.tasks_of(conn)
    trust = trust_levels(conn, [t for t in rows if t["status"] in SUBMITTED])
    landed = {r[0] for r in conn.execute("SELECT id FROM tasks WHERE landed_seq IS NOT NULL")}
    tasks = [{"id": t["id"], "title": t["title"], "status": t["status"], "priority": t["priority"],
              "feature_id": t["feature_id"], "dependencies": t["dependencies"], "claimed_by": holder.get(t["id"]),
              "trust_level": trust.get(t["id"]), "landed": t["id"] in landed} for t in rows]
    waiting = [t for t in tasks if t["status"] == "needs_review"]
    submitted: dict[str, tuple[str, str, str | None]] = {}
    for task in waiting:
        row = conn.execute("SELECT actor, submitted_at, commit_sha FROM evidence WHERE task_id = ? ORDER BY seq DESC "
                           "LIMIT 1", (task["id"],)).fetchone()
        if row is not None:
            submitted[task["id"]] = (row[0], row[1], row[2])
    review_queue = sorted(
        ({"task_id": t["id"], "title": t["title"], "priority": t["priority"],
          "submitted_by": submitted.get(t["id"], (None, None, None))[0],
          "submitted_at": submitted.get(t["id"], (None, None, None))[1],
          "commit_sha": submitted.get(t["id"], (None, None, None))[2], "trust_level": t["trust_level"]}
         for t in waiting),
        key=lambda item: (item["submitted_at"] or "", item["task_id"]))
    events = [{"seq": r[0], "ts": r[1], "actor": r[2], "type": r[3], "task_id": _task_of(r[4])}
              for r in conn.execute("SELECT seq, ts, actor, type, payload FROM events ORDER BY seq DESC LIMIT ?",
                                    (recent,))]
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task["status"]] = counts.get(task["status"], 0) + 1
    from anvil.engine.work.landing import board_queue

    return {"head": int(head_row[0]), "now": now, "tasks": tasks, "claims": claims, "review_queue": review_queue,
            "landing_queue": board_queue(conn, now), "events": events, "counts": counts}
