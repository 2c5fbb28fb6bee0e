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
PLAN_WIDE_EVENTS = ("prd.parsed", "prd.revised", "planning.batch_applied", "tasks.reviewed", "tasks.scored",
                    "task.dependencies_batch_edited")
"""Event types about a whole plan: they name no single task, and their payloads (megabytes at thousands
of tasks) are not read for one, which would make the board's cost grow with the plan."""
PLAN_WIDE_MARKS = ", ".join("?" * len(PLAN_WIDE_EVENTS))
SUBMITTED = ("needs_review", "accepted", "done")
"""Statuses whose task carries a submission, shown with its trust level."""


def _task_of(payload_text: str) -> str | None:
    """The ``task_id`` of an event's payload, None when it has none."""
    try:
        payload = json.loads(payload_text)
    except ValueError:
        return None
    task_id = payload.get("task_id") if isinstance(payload, dict) else None
    return task_id if isinstance(task_id, str) else None


STATES = ("drafted", "reviewed", "ready", "waiting", "claimed", "in_progress", "blocked", "needs_review", "accepted",
          "done", "proposed")
"""Board columns, in the order work moves through them: the task statuses, with ``waiting`` (ready, but a
dependency is not done) apart from ``ready``."""
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
PAGING = ("each column shows its first page_size tasks in id order; for the next page of one column call get_board "
          "with column=<state> and cursor=<that column's next_cursor> (CLI: anvil board --column STATE --cursor "
          "CURSOR --json); the review queue pages the same way with column=review")


def _state_filter(state: str) -> tuple[str, tuple[Any, ...]]:
    # ``+t.unmet_deps``: not an index term, so the page is read in id order from tasks_status and the
    # scan stops at the page's end; through tasks_gate's unmet_deps range every waiting task (most of
    # a large plan) would be read and sorted first (80-180 ms at 100,000 tasks, 0.1 ms this way).
    if state == "ready":
        return "t.status = 'ready' AND +t.unmet_deps = 0", ()
    if state == "waiting":
        return "t.status = 'ready' AND +t.unmet_deps > 0", ()
    return "t.status = ?", (state,)


def _page(conn: Connection, where: str, params: tuple[Any, ...], cursor: str | None,
          size: int) -> tuple[list[dict[str, Any]], str | None]:
    from anvil.engine.work.views import decode_cursor, encode_cursor

    if cursor:
        where, params = f"{where} AND t.id > ?", (*params, decode_cursor(cursor))
    rows = conn.execute(f"SELECT {', '.join('t.' + c for c in task_rows.TASK_COLUMNS)} FROM tasks t WHERE {where} "
                        "ORDER BY t.id LIMIT ?", (*params, size + 1)).fetchall()
    page = [task_rows.row_to_task(r) for r in rows[:size]]
    return page, encode_cursor(page[-1]["id"]) if len(rows) > size and page else None


