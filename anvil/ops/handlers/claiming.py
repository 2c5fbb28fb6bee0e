"""Handlers that hand out and hold work: offers, claims, renewals and releases (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.tasks import task_view
from anvil.engine.work import claims, offers
from anvil.engine.work.bundles import coordinator
from anvil.engine.work.claims import ClaimRequest, Fence
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        ClaimNextTaskInput,
        ClaimTaskInput,
        GetNextTaskInput,
        ReleaseTaskInput,
        RenewClaimInput,
    )


def _wanted(args: GetNextTaskInput | ClaimNextTaskInput) -> offers.OfferFilter:
    return offers.OfferFilter(args["prd_id"], args["max_blast"], args["max_review_risk"])


def get_next_task(ctx: Context, args: GetNextTaskInput) -> dict[str, Any]:
    found = offers.offer(ctx.store, args["actor"], ctx.store.now(), _wanted(args))
    task = None
    if found.task:
        task = {**task_view(found.task), "conflict_warnings": offers.conflict_warnings(ctx.store.conn,
                                                                                       found.task["id"])}
    return {"task": task, "reason": found.reason, "governor": found.governor}


def claim_task(ctx: Context, args: ClaimTaskInput) -> dict[str, Any]:
    request = ClaimRequest(args["task_id"], ctx.caller.actor, args["expected_files"], args["lease_duration_seconds"])
    return claims.claim(ctx.write(), request)


def claim_next_task(ctx: Context, args: ClaimNextTaskInput) -> dict[str, Any]:
    tx = ctx.write()
    found = offers.offer(tx.store, ctx.caller.actor, tx.now, _wanted(args))
    if found.task is None:
        return {"claim": None, "reason": found.reason}
    request = ClaimRequest(found.task["id"], ctx.caller.actor, None, args["lease_duration_seconds"])
    return {"claim": claims.claim(tx, request), "reason": None}


def _fence(args: RenewClaimInput | ReleaseTaskInput) -> Fence:
    return Fence(args["generation"], args["claim_id"])


def renew_claim(ctx: Context, args: RenewClaimInput) -> dict[str, Any]:
    if args["target_kind"] == "bundle":
        return coordinator.renew(ctx.write(), args["task_id"], ctx.caller.actor, _fence(args), args["extend_seconds"])
    return claims.renew(ctx.write(), args["task_id"], ctx.caller.actor, _fence(args), args["extend_seconds"])


def release_task(ctx: Context, args: ReleaseTaskInput) -> dict[str, Any]:
    release = coordinator.release if args["target_kind"] == "bundle" else claims.release
    return release(ctx.write(), args["task_id"], ctx.caller, _fence(args), args["reason"], confirmed=args["confirm"])
