"""Offers: which task an agent should take next, and the accept-rate governor that may withhold it.

:func:`offer` is the one offer sequence: ``get_next_task`` reads it and ``claim_next_task`` claims what it
returns inside the same transaction, so both always agree on the task and on the reason when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.identity import name_key
from anvil.engine.prd.approval import APPROVED_PRD
from anvil.engine.project import project_row
from anvil.engine.storage.connection import Connection
from anvil.engine.storage.store import Store, format_ts
from anvil.engine.work.bundles.rows import RESERVED_BY_BUNDLE

ORDER = "priority_rank DESC, complexity IS NULL, complexity, created_seq, id"

FREE = f"""
  NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active')
  AND NOT {RESERVED_BY_BUNDLE}
  AND NOT EXISTS (SELECT 1 FROM task_conflict_groups g
                  JOIN task_conflict_groups o ON o.group_id = g.group_id AND o.task_id != t.id
                  JOIN claims c ON c.task_id = o.task_id AND c.status = 'active'
                  WHERE g.task_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM task_files f
                  JOIN claim_files cf ON cf.file = f.file
                  JOIN claims c ON c.id = cf.claim_id AND c.status = 'active'
                  WHERE f.task_id = t.id)"""
"""No live claim holds the task, a task of one of its conflict groups, or one of its files, and no
bundle reserves it."""

NEXT_SQL = f"""
SELECT {', '.join('t.' + c for c in task_rows.TASK_COLUMNS)} FROM tasks t
WHERE t.status = 'ready' AND t.unmet_deps = 0 {{filters}}
  AND {APPROVED_PRD}
  AND {FREE}
ORDER BY {' , '.join('t.' + part.strip() for part in ORDER.split(','))}
LIMIT 1
"""


def next_claimable(conn: Connection, *, prd_id: str | None = None, max_blast: int | None = None,
                   max_review_risk: int | None = None) -> dict[str, Any] | None:
    """The first ready task nobody holds, with dependencies done and no busy conflict group or file.

    Order: priority (critical first), complexity (unscored last), creation, id. Risk ceilings offer a
    task only when its scores were confirmed by a person (``review_tasks``) and that score is at or
    below the ceiling: the rules' score alone (a guess from file names and words) never qualifies.
    """
    filters: list[str] = []
    params: list[Any] = []
    if prd_id is not None:
        filters.append("AND t.prd_id = ?")
        params.append(prd_id)
    if max_blast is not None:
        filters.append("AND t.scores_confirmed_seq IS NOT NULL AND t.blast_radius <= ?")
        params.append(max_blast)
    if max_review_risk is not None:
        filters.append("AND t.scores_confirmed_seq IS NOT NULL AND t.review_risk <= ?")
        params.append(max_review_risk)
    row = conn.execute(NEXT_SQL.format(filters=" ".join(filters)), params).fetchone()
    return task_rows.row_to_task(row) if row else None


def brief(task: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if task is None else {"id": task["id"], "title": task["title"], "priority": task["priority"]}


def governor(store: Store, actor: str | None, now: datetime, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The accept-rate governor: withhold offers while the accept rate is under the floor or the
    review queue is full. Only quality rejections count against the rate. ``config``: the project's,
    when the caller read it already."""
    if config is None:
        config = project_row(store)["config"]
    window_days = int(config.get("accept_rate_window_days", 7))
    floor = config.get("accept_rate_floor")
    cap = config.get("review_queue_cap")
    start = format_ts(now - timedelta(days=window_days))
    sql = ("SELECT SUM(CASE WHEN decision = 'accepted' THEN 1 ELSE 0 END), SUM(CASE WHEN decision = 'rejected' "
           "AND COALESCE(reason_code, 'quality') = 'quality' THEN 1 ELSE 0 END), "
           "(SELECT COUNT(*) FROM tasks WHERE status = 'needs_review') FROM reviews r WHERE r.reviewed_at >= ?")
    params: list[Any] = [start]
    if actor:
        sql += " AND r.evidence_id IN (SELECT id FROM evidence WHERE actor_key = ?)"
        params.append(name_key(actor))
    accepted, rejected, depth = (v or 0 for v in store.conn.execute(sql, params).fetchone())
    denominator = accepted + rejected
    rate = None if denominator == 0 else round(accepted / denominator, 4)
    withheld = None
    recovery: list[str] = []
    if floor and rate is not None and rate < float(floor):
        withheld = "accept_rate_below_floor"
        recovery = ["get submitted work accepted", f"wait for rejections older than {window_days} days to expire",
                    "or lower accept_rate_floor in the project config"]
    elif cap and depth >= int(cap):
        withheld = "review_queue_full"
        recovery = ["review tasks waiting in needs_review (anvil apply)"]
    return {"as_of": format_ts(now), "window_start": start, "window_days": window_days, "numerator": accepted,
            "denominator": denominator, "rate": rate, "floor": floor or None, "configured_floor": floor,
            "review_queue_depth": depth, "review_queue_cap": cap, "withheld_reason": withheld,
            "offer_throttled": withheld is not None, "recovery": recovery}


