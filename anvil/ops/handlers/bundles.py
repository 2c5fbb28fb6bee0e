"""Handlers of the execution bundle operations (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.prd import lifecycle as prd_state
from anvil.engine.work import claims
from anvil.engine.work.bundles import coordinator, delivery, lifecycle, packet, review, rows
from anvil.engine.work.claims import Fence
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        CheckpointBundleInput,
        ClaimBundleInput,
        CreateBundleInput,
        FinalizeBundleReviewInput,
        GenerateBundlePacketInput,
        GetBundleInput,
        ListBundlesInput,
        ReconcileBundleInput,
        RecordBundleReviewInput,
        SubmitBundleProgressInput,
        SupersedeBundleInput,
    )

ISOLATION_WARNINGS = {
    "off": "git integration is off in this project (`anvil config --git-mode`): no branch or worktree is made for "
           "the bundle or its members, every member is worked in the caller's working tree; pass shared_tree "
           "(--shared-tree) to acknowledge it",
    "branch": "the bundle's claim takes no git step, and each member claim switches the caller's checkout to that "
              "member's claim branch (git mode branch): one checkout works one member at a time; pass shared_tree "
              "(--shared-tree) to acknowledge it",
}
"""What a bundle claim says about isolation, by the project's git mode, unless shared_tree acknowledged it."""
WORKTREE_SHARED_WARNING = ("this project isolates claims in worktrees (git mode worktree): shared_tree on the "
                           "bundle's claim changes no member claim, each still takes a worktree of its own; pass "
                           "shared_tree on a member's claim to work it in the shared checkout")
"""In a worktree-isolated project each member claim takes a worktree of its own (the anvil CLI or a stdio
server makes it), so the bundle's claim needs no acknowledgement; shared_tree there is answered with
what it does not do."""


def create_bundle(ctx: Context, args: CreateBundleInput) -> dict[str, Any]:
    tx = ctx.write()
    plan = lifecycle.BundlePlan(
        bundle_id=args["bundle_id"], prd_id=prd_state.resolve_prd_id(args["prd_id"], ctx.env, tx.conn),
        task_ids=args["task_ids"], coordinator=args["coordinator"], max_tasks=args["max_tasks"],
        max_serial_stages=args["max_serial_stages"], max_reviews=args["max_reviews"],
        max_rereviews=args["max_rereviews"],
        required_angles=tuple(args["required_angles"] or lifecycle.DEFAULT_ANGLES))
    return {"bundle": lifecycle.create(tx, plan)}


def list_bundles(ctx: Context, args: ListBundlesInput) -> dict[str, Any]:
    found = rows.list_bundles(ctx.store.conn, args["prd_id"], args["status"])
    return {"bundles": found, "count": len(found)}


