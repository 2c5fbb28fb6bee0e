"""Handlers of the team-access operations: bearer tokens (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine import credentials
from anvil.engine.errors import AuthFailed
from anvil.engine.storage.store import format_ts
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import AddTokenInput, ListTokensInput, RevokeTokenInput

ONCE = ("the token is shown only here and cannot be recovered: hand it to its holder now, through an environment "
        "variable their --mcp-token-env names (null token: a dry run, or the retry of an earlier call; revoke "
        "that token_id and issue another if it was lost)")


def add_token(ctx: Context, args: AddTokenInput) -> dict[str, Any]:
    lifetime = credentials.parse_lifetime(args["expires"]) if args["expires"] is not None else None
    if ctx.remote and not ctx.caller.authenticated and not args["dry_run"]:
        # A shared-token (or open loopback) caller issuing the first token would switch the server to
        # per-agent tokens and lock every other shared-token client out without a word (a dry run
        # issues nothing, so it locks nobody out).
        raise AuthFailed("over HTTP only a lead's own per-agent token may issue tokens: issue the first one with a "
                         "direct call where the state is reachable (`anvil token add NAME --role lead`)",
                         code="token_issue_needs_lead_token")
    grant = credentials.Grant(args["name"], args["role"], lifetime)
    return {**credentials.issue(ctx.write(), grant), "notice": ONCE}


def list_tokens(ctx: Context, args: ListTokensInput) -> dict[str, Any]:
    now = format_ts(ctx.store.now())  # the database's clock on PostgreSQL
    rows = credentials.listing(ctx.store.conn, now, actor=args["name"], include_ended=args["all"])
    return {"tokens": rows, "count": len(rows)}


def revoke_token(ctx: Context, args: RevokeTokenInput) -> dict[str, Any]:
    return credentials.revoke(ctx.write(), args["name"], args["token_id"])
