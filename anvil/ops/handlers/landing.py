"""Handlers of the landing queue (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.work import landing
from anvil.ops.handlers.reporting import _artifacts as artifacts  # one reader of artifact files and base64
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import GetLandingQueueInput, LandTaskInput


def land_task(ctx: Context, args: LandTaskInput) -> dict[str, Any]:
    results = artifacts(ctx, None, args["result_artifacts_base64"], "--result")
    report = landing.LandingReport(
        task_ids=tuple(args["task_ids"]), lander=ctx.caller, outcome=args["outcome"],
        approved_commits=tuple(args["approved_commits"]), target=args["target"], remote=args["remote"],
        method=args["method"], target_commit=args["target_commit"], landed_commit=args["landed_commit"],
        changed_paths=tuple(args["changed_paths"]), results=results, reason=args["reason"],
        conflict_paths=tuple(args["conflict_paths"]), failed_command=args["failed_command"], excerpt=args["excerpt"])
    return landing.record(ctx.write(), report)


def get_landing_queue(ctx: Context, args: GetLandingQueueInput) -> dict[str, Any]:
    return landing.queue(ctx.store.conn, ctx.store.now())