WARNED_STATUSES = ("claimed", "in_progress", "blocked", "needs_review")
MAX_CONFLICT_WARNINGS = 20


def conflict_warnings(conn: Connection, task_id: str) -> list[dict[str, str]]:
    """Advisory: other tasks whose likely files overlap this one's and whose work is under way or
    waiting for review (their changes may not be merged yet). Never a refusal."""
    marks = ", ".join("?" * len(WARNED_STATUSES))
    rows = conn.execute(
        "SELECT f.file, t.id, t.status FROM task_files f JOIN task_files o ON o.file = f.file AND o.task_id != "
        f"f.task_id JOIN tasks t ON t.id = o.task_id WHERE f.task_id = ? AND t.status IN ({marks}) "
        "ORDER BY f.file, t.id LIMIT ?", (task_id, *WARNED_STATUSES, MAX_CONFLICT_WARNINGS)).fetchall()
    return [{"file": r[0], "task_id": r[1], "status": r[2]} for r in rows]


def empty_reason(conn: Connection) -> str:
    """Why nothing can be offered, with the numbers: no tasks, none ready, PRD not approved, or what
    keeps each ready task back (unfinished dependencies, live claims it conflicts with, the caller's
    filters)."""
    counts = dict(conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall())
    ready = counts.get("ready", 0)
    working = counts.get("claimed", 0) + counts.get("in_progress", 0)
    elsewhere = [text for text in (f"{working} being worked on" if working else "",
                                   f"{counts.get('needs_review', 0)} waiting for review"
                                   if counts.get("needs_review") else "",
                                   f"{counts.get('blocked', 0)} blocked" if counts.get("blocked") else "") if text]
    if not ready:
        if not counts:
            return "no tasks are planned yet"
        return "no task is ready" + (f" ({', '.join(elsewhere)})" if elsewhere else "")
    unapproved = conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE t.status = 'ready' AND NOT {APPROVED_PRD}"
                              ).fetchone()[0]
    if unapproved == ready:
        return (f"{ready} ready task(s), but their PRD is not approved for its current revision: run "
                "`anvil prd review` and `anvil prd review --approve`")
    waiting = conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'ready' AND unmet_deps > 0").fetchone()[0]
    startable = f"t.status = 'ready' AND t.unmet_deps = 0 AND {APPROVED_PRD}"
    free = conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE {startable} AND {FREE}").fetchone()[0]
    startable_count = conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE {startable}").fetchone()[0]
    parts = [f"{waiting} wait on unfinished dependencies" if waiting else "",
             f"{startable_count - free} conflict with live claims (a shared conflict group or file) or are "
             "reserved by a bundle"
             if startable_count > free else "",
             f"{free} are outside your filters (PRD; risk ceilings take only scores confirmed with `anvil "
             "review tasks`)" if free else "",
             f"{unapproved} belong to a PRD that is not approved" if unapproved else ""]
    shown = "; ".join(p for p in parts if p)
    return f"{ready} ready task(s): {shown}" + (f" ({', '.join(elsewhere)})" if elsewhere else "")


@dataclass(frozen=True, slots=True)
class OfferFilter:
    """What a caller will take: one PRD, and ceilings on the blast-radius and review-risk scores."""

    prd_id: str | None = None
    max_blast: int | None = None
    max_review_risk: int | None = None


@dataclass(frozen=True, slots=True)
class Offer:
    """The outcome of :func:`offer`: a task, or None with the reason; and the governor's report."""

    task: dict[str, Any] | None
    reason: str | None
    governor: dict[str, Any] | None  # None: not asked for, and no floor or cap could withhold the offer
    config: dict[str, Any]  # the project's configuration the offer was made under


def offer(store: Store, actor: str | None, now: datetime, wanted: OfferFilter, *, report: bool = True) -> Offer:
    """The task to offer ``actor`` now, unless the governor withholds offers or nothing is claimable.

    Without ``report`` the governor's figures are read only when a floor or a cap is configured (only
    then can they withhold the offer): a claim needs the decision, not the figures.
    """
    config = project_row(store)["config"]
    if not report and not config.get("accept_rate_floor") and not config.get("review_queue_cap"):
        task = next_claimable(store.conn, prd_id=wanted.prd_id, max_blast=wanted.max_blast,
                              max_review_risk=wanted.max_review_risk)
        return Offer(task, None if task else empty_reason(store.conn), None, config)
    figures = governor(store, actor, now, config)
    if figures["withheld_reason"]:
        return Offer(None, f"offers withheld: {figures['withheld_reason']}", figures, config)
    task = next_claimable(store.conn, prd_id=wanted.prd_id, max_blast=wanted.max_blast,
                          max_review_risk=wanted.max_review_risk)
    return Offer(task, None if task else empty_reason(store.conn), figures, config)
