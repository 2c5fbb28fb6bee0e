"""Reading the work queue: the next claimable task, the accept-rate governor, lists and graphs."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import NotFound, UsageError
from anvil.engine.project import project_row
from anvil.engine.states import APPROVED_PRD
from anvil.engine.store import Store, format_ts

ORDER = "priority_rank DESC, complexity IS NULL, complexity, created_seq, id"

NEXT_SQL = f"""
SELECT {', '.join('t.' + c for c in task_rows.TASK_COLUMNS)} FROM tasks t
WHERE t.status = 'ready' AND t.unmet_deps = 0 {{filters}}
  AND {APPROVED_PRD}
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active')
  AND NOT EXISTS (SELECT 1 FROM task_conflict_groups g
                  JOIN task_conflict_groups o ON o.group_id = g.group_id AND o.task_id != t.id
                  JOIN claims c ON c.task_id = o.task_id AND c.status = 'active'
                  WHERE g.task_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM json_each(t.likely_files) f
                  JOIN claim_files cf ON cf.file = f.value
                  JOIN claims c ON c.id = cf.claim_id AND c.status = 'active')
ORDER BY {' , '.join('t.' + part.strip() for part in ORDER.split(','))}
LIMIT 1
"""


def next_claimable(conn: sqlite3.Connection, *, prd_id: str | None = None, max_blast: int | None = None,
                   max_review_risk: int | None = None) -> dict[str, Any] | None:
    """The first ready task nobody holds, with dependencies done and no busy conflict group or file.

    Order: priority (critical first), complexity (unscored last), creation, id. Risk ceilings offer a
    task only when that score exists and is at or below the ceiling.
    """
    filters: list[str] = []
    params: list[Any] = []
    if prd_id is not None:
        filters.append("AND t.prd_id = ?")
        params.append(prd_id)
    if max_blast is not None:
        filters.append("AND t.blast_radius IS NOT NULL AND t.blast_radius <= ?")
        params.append(max_blast)
    if max_review_risk is not None:
        filters.append("AND t.review_risk IS NOT NULL AND t.review_risk <= ?")
        params.append(max_review_risk)
    row = conn.execute(NEXT_SQL.format(filters=" ".join(filters)), params).fetchone()
    return task_rows.row_to_task(row) if row else None


def brief(task: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if task is None else {"id": task["id"], "title": task["title"], "priority": task["priority"]}


def governor(store: Store, actor: str | None, now: datetime) -> dict[str, Any]:
    """The accept-rate governor: withhold offers while the accept rate is under the floor or the
    review queue is full. Only quality rejections count against the rate."""
    config = project_row(store)["config"]
    window_days = int(config.get("accept_rate_window_days", 7))
    floor = config.get("accept_rate_floor")
    cap = config.get("review_queue_cap")
    start = format_ts(now - timedelta(days=window_days))
    sql = ("SELECT SUM(decision = 'accepted'), SUM(decision = 'rejected' AND COALESCE(reason_code, 'quality') "
           "= 'quality') FROM reviews r WHERE r.reviewed_at >= ?")
    params: list[Any] = [start]
    if actor:
        sql += " AND r.evidence_id IN (SELECT id FROM evidence WHERE actor = ?)"
        params.append(actor)
    accepted, rejected = (v or 0 for v in store.conn.execute(sql, params).fetchone())
    denominator = accepted + rejected
    rate = None if denominator == 0 else round(accepted / denominator, 4)
    depth = store.conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'needs_review'").fetchone()[0]
    withheld = None
    recovery: list[str] = []
    if floor and rate is not None and rate < float(floor):
        withheld = "accept_rate_below_floor"
        recovery = ["get submitted work accepted", f"wait for rejections older than {window_days} days to expire",
                    "or lower accept_rate_floor in the project config"]
    elif cap and depth >= int(cap):
        withheld = "review_queue_full"
        recovery = ["review tasks waiting in needs_review (anvil apply)"]
    return {"window_days": window_days, "numerator": accepted,
            "denominator": denominator, "rate": rate, "floor": floor, "review_queue_depth": depth,
            "review_queue_cap": cap, "withheld_reason": withheld, "offer_throttled": withheld is not None,
            "recovery": recovery}


def list_tasks(conn: sqlite3.Connection, *, status: str | None, feature_id: str | None, claimed_by: str | None,
               prd_id: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """A page of tasks in id order; ``next_cursor`` continues after the last one (null at the end)."""
    where, params = ["1 = 1"], []
    for column, value in (("t.status", status), ("t.feature_id", feature_id), ("t.prd_id", prd_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if claimed_by is not None:
        where.append("EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active' "
                     "AND c.actor = ?)")
        params.append(claimed_by)
    if cursor:
        where.append("t.id > ?")
        params.append(decode_cursor(cursor))
    rows = conn.execute(f"SELECT {', '.join('t.' + c for c in task_rows.TASK_COLUMNS)} FROM tasks t WHERE "
                        f"{' AND '.join(where)} ORDER BY t.id LIMIT ?", (*params, limit + 1)).fetchall()
    page = [task_rows.row_to_task(r) for r in rows[:limit]]
    more = len(rows) > limit
    return {"tasks": page, "next_cursor": encode_cursor(page[-1]["id"]) if more and page else None}


def encode_cursor(task_id: str) -> str:
    return "after:" + task_id


def decode_cursor(cursor: str) -> str:
    """Raises:
        UsageError: the cursor was not produced by ``list_tasks``.
    """
    if not cursor.startswith("after:") or len(cursor) > 200:
        raise UsageError("invalid cursor: pass the next_cursor value from the previous page", code="invalid_cursor")
    return cursor[len("after:"):]


def dependency_graph(conn: sqlite3.Connection, scope: str, target_id: str | None) -> dict[str, Any]:
    """Nodes, edges (dependency -> dependent) and the claimable set, for all tasks, a feature, or a
    task with its transitive dependencies.

    Raises:
        UsageError: ``target_id`` missing for the feature or task scope.
        NotFound: the target does not exist.
    """
    all_tasks = {t["id"]: t for t in task_rows.tasks_of(conn)}
    if scope == "all":
        chosen = set(all_tasks)
    elif target_id is None:
        raise UsageError(f"scope {scope!r} needs target_id", code="target_required")
    elif scope == "feature":
        chosen = {tid for tid, t in all_tasks.items() if t["feature_id"] == target_id}
        if not chosen and conn.execute("SELECT 1 FROM features WHERE id = ?", (target_id,)).fetchone() is None:
            raise NotFound(f"feature {target_id[:40]!r} not found", code="feature_not_found")
    else:
        if target_id not in all_tasks:
            raise NotFound(f"task {target_id[:40]!r} not found", code="task_not_found")
        chosen, stack = set(), [target_id]
        while stack:
            tid = stack.pop()
            if tid in chosen or tid not in all_tasks:
                continue
            chosen.add(tid)
            stack.extend(all_tasks[tid]["dependencies"])
    held = {r[0] for r in conn.execute("SELECT task_id FROM claims WHERE status = 'active'")}
    nodes = [{"id": t["id"], "title": t["title"], "status": t["status"], "priority": t["priority"],
              "feature_id": t["feature_id"]} for tid, t in sorted(all_tasks.items()) if tid in chosen]
    edges = [{"from": dep, "to": tid} for tid in sorted(chosen) for dep in all_tasks[tid]["dependencies"]
             if dep in chosen]
    approved = {r[0] for r in conn.execute(f"SELECT t.id FROM tasks t WHERE t.status = 'ready' AND {APPROVED_PRD}")}
    ready = [tid for tid in sorted(chosen) if all_tasks[tid]["status"] == "ready" and tid not in held
             and tid in approved
             and all(all_tasks.get(d, {}).get("status") == "done" for d in all_tasks[tid]["dependencies"])]
    return {"scope": scope, "target_id": target_id, "nodes": nodes, "edges": edges, "ready_to_claim": ready}
