"""Handlers of the execution loop (stdlib + engine only)."""

from __future__ import annotations

from typing import Any

from anvil.engine import claims, queue, work
from anvil.engine.packets import packet_data, render_markdown
from anvil.engine.plan_state import task_view
from anvil.engine.project import project_row
from anvil.engine.tasks import get_task as load_task
from anvil.ops.runtime import Args, Context

ROW_KEYS = ("id", "prd_id", "feature_id", "title", "status", "priority", "dependencies", "review_tier")


def _claim_view(claim: dict[str, Any] | None) -> dict[str, Any] | None:
    if claim is None:
        return None
    return {"id": claim["id"], "task_id": claim["task_id"], "claimed_by": claim["actor"],
            "generation": claim["generation"], "claimed_at": claim["claimed_at"],
            "lease_expires_at": claim["lease_expires_at"], "expected_files": claim["expected_files"]}


def list_tasks(ctx: Context, args: Args) -> dict[str, Any]:
    page = queue.list_tasks(ctx.store.conn, status=args.status, feature_id=args.feature_id,
                            claimed_by=args.claimed_by, prd_id=args.prd_id, limit=args.limit, cursor=args.cursor)
    holders = claims.holders(ctx.store.conn, [t["id"] for t in page["tasks"]])
    tasks = [{**{k: v for k, v in task_view(t).items() if k in ROW_KEYS}, "claimed_by": holders.get(t["id"])}
             for t in page["tasks"]]
    return {"tasks": tasks, "count": len(tasks), "next_cursor": page["next_cursor"]}


def get_task(ctx: Context, args: Args) -> dict[str, Any]:
    conn = ctx.store.conn
    return {**task_view(load_task(conn, args.task_id)), "claim": _claim_view(claims.active_claim(conn, args.task_id)),
            "history": work.history(conn, args.task_id)}


def get_next_task(ctx: Context, args: Args) -> dict[str, Any]:
    store = ctx.store
    report = queue.governor(store, args.actor, ctx.clock())
    task = None
    reason: str | None
    if report["withheld_reason"]:
        reason = f"offers withheld: {report['withheld_reason']}"
    else:
        task = queue.next_claimable(store.conn, prd_id=args.prd_id, max_blast=args.max_blast,
                                    max_review_risk=args.max_review_risk)
        reason = None if task else _empty_reason(store.conn)
    return {"task": task_view(task) if task else None, "reason": reason, "governor": report}


def _empty_reason(conn: Any) -> str:
    ready = conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'ready'").fetchone()[0]
    if not ready:
        total = conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
        return "no tasks are planned yet" if not total else "no task is ready"
    unapproved = conn.execute(f"SELECT COUNT(*) FROM tasks t WHERE t.status = 'ready' AND NOT {queue.APPROVED_PRD}"
                              ).fetchone()[0]
    if unapproved == ready:
        return (f"{ready} ready task(s), but their PRD is not approved for its current revision: run "
                "`anvil prd review` and `anvil prd review --approve`")
    return f"{ready} ready task(s), all waiting on dependencies, held, or in conflict with live claims"


def get_dependency_graph(ctx: Context, args: Args) -> dict[str, Any]:
    return queue.dependency_graph(ctx.store.conn, args.scope, args.target_id)


def check_conflicts(ctx: Context, args: Args) -> dict[str, Any]:
    conn = ctx.store.conn
    load_task(conn, args.task_id)
    return {"task_id": args.task_id, "conflicts": claims.file_conflicts(conn, args.proposed_files, args.task_id)}


def generate_work_packet(ctx: Context, args: Args) -> dict[str, Any]:
    data = packet_data(ctx.store.conn, args.task_id)
    data["claim"] = _claim_view(data["claim"])
    content: Any = data if args.format == "json" else render_markdown({**data, "claim": data["claim"] and {
        **data["claim"], "actor": data["claim"]["claimed_by"]}})
    return {"task_id": args.task_id, "format": args.format, "content": content}


def claim_task(ctx: Context, args: Args) -> dict[str, Any]:
    return claims.claim(ctx.write(), ctx.location, args.task_id, args.actor, args.expected_files,
                        args.lease_duration_seconds)


def claim_next_task(ctx: Context, args: Args) -> dict[str, Any]:
    tx = ctx.write()
    report = queue.governor(tx.store, args.actor, tx.now)
    if report["withheld_reason"]:
        return {"claim": None, "reason": f"offers withheld: {report['withheld_reason']}"}
    task = queue.next_claimable(tx.conn, prd_id=args.prd_id, max_blast=args.max_blast,
                                max_review_risk=args.max_review_risk)
    if task is None:
        return {"claim": None, "reason": _empty_reason(tx.conn)}
    claim = claims.claim(tx, ctx.location, task["id"], args.actor, None, args.lease_duration_seconds)
    return {"claim": claim, "reason": None}


def renew_claim(ctx: Context, args: Args) -> dict[str, Any]:
    return claims.renew(ctx.write(), args.task_id, args.actor, args.generation, args.claim_id, args.extend_seconds)


def release_task(ctx: Context, args: Args) -> dict[str, Any]:
    tx = ctx.write()
    live = claims.active_claim(tx.conn, args.task_id)
    if args.generation is not None or args.claim_id is not None:
        # Fencing first: an old token is stale, never an invitation to take over.
        claims.held_claim(tx.conn, args.task_id, live["actor"] if live else args.actor, args.generation,
                          args.claim_id)
    force = live is not None and live["actor"] != args.actor
    if force:
        ctx.require_confirm(args, f"task {args.task_id} is claimed by another actor; releasing it ends their claim "
                                  "and returns the task to the pool")
    return claims.release(tx, args.task_id, args.actor, args.generation, args.claim_id, args.reason, force)


def submit_progress(ctx: Context, args: Args) -> dict[str, Any]:
    return work.submit_progress(ctx.write(), args.task_id, args.actor, args.notes, args.phase, args.detail,
                                args.generation, args.claim_id)


def _next_ready(ctx: Context) -> dict[str, Any] | None:
    return queue.brief(queue.next_claimable(ctx.write().conn))


def submit_completion_evidence(ctx: Context, args: Args) -> dict[str, Any]:
    result = work.submit_evidence(
        ctx.write(), args.task_id, args.actor, commands_run=args.commands_run, files_changed=args.files_changed,
        output_excerpt=args.output_excerpt, pr_url=args.pr_url, commit_sha=args.commit_sha, category=args.category,
        generation=args.generation, claim_id=args.claim_id)
    return {**result, "next_ready": _next_ready(ctx)}


def update_task_status(ctx: Context, args: Args) -> dict[str, Any]:
    return work.update_status(ctx.write(), args.task_id, args.to_status, args.actor, args.reason)


def apply_review_decision(ctx: Context, args: Args) -> dict[str, Any]:
    tx = ctx.write()
    project_row(tx.store)
    result = work.decide_review(tx, tx.store, args.task_id, approve=args.approve, reviewer=args.reviewer,
                                reason=args.reason, reason_code=args.reason_code)
    return {**result, "next_ready": _next_ready(ctx)}
