"""Handlers of the execution loop (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.planning.state import task_view
from anvil.engine.tasks import get_task as load_task
from anvil.engine.work import claims, decisions, evidence, offers, packets, views
from anvil.engine.work.claims import ClaimRequest, Fence
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        ApplyReviewDecisionInput,
        CheckConflictsInput,
        ClaimNextTaskInput,
        ClaimTaskInput,
        GenerateWorkPacketInput,
        GetDependencyGraphInput,
        GetNextTaskInput,
        GetTaskInput,
        ListTasksInput,
        ReleaseTaskInput,
        RenewClaimInput,
        SubmitCompletionEvidenceInput,
        SubmitProgressInput,
        UpdateTaskStatusInput,
    )

ROW_KEYS = ("id", "prd_id", "feature_id", "title", "status", "priority", "dependencies", "review_tier")


def _claim_view(claim: dict[str, Any] | None) -> dict[str, Any] | None:
    if claim is None:
        return None
    return {"id": claim["id"], "task_id": claim["task_id"], "claimed_by": claim["actor"],
            "generation": claim["generation"], "claimed_at": claim["claimed_at"],
            "lease_expires_at": claim["lease_expires_at"], "expected_files": claim["expected_files"]}


def _fence(args: RenewClaimInput | ReleaseTaskInput | SubmitProgressInput | SubmitCompletionEvidenceInput) -> Fence:
    return Fence(args["generation"], args["claim_id"])


def list_tasks(ctx: Context, args: ListTasksInput) -> dict[str, Any]:
    conn = ctx.store.conn
    page = views.list_tasks(conn, status=args["status"], feature_id=args["feature_id"],
                            claimed_by=args["claimed_by"], prd_id=args["prd_id"], limit=args["limit"],
                            cursor=args["cursor"])
    holders = claims.holders(conn, [t["id"] for t in page["tasks"]])
    tasks = [{**{k: v for k, v in task_view(t).items() if k in ROW_KEYS}, "claimed_by": holders.get(t["id"])}
             for t in page["tasks"]]
    return {"tasks": tasks, "count": len(tasks), "next_cursor": page["next_cursor"]}


def get_task(ctx: Context, args: GetTaskInput) -> dict[str, Any]:
    conn = ctx.store.conn
    task = load_task(conn, args["task_id"])
    return {**task_view(task), "claim": _claim_view(claims.active_claim(conn, task["id"])),
            "history": evidence.history(conn, task["id"])}


def _wanted(args: GetNextTaskInput | ClaimNextTaskInput) -> offers.OfferFilter:
    return offers.OfferFilter(args["prd_id"], args["max_blast"], args["max_review_risk"])


def get_next_task(ctx: Context, args: GetNextTaskInput) -> dict[str, Any]:
    found = offers.offer(ctx.store, args["actor"], ctx.clock(), _wanted(args))
    return {"task": task_view(found.task) if found.task else None, "reason": found.reason,
            "governor": found.governor}


def get_dependency_graph(ctx: Context, args: GetDependencyGraphInput) -> dict[str, Any]:
    return views.dependency_graph(ctx.store.conn, args["scope"], args["target_id"])


def check_conflicts(ctx: Context, args: CheckConflictsInput) -> dict[str, Any]:
    conn = ctx.store.conn
    task_id = load_task(conn, args["task_id"])["id"]
    return {"task_id": task_id, "conflicts": claims.file_conflicts(conn, args["proposed_files"], task_id)}


def generate_work_packet(ctx: Context, args: GenerateWorkPacketInput) -> dict[str, Any]:
    data = packets.packet_data(ctx.store.conn, args["task_id"])
    data["claim"] = _claim_view(data["claim"])
    content: Any = data if args["format"] == "json" else packets.render_markdown({**data, "claim": data["claim"] and {
        **data["claim"], "actor": data["claim"]["claimed_by"]}})
    return {"task_id": data["task_id"], "format": args["format"], "content": content}


def claim_task(ctx: Context, args: ClaimTaskInput) -> dict[str, Any]:
    request = ClaimRequest(args["task_id"], args["actor"], args["expected_files"], args["lease_duration_seconds"])
    return claims.claim(ctx.write(), ctx.location, request)


def claim_next_task(ctx: Context, args: ClaimNextTaskInput) -> dict[str, Any]:
    tx = ctx.write()
    found = offers.offer(tx.store, args["actor"], tx.now, _wanted(args))
    if found.task is None:
        return {"claim": None, "reason": found.reason}
    request = ClaimRequest(found.task["id"], args["actor"], None, args["lease_duration_seconds"])
    return {"claim": claims.claim(tx, ctx.location, request), "reason": None}


def renew_claim(ctx: Context, args: RenewClaimInput) -> dict[str, Any]:
    return claims.renew(ctx.write(), args["task_id"], args["actor"], _fence(args), args["extend_seconds"])


def release_task(ctx: Context, args: ReleaseTaskInput) -> dict[str, Any]:
    return claims.release(ctx.write(), args["task_id"], args["actor"], _fence(args), args["reason"],
                          confirmed=args["confirm"])


def submit_progress(ctx: Context, args: SubmitProgressInput) -> dict[str, Any]:
    note = evidence.ProgressNote(args["task_id"], args["actor"], args["notes"], args["phase"], args["detail"])
    return evidence.submit_progress(ctx.write(), note, _fence(args))


def _next_ready(ctx: Context) -> dict[str, Any] | None:
    return offers.brief(offers.next_claimable(ctx.write().conn))


def submit_completion_evidence(ctx: Context, args: SubmitCompletionEvidenceInput) -> dict[str, Any]:
    submission = evidence.EvidenceSubmission(
        args["task_id"], args["actor"], args["commands_run"], args["files_changed"], args["output_excerpt"],
        args["pr_url"], args["commit_sha"], args["category"])
    result = evidence.submit_evidence(ctx.write(), submission, _fence(args))
    return {**result, "next_ready": _next_ready(ctx)}


def update_task_status(ctx: Context, args: UpdateTaskStatusInput) -> dict[str, Any]:
    return decisions.update_status(ctx.write(), args["task_id"], args["to_status"], args["actor"], args["reason"])


def apply_review_decision(ctx: Context, args: ApplyReviewDecisionInput) -> dict[str, Any]:
    request = decisions.ReviewRequest(args["task_id"], args["approve"], args["reviewer"], args["reason"],
                                      args["reason_code"])
    result = decisions.decide_review(ctx.write(), request)
    return {**result, "next_ready": _next_ready(ctx)}
