"""Read models of the task set: paged lists and the dependency graph."""

from __future__ import annotations

from typing import Any

from anvil.engine import tasks as task_rows
from anvil.engine.errors import NotFound, UsageError
from anvil.engine.identity import name_key
from anvil.engine.prd.approval import APPROVED_PRD
from anvil.engine.storage.connection import Connection


def list_tasks(conn: Connection, *, status: str | None, feature_id: str | None, claimed_by: str | None,
               prd_id: str | None, limit: int, cursor: str | None) -> dict[str, Any]:
    """A page of tasks in id order; ``next_cursor`` continues after the last one (null at the end)."""
    where, params = ["1 = 1"], []
    if status == "waiting":  # derived: ready, but a dependency is not done
        where.append("t.unmet_deps > 0")
        status = "ready"
    for column, value in (("t.status", status), ("t.feature_id", feature_id), ("t.prd_id", prd_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if claimed_by is not None:
        where.append("EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active' "
                     "AND c.actor_key = ?)")
        params.append(name_key(claimed_by))
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


def dependency_graph(conn: Connection, scope: str, target_id: str | None, form: str = "json") -> dict[str, Any]:
    """Nodes, edges (dependency -> dependent), the claimable set and the critical path, for all tasks,
    a feature, or a task with its transitive dependencies; with ``form`` ``mermaid`` or ``dot``, the
    same graph as that text too (:mod:`anvil.engine.work.diagrams`).

    Raises:
        UsageError: ``target_id`` missing for the feature or task scope.
        NotFound: the target does not exist.
    """
    all_tasks = {t["id"]: t for t in task_rows.tasks_of(conn)}
    if scope == "all":
        chosen = set(all_tasks)
    elif target_id is None:
        raise UsageError(f"scope {scope!r} needs the id of the {scope} to show", code="target_required",
                         details={"field": "target_id"})
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
    finished = {r[0]: (bool(r[1]), r[2] is not None)
                for r in conn.execute("SELECT id, finished, landed_seq FROM tasks")}
    nodes = [{"id": t["id"], "title": t["title"], "status": t["status"], "priority": t["priority"],
              "feature_id": t["feature_id"], "landed": finished[tid][1],
              "blocked_by": [d for d in t["dependencies"] if not finished.get(d, (False, False))[0]]}
             for tid, t in sorted(all_tasks.items()) if tid in chosen]
    edges = [{"from": dep, "to": tid} for tid in sorted(chosen) for dep in all_tasks[tid]["dependencies"]
             if dep in chosen]
    approved = {r[0] for r in conn.execute(f"SELECT t.id FROM tasks t WHERE t.status = 'ready' AND {APPROVED_PRD}")}
    ready = [tid for tid in sorted(chosen) if all_tasks[tid]["status"] == "ready" and tid not in held
             and tid in approved
             and all(finished.get(d, (False, False))[0] for d in all_tasks[tid]["dependencies"])]
    from anvil.engine.work.diagrams import critical_path, dot, mermaid

    path = critical_path(all_tasks, chosen)
    diagram = {"mermaid": mermaid, "dot": dot}.get(form)
    return {"scope": scope, "target_id": target_id, "nodes": nodes, "edges": edges, "ready_to_claim": ready,
            "critical_path": path, "format": form, "diagram": diagram(nodes, edges, path) if diagram else None}
