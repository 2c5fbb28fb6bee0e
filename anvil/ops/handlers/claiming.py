"""Handlers that hand out and hold work: offers, claims, renewals and releases (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.errors import Refused, UsageError
from anvil.engine.git.plan import decode as decode_text
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


def claimable_now(ctx: Context, args: ClaimNextTaskInput) -> bool:
    """The lock-free look of a waiting ``claim_next_task``: would the offer find a task for the caller
    now, or has a lease run out (the write reaps it, which may free one)? One read snapshot, no lock."""
    from anvil.engine.storage.store import format_ts
    from anvil.engine.work.claims import next_lease_end

    store = ctx.store
    now = store.now()
    with store.snapshot() as conn:
        end = next_lease_end(conn)
        if end is not None and end <= format_ts(now):
            return True
        return offers.offer(store, ctx.caller.actor, now, _wanted(args), report=False).task is not None


def _git(args: ClaimTaskInput | ClaimNextTaskInput) -> tuple[str | None, dict[str, Any] | None]:
    """The claim's git mode (a worktree path asks for worktree mode) and the caller's checkout facts.

    The CLI resolves ``worktree_path`` against its own directory into the plan; a plan without one
    takes an absolute ``worktree_path`` given beside it.
    """
    mode, path = args["git_mode"], args["worktree_path"]
    facts = decode_text(args["git_plan"]) if args["git_plan"] is not None else None
    if mode is None and (path is not None or (facts is not None and facts.get("worktree_path") is not None)):
        mode = "worktree"  # a worktree path asks for a worktree, however it arrived (the CLI moves it into the plan)
    if mode in ("branch", "worktree") and facts is not None and facts.get("toplevel") is None:
        # Asked for by this call, not the project's default (which a caller outside git skips): never ignored.
        raise Refused(f"this claim asks for a {'worktree' if mode == 'worktree' else 'claim branch'}, but the caller's "
                      "directory is in no git checkout: claim from inside the repository, or leave git_mode and "
                      "worktree_path out", code="git_checkout_missing")
    if facts is not None and path is not None and facts.get("worktree_path") is None:
        if not path.startswith("/"):
            raise UsageError("--worktree-path must be absolute when the call carries no plan from the CLI",
                             code="invalid_input")
        facts["worktree_path"] = path
    return mode, facts


def claim_task(ctx: Context, args: ClaimTaskInput) -> dict[str, Any]:
    tx = ctx.write()
    mode, facts = _git(args)
    if args["shared_tree"]:
        mode = _shared_tree(mode, facts, claims.git_mode_setting(tx.conn))
    request = ClaimRequest(args["task_id"], ctx.caller.actor, args["expected_files"], args["lease_duration_seconds"],
                           mode, facts, args["expected_revision"])
    return claims.claim(tx, request)


def _shared_tree(mode: str | None, facts: dict[str, Any] | None, project_mode: str) -> str | None:
    """The git mode of a claim that opts into the shared tree: a project default of worktree
    isolation gives way to the claim branch in the caller's checkout (the CLI sends it), or to no git
    step when no checkout was described (an MCP client's call).

    Raises:
        UsageError: ``invalid_input`` when the call also asks for a worktree.
    """
    if mode == "worktree":
        raise UsageError("shared_tree and a worktree contradict each other: pass one of them", code="invalid_input",
                         details={"field": "shared_tree"})
    if mode is None and project_mode == "worktree":
        return "branch" if facts is not None else "off"
    return mode


def claim_next_task(ctx: Context, args: ClaimNextTaskInput) -> dict[str, Any]:
    tx = ctx.write()
    found = offers.offer(tx.store, ctx.caller.actor, tx.now, _wanted(args), report=False)
    if found.task is None:
        return {"claim": None, "reason": found.reason}
    mode, facts = _git(args)
    if mode is None:  # the project's setting, as the offer read it (in this transaction): not read again
        mode = str(found.config.get("git_mode") or "off")
    request = ClaimRequest(found.task["id"], ctx.caller.actor, None, args["lease_duration_seconds"], mode, facts)
    return {"claim": claims.claim(tx, request, found.task), "reason": None}


def _fence(args: RenewClaimInput | ReleaseTaskInput) -> Fence:
    return Fence(args["generation"], args["claim_id"])


def renew_claim(ctx: Context, args: RenewClaimInput) -> dict[str, Any]:
    if args["target_kind"] == "bundle":  # a coordinator's lease: no attestation to consume
        return {**coordinator.renew(ctx.write(), args["task_id"], ctx.caller.actor, _fence(args),
                                    args["extend_seconds"]), "progress": None}
    return claims.renew(ctx.write(), args["task_id"], ctx.caller.actor, _fence(args), args["extend_seconds"])


def release_task(ctx: Context, args: ReleaseTaskInput) -> dict[str, Any]:
    release = coordinator.release if args["target_kind"] == "bundle" else claims.release
    return release(ctx.write(), args["task_id"], ctx.caller, _fence(args), args["reason"], confirmed=args["confirm"])
