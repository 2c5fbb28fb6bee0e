"""Handlers of the bootstrap, status and introspection operations (stdlib + engine only)."""

from __future__ import annotations

from typing import Any

from anvil.engine import project
from anvil.ops.runtime import Args, Context


def init_project(ctx: Context, args: Args) -> dict[str, Any]:
    return project.init_project(ctx.location, name=args.name, description=args.description,
                                actor=ctx.default_actor(), force=args.force, confirm=args.confirm,
                                dry_run=args.dry_run, clock=ctx.clock)


def get_project_status(ctx: Context, args: Args) -> dict[str, Any]:
    return project.status(ctx.location, args.prd_id)


def get_project_summary(ctx: Context, args: Args) -> dict[str, Any]:
    return project.summary(ctx.store)


def describe_surface(ctx: Context, args: Args) -> dict[str, Any]:
    from anvil.ops.spec import describe

    return describe()


def verify_state(ctx: Context, args: Args) -> dict[str, Any]:
    from anvil.engine.verify import verify

    return verify(ctx.store)


def configure_project(ctx: Context, args: Args) -> dict[str, Any]:
    changes = {k: args[k] for k in project.CONFIG_KEYS if args.get(k) is not None}
    return project.configure(ctx.write(), changes)