def get_bundle(ctx: Context, args: GetBundleInput) -> dict[str, Any]:
    return {"bundle": rows.detail(ctx.store.conn, args["bundle_id"])}


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A continuation: the MCP tool call and the equivalent CLI argv."""
    from anvil.ops.cliargs import cli_argv_for
    from anvil.ops.contract import spec_named

    return {"tool": tool, "arguments": arguments, "argv": ["anvil", *cli_argv_for(spec_named(tool), arguments)]}


def continuations(bundle_id: str, actor: str, generation: int) -> dict[str, Any]:
    """The calls a coordinator makes next, fenced with its generation."""
    held = {"actor": actor, "generation": generation}
    return {
        "renew": _call("renew_claim", {"task_id": bundle_id, "target_kind": "bundle", **held}),
        "release": _call("release_task", {"task_id": bundle_id, "target_kind": "bundle", **held}),
        "progress": _call("submit_bundle_progress", {"bundle_id": bundle_id, "phase": "build", **held}),
        "complete": _call("submit_bundle_progress", {"bundle_id": bundle_id, "phase": "done", "complete": True,
                                                     **held}),
    }


def claim_bundle(ctx: Context, args: ClaimBundleInput) -> dict[str, Any]:
    tx = ctx.write()
    request = coordinator.BundleClaimRequest(args["bundle_id"], ctx.caller.actor, args["lease_minutes"])
    claim = coordinator.claim(tx, request)
    warnings = isolation_warnings(claims.git_mode_setting(tx.conn), shared_tree=args["shared_tree"])
    return {"bundle": rows.detail(tx.conn, claim["bundle_id"]), "claim": claim, "coordinator": claim["claimed_by"],
            "warnings": warnings,
            "continuations": continuations(claim["bundle_id"], claim["claimed_by"], claim["generation"])}


def isolation_warnings(git_mode: str, *, shared_tree: bool) -> list[str]:
    """What a bundle claim tells its coordinator about where members are worked (see ISOLATION_WARNINGS)."""
    if git_mode == "worktree":
        return [WORKTREE_SHARED_WARNING] if shared_tree else []
    return [] if shared_tree else [ISOLATION_WARNINGS.get(git_mode, ISOLATION_WARNINGS["off"])]


def generate_bundle_packet(ctx: Context, args: GenerateBundlePacketInput) -> dict[str, Any]:
    data = packet.packet_data(ctx.store.conn, args["bundle_id"])
    data["reader"] = args["actor"]
    content: str | dict[str, Any] = data if args["format"] == "json" else packet.render_markdown(data)
    return {"bundle_id": data["bundle_id"], "format": args["format"], "content": content}


def submit_bundle_progress(ctx: Context, args: SubmitBundleProgressInput) -> dict[str, Any]:
    tx = ctx.write()
    report = lifecycle.BundleProgress(args["bundle_id"], ctx.caller.actor, args["phase"], args["detail"],
                                      list(args["member_task_ids"] or []), args["complete"])
    result = lifecycle.progress(tx, report, Fence(args["generation"], args["claim_id"]))
    return {"bundle": rows.detail(tx.conn, args["bundle_id"]), **result}


def record_bundle_review(ctx: Context, args: RecordBundleReviewInput) -> dict[str, Any]:
    tx = ctx.write()
    request = review.BundleVerdictRequest(args["bundle_id"], ctx.caller, args["review_round"], args["angle"],
                                          args["decision"], args["notes"])
    result = review.record(tx, request)
    bundle = rows.detail(tx.conn, args["bundle_id"])
    return {"bundle": bundle, "gate": bundle["gate"], **result}


def finalize_bundle_review(ctx: Context, args: FinalizeBundleReviewInput) -> dict[str, Any]:
    tx = ctx.write()
    result = review.finalize(tx, args["bundle_id"], ctx.caller)
    bundle = rows.detail(tx.conn, args["bundle_id"])
    return {"bundle": bundle, "gate": bundle["gate"], **result}


def checkpoint_bundle(ctx: Context, args: CheckpointBundleInput) -> dict[str, Any]:
    tx = ctx.write()
    result = delivery.checkpoint(tx, args["bundle_id"], delivery.DeliveryReference(args["commit_sha"], args["pr_url"]))
    return {"bundle_id": rows.get_bundle(tx.conn, args["bundle_id"])["id"], **result}


def reconcile_bundle(ctx: Context, args: ReconcileBundleInput) -> dict[str, Any]:
    tx = ctx.write()
    reference = delivery.DeliveryReference(args["commit_sha"], args["pr_url"])
    result = delivery.reconcile(tx, args["bundle_id"], reference, args["merged"])
    return {"bundle": rows.detail(tx.conn, args["bundle_id"]), **result}


def supersede_bundle(ctx: Context, args: SupersedeBundleInput) -> dict[str, Any]:
    tx = ctx.write()
    result = lifecycle.supersede(tx, args["bundle_id"], args["replacement_bundle_id"], ctx.caller)
    return {"bundle": rows.detail(tx.conn, args["bundle_id"]), **result}
