"""Handlers that read tasks: lists, details, the graph, file conflicts and work packets (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.storage.store import format_ts
from anvil.engine.tasks import get_task as load_task
from anvil.engine.tasks import task_revision, task_view, unfinished_dependencies
from anvil.engine.work import claims, evidence, packets, views
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        CheckConflictsInput,
        GenerateWorkPacketInput,
        GetDependencyGraphInput,
        GetTaskInput,
        ListTasksInput,
    )


ROW_KEYS = ("id", "prd_id", "feature_id", "title", "status", "priority", "dependencies", "review_tier", "blocked_by")


def _claim_view(ctx: Context, claim: dict[str, Any] | None) -> dict[str, Any] | None:
    """A live claim as outputs show it, with its git binding, next commands and ``expired``."""
    return None if claim is None else claims.claim_view(ctx.store.conn, claim, format_ts(ctx.store.now()))


def list_tasks(ctx: Context, args: ListTasksInput) -> dict[str, Any]:
    conn = ctx.store.conn
    page = views.list_tasks(conn, status=args["status"], feature_id=args["feature_id"],
                            claimed_by=args["claimed_by"], prd_id=args["prd_id"], limit=args["limit"],
                            cursor=args["cursor"])
    ids = [t["id"] for t in page["tasks"]]
    live = claims.live_claims(conn, ids)
    waits = unfinished_dependencies(conn, ids)
    now = format_ts(ctx.store.now())
    tasks = [{**{k: v for k, v in task_view(t, waits.get(t["id"], ())).items() if k in ROW_KEYS},
              "claimed_by": live[t["id"]][0] if t["id"] in live else None,
              "claim_expired": t["id"] in live and live[t["id"]][1] <= now}
             for t in page["tasks"]]
    return {"tasks": tasks, "count": len(tasks), "next_cursor": page["next_cursor"]}


def get_task(ctx: Context, args: GetTaskInput) -> dict[str, Any]:
    conn = ctx.store.conn
    task = load_task(conn, args["task_id"])
    waits = unfinished_dependencies(conn, [task["id"]]).get(task["id"], [])
    return {**task_view(task, waits), "revision": task_revision(task),
            "claim": _claim_view(ctx, claims.active_claim(conn, task["id"])),
            "history": evidence.history(conn, task["id"])}


def get_dependency_graph(ctx: Context, args: GetDependencyGraphInput) -> dict[str, Any]:
    return views.dependency_graph(ctx.store.conn, args["scope"], args["target_id"], args["format"],
                                  cursor=args["cursor"])


def check_conflicts(ctx: Context, args: CheckConflictsInput) -> dict[str, Any]:
    conn = ctx.store.conn
    task_id = load_task(conn, args["task_id"])["id"]
    return {"task_id": task_id, "conflicts": claims.file_conflicts(conn, args["proposed_files"], task_id)}


def generate_work_packet(ctx: Context, args: GenerateWorkPacketInput) -> dict[str, Any]:
    data = packets.packet_data(ctx.store.conn, args["task_id"])
    data["claim"] = _claim_view(ctx, data["claim"])
    content: Any = data if args["format"] == "json" else packets.render_markdown({**data, "claim": data["claim"] and {
        **data["claim"], "actor": data["claim"]["claimed_by"]}})
    return {"task_id": data["task_id"], "format": args["format"], "content": content}
