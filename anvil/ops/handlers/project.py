"""Handlers of the bootstrap, status and introspection operations (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine import project
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import (
        ConfigureProjectInput,
        DescribeSurfaceInput,
        GetBoardInput,
        GetProjectStatusInput,
        GetProjectSummaryInput,
        InitProjectInput,
        RebuildStateInput,
        VerifyStateInput,
    )



def init_project(ctx: Context, args: InitProjectInput) -> dict[str, Any]:
    request = project.InitRequest(name=args["name"], description=args["description"], actor=ctx.caller.actor,
                                  force=args["force"], confirm=args["confirm"], dry_run=args["dry_run"])
    return project.init_project(ctx.location, request, clock=ctx.clock, lock_timeout=ctx.lock_timeout)


def get_project_status(ctx: Context, args: GetProjectStatusInput) -> dict[str, Any]:
    """The bootstrap probe, for the PRD named (``prd_id``, else ``ANVIL_PRD``), else for every PRD."""
    from anvil.engine.prd.lifecycle import resolve_prd_id

    named = args["prd_id"] or ctx.env.get("ANVIL_PRD", "").strip()
    return project.status(ctx.location, resolve_prd_id(named, {}) if named else None)


def get_project_summary(ctx: Context, args: GetProjectSummaryInput) -> dict[str, Any]:
    return project.summary(ctx.store)


def get_board(ctx: Context, args: GetBoardInput) -> dict[str, Any]:
    """The board now, or (with ``after_seq`` and ``wait_seconds``) once the state moved past ``after_seq``."""
    from anvil.engine.storage.changes import wait_for_change
    from anvil.engine.storage.store import format_ts
    from anvil.engine.tasks import unfinished_dependencies
    from anvil.engine.work.board import board_view

    if args["after_seq"] is not None and args["wait_seconds"] and ctx.location.initialized:
        wait_for_change(ctx.location, args["after_seq"], args["wait_seconds"])
    store = ctx.store
    with store.snapshot() as conn:
        view = board_view(conn, format_ts(ctx.store.now()), page_size=args["page_size"], column=args["column"],
                          cursor=args["cursor"])
        waits = unfinished_dependencies(conn, [t["id"] for t in view["tasks"] if t["status"] == "ready"])
        name = project.project_row(store)["name"]
    tasks = [{**task, "blocked_by": waits.get(task["id"], [])} for task in view["tasks"]]
    return {**view, "tasks": tasks, "project": name}


def describe_surface(ctx: Context, args: DescribeSurfaceInput) -> dict[str, Any]:
    """The live manifest of the CLI commands and MCP tools (see :mod:`anvil.ops.manifest`)."""
    from anvil import __version__
    from anvil.engine.storage.migrations import SCHEMA_VERSION
    from anvil.ops.buildinfo import build_identity
    from anvil.ops.contract import load_specs
    from anvil.ops.manifest import manifest

    return {**manifest(load_specs(), __version__, SCHEMA_VERSION), **build_identity(__version__)}


def verify_state(ctx: Context, args: VerifyStateInput) -> dict[str, Any]:
    from anvil.engine.storage.integrity import verify

    return verify(ctx.store)


def rebuild_state(ctx: Context, args: RebuildStateInput) -> dict[str, Any]:
    from anvil.engine.storage.rebuild import RebuildRequest, rebuild

    request = RebuildRequest(confirm=args["confirm"], dry_run=args["dry_run"])
    return rebuild(ctx.location, request, clock=ctx.clock, lock_timeout=ctx.lock_timeout)


def configure_project(ctx: Context, args: ConfigureProjectInput) -> dict[str, Any]:
    asked: dict[str, Any] = {"self_review": args["self_review"], "accept_rate_floor": args["accept_rate_floor"],
             "accept_rate_window_days": args["accept_rate_window_days"], "review_queue_cap": args["review_queue_cap"],
             "require_fencing": args["require_fencing"], "git_mode": args["git_mode"],
             "evidence_gate": args["evidence_gate"]}
    asked["require_verified"] = args["require_verified"]
    asked.update(land_target=args["land_target"], land_remote=args["land_remote"], land_method=args["land_method"],
                 land_delete_branch=args["land_delete_branch"])
    return project.configure(ctx.write(), {key: value for key, value in asked.items() if value is not None})
