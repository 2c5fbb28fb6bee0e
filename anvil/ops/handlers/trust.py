"""Handlers of the trust list (stdlib + engine only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anvil.engine.proof import signing
from anvil.ops.runtime import Context

if TYPE_CHECKING:
    from anvil.ops.inputs import AddTrustedKeyInput, ListTrustedKeysInput, RemoveTrustedKeyInput


def add_trusted_key(ctx: Context, args: AddTrustedKeyInput) -> dict[str, Any]:
    return signing.add_trusted(ctx.write(), args["public_key"], args["label"])


def list_trusted_keys(ctx: Context, args: ListTrustedKeysInput) -> dict[str, Any]:
    keys = signing.list_trusted(ctx.store.conn, args["all"])
    return {"keys": keys, "count": len(keys)}


def remove_trusted_key(ctx: Context, args: RemoveTrustedKeyInput) -> dict[str, Any]:
    return signing.remove_trusted(ctx.write(), args["key_id"])