def board_view(conn: Connection, now: str, *, recent: int = RECENT_EVENTS, page_size: int = PAGE_SIZE,
               column: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    """What the board shows, as of the newest committed event: bounded whatever the plan's size.

    Args:
        conn: an open state connection (read only).
        now: the current time (the store's clock, formatted), to mark leases that ran out.
        recent: how many of the newest events to include.
        page_size: the most tasks shown per column (and in the review queue).
        column: only this column's page (a state of :data:`STATES`, or ``review`` for the review
            queue); None: the first page of every column.
        cursor: with ``column``, continue after that column's ``next_cursor``.

    Returns:
        ``head`` (the newest event sequence), ``now``, ``tasks`` (each column's page, in id order: id, title,
        status, priority, feature, dependencies, holder, the trust level of a submitted task's
        proofs), ``columns`` (state, count, shown, next_cursor), ``claims`` (task, holder,
        generation, claimed and expiry times, ``expired``), ``review_queue`` (a page of the tasks
        waiting for review, oldest submission first, with who submitted when, the commit and the
        proofs' trust level) and ``review_count``, ``landing_queue`` (approved tasks waiting or
        being verified, then recent bounces and landings, when the project lands work), ``events``
        (newest first: seq, time, actor, type, task), ``counts`` by status and ``paging`` (how to ask
        for the next page).

    Raises:
        UsageError: a cursor that no board page produced.
    """
    head_row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()
    claims = [
        {"task_id": r[0], "actor": r[1], "generation": r[2], "claimed_at": r[3], "lease_expires_at": r[4],
         "expired": r[4] <= now}
        for r in conn.execute("SELECT task_id, actor, generation, claimed_at, lease_expires_at FROM claims "
                              "WHERE status = 'active' ORDER BY lease_expires_at, task_id")]
    holder = {claim["task_id"]: claim["actor"] for claim in claims}
    per_state: dict[str, int] = {}
    counts: dict[str, int] = {}
    for status, count, waiting in task_rows.status_counts(conn):
        counts[status] = count
        if status == "ready":
            per_state["ready"], per_state["waiting"] = count - waiting, waiting
        else:
            per_state[status] = count
    per_state = {state: count for state, count in per_state.items() if count}
    order = [s for s in STATES if s in per_state] + sorted(s for s in per_state if s not in STATES)
    rows: list[dict[str, Any]] = []
    columns = []
    for state in order:
        if column is not None and state != column:
            columns.append({"state": state, "count": per_state[state], "shown": 0, "next_cursor": None})
            continue
        where, params = _state_filter(state)
        page, next_cursor = _page(conn, where, params, cursor if column else None, page_size)
        rows += page
        columns.append({"state": state, "count": per_state[state], "shown": len(page), "next_cursor": next_cursor})
    rows.sort(key=lambda t: t["id"])
    review_queue, review_next = ([], None) if column not in (None, "review") else \
        _review_page(conn, cursor if column == "review" else None, page_size)
    review_count = counts.get("needs_review", 0)
    trust = trust_levels(conn, [t for t in rows if t["status"] in SUBMITTED])
    landed: set[str] = set()
    blocked: dict[str, list[str]] = {}
    for at in range(0, len(rows), 500):  # the shown tasks only: the board stays bounded
        chunk = [t["id"] for t in rows[at:at + 500]]
        marks = ", ".join("?" * len(chunk))
        landed |= {r[0] for r in conn.execute(
            f"SELECT id FROM tasks WHERE landed_seq IS NOT NULL AND id IN ({marks})", chunk)}
        for task_id, dependency in conn.execute(
                "SELECT d.task_id, d.depends_on FROM task_deps d LEFT JOIN tasks u ON u.id = d.depends_on "
                f"WHERE COALESCE(u.finished, 0) = 0 AND d.task_id IN ({marks}) ORDER BY d.task_id, d.depends_on",
                chunk):
            blocked.setdefault(task_id, []).append(dependency)
    tasks = [{"id": t["id"], "title": t["title"], "status": t["status"], "priority": t["priority"],
              "feature_id": t["feature_id"], "dependencies": t["dependencies"], "claimed_by": holder.get(t["id"]),
              "trust_level": trust.get(t["id"]), "landed": t["id"] in landed,
              "blocked_by": blocked.get(t["id"], [])} for t in rows]
    events = [{"seq": r[0], "ts": r[1], "actor": r[2], "type": r[3], "task_id": _task_of(r[4])}
              for r in conn.execute(f"SELECT seq, ts, actor, type, CASE WHEN type IN ({PLAN_WIDE_MARKS}) THEN '{{}}' "
                                    "ELSE payload END FROM events ORDER BY seq DESC LIMIT ?",
                                    (*PLAN_WIDE_EVENTS, recent))]
    from anvil.engine.work.landing import board_queue

    return {"head": int(head_row[0]), "now": now, "tasks": tasks, "columns": columns, "claims": claims,
            "review_queue": review_queue, "review_count": review_count, "review_next_cursor": review_next,
            "landing_queue": board_queue(conn, now), "events": events, "counts": counts,
            "paging": {"page_size": page_size, "column": column, "how": PAGING}}


def _review_page(conn: Connection, cursor: str | None, size: int) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the review queue, oldest submission first (the cursor is ``after:<time>|<task>``)."""
    where, params = "t.status = 'needs_review'", ()  # type: tuple[str, tuple[str, ...]]
    if cursor:
        from anvil.engine.work.views import decode_cursor

        stamp, _, task_id = decode_cursor(cursor).partition("|")
        where, params = f"{where} AND (COALESCE(e.submitted_at, '') > ? OR (COALESCE(e.submitted_at, '') = ? " \
                        "AND t.id > ?))", (stamp, stamp, task_id)
    columns = ", ".join("t." + c for c in task_rows.TASK_COLUMNS)
    rows = conn.execute(
        f"SELECT {columns}, e.actor, e.submitted_at, e.commit_sha FROM tasks t LEFT JOIN evidence e ON "
        "e.task_id = t.id AND e.seq = (SELECT MAX(x.seq) FROM evidence x WHERE x.task_id = t.id) "
        f"WHERE {where} ORDER BY COALESCE(e.submitted_at, ''), t.id LIMIT ?", (*params, size + 1)).fetchall()
    width = len(task_rows.TASK_COLUMNS)
    tasks = [(task_rows.row_to_task(r[:width]), r[width:]) for r in rows[:size]]
    trust = trust_levels(conn, [t for t, _ in tasks])
    page = [{"task_id": t["id"], "title": t["title"], "priority": t["priority"], "submitted_by": e[0],
             "submitted_at": e[1], "commit_sha": e[2], "trust_level": trust.get(t["id"])} for t, e in tasks]
    more = len(rows) > size and page
    return page, f"after:{page[-1]['submitted_at'] or ''}|{page[-1]['task_id']}" if more else None
