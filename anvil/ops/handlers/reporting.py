"""Handlers that report and decide on work: progress, evidence, status changes and reviews (stdlib + engine only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.engine.errors import NotFound, Refused, UsageError
from anvil.engine.work import decisions, evidence, offers
from anvil.engine.work.claims import Fence
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        ApplyReviewDecisionInput,
        ApplyReviewDecisionsInput,
        SubmitCompletionEvidenceInput,
        SubmitProgressInput,
        UpdateTaskStatusInput,
    )


def _fence(args: SubmitProgressInput | SubmitCompletionEvidenceInput | UpdateTaskStatusInput) -> Fence:
    return Fence(args["generation"], args["claim_id"])


def _artifacts(ctx: Context, paths: list[str] | None, encoded: list[str] | None, flag: str) -> list[bytes]:
    """Artifact bytes from base64 content, or from files a local caller named (a remote server never
    reads its own disk for a caller: the CLI sends the bytes)."""
    from anvil.engine.localread import read_named_file
    from anvil.engine.proof.artifacts import MAX_ARTIFACT_BYTES, decode_base64

    out = [decode_base64(text, f"artifact {n}") for n, text in enumerate(encoded or [], 1)]
    for name in paths or []:
        if ctx.remote:
            raise UsageError(f"{flag} names a file on your machine: send its bytes base64-encoded (the anvil CLI does)",
                             code="invalid_input")
        out.append(read_named_file(Path(ctx.cwd) / name, MAX_ARTIFACT_BYTES, flag, "artifact"))
    return out


def submit_progress(ctx: Context, args: SubmitProgressInput) -> dict[str, Any]:
    files = [args["attestation_file"]] if args["attestation_file"] else None
    found = _artifacts(ctx, files, [args["attestation_base64"]] if args["attestation_base64"] else None,
                       "--attestation-file")
    note = evidence.ProgressNote(args["task_id"], ctx.caller.actor, args["notes"], args["phase"], args["detail"],
                                 found[0] if found else None, any_task=ctx.caller.may("reviewer"))
    return evidence.submit_progress(ctx.write(), note, _fence(args))


def _next_ready(ctx: Context) -> dict[str, Any] | None:
    """The task an agent could claim next, read from the committed state after the write (see
    ``runtime.AFTER_COMMIT_HINTS``), or inside a dry run's transaction."""
    return offers.brief(offers.next_claimable(ctx.store.conn))


def next_ready_after_submit(ctx: Context, output: dict[str, Any]) -> None:
    """Handing work in frees the agent for the next task; a note (diagnostic...) keeps it on this one."""
    output["next_ready"] = _next_ready(ctx) if output["claim_ended"] else None


def next_ready_after_review(ctx: Context, output: dict[str, Any]) -> None:
    output["next_ready"] = _next_ready(ctx)


def next_ready_after_reviews(ctx: Context, output: dict[str, Any]) -> None:
    output["next_ready"] = _next_ready(ctx) if output["decided"] else None


def submit_completion_evidence(ctx: Context, args: SubmitCompletionEvidenceInput) -> dict[str, Any]:
    proofs = _artifacts(ctx, args["proof_files"], args["command_proof_artifacts_base64"], "--proof")
    submission = evidence.EvidenceSubmission(
        args["task_id"], ctx.caller.actor, args["commands_run"], args["files_changed"], args["output_excerpt"],
        args["pr_url"], args["commit_sha"], args["category"] or "completion", proofs, args["tree_sha"])
    return {**evidence.submit_evidence(ctx.write(), submission, _fence(args)), "next_ready": None}


def update_task_status(ctx: Context, args: UpdateTaskStatusInput) -> dict[str, Any]:
    return decisions.update_status(ctx.write(), args["task_id"], args["to_status"], ctx.caller, args["reason"],
                                   _fence(args))


def apply_review_decision(ctx: Context, args: ApplyReviewDecisionInput) -> dict[str, Any]:
    # The reviewer is the caller: ``actor`` and its old alias ``reviewer`` were resolved into it.
    request = decisions.ReviewRequest(args["task_id"], args["approve"], ctx.caller, args["reason"],
                                      args["reason_code"], tuple(args["quality_findings"] or ()), args["strict"])
    tx = ctx.write()
    result = decisions.decide_review(tx, request)
    basis = result.pop("basis")
    report = decisions.rejection_report(tx, result["task_id"], basis) if result["decision"] == "rejected" else \
        {"rejection": None, "rejection_metrics": None}
    return {**result, **report, "next_ready": None}


def apply_review_decisions(ctx: Context, args: ApplyReviewDecisionsInput) -> dict[str, Any]:
    """Each task decided as :func:`apply_review_decision` decides one, in one transaction; a refused one
    is reported and nothing is written for it, the others stand.

    Every decision is planned (its rules checked, reading only) before the first is recorded, so an
    optimistic write reads them all before it takes the writer lock; a task named again after its
    decision was planned is decided after the ones before it are recorded, so it meets their outcome.
    """
    from anvil.engine.project import project_row

    tx = ctx.write()
    config = project_row(tx.store)["config"]
    decided: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    pending = list(args["task_ids"])
    while pending:
        planned: list[decisions.PlannedReview] = []
        while pending:
            request = decisions.ReviewRequest(pending[0], args["approve"], ctx.caller, args["reason"],
                                              args["reason_code"], tuple(args["quality_findings"] or ()),
                                              args["strict"])
            try:
                plan = decisions.plan_review(tx, request, config)
            except (Refused, NotFound, UsageError) as exc:  # a rule's answer about this task; anything else ends it
                refused.append({"task_id": pending.pop(0), "code": exc.code, "message": exc.message})
                continue
            if any(p.result["task_id"] == plan.result["task_id"] for p in planned):
                break  # named twice: planned again once the first decision is recorded
            planned.append(plan)
            pending.pop(0)
        for plan in planned:
            with tx.savepoint():
                result = dict(decisions.record_review(tx, plan))
                basis = result.pop("basis")
                report = decisions.rejection_report(tx, result["task_id"], basis) \
                    if result["decision"] == "rejected" else {"rejection": None, "rejection_metrics": None}
            decided.append({**result, **report})
    return {"decided": decided, "refused": refused, "decided_count": len(decided), "refused_count": len(refused),
            "next_ready": None}
