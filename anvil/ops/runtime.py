"""Runs an operation: the one pipeline every surface goes through (stdlib + engine only).

The CLI's direct backend and the MCP server both end in :func:`execute`, so the reserved inputs
(``idempotency_key``, ``dry_run``, ``confirm``), stale-claim reaping and the transaction around a
mutation happen in one place whichever surface the call came from. This module must stay free of
pydantic, typer and the MCP SDK: the direct CLI path imports it.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anvil.engine.errors import AnvilError, ConfirmationRequired, InternalError, UsageError
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.paths import StateLocation, resolve_state
from anvil.engine.storage.store import Clock, Store, Transaction, format_ts, system_clock
from anvil.ops.contract import OpSpec

Sampler = Callable[[str, int], "str | None"]
"""Asks the calling MCP client's model for a completion: ``(prompt, max_tokens) -> text``."""

Handler = Callable[["Context", Any], dict[str, Any]]
"""An operation's handler: ``(ctx, validated input) -> output``. Each one annotates its input with the
operation's ``TypedDict`` from :mod:`anvil.ops.inputs`."""

NOT_REQUEST_FIELDS = frozenset({"idempotency_key", "dry_run"})


@dataclass
class Context:
    """Everything a handler may touch besides its input."""

    env: Mapping[str, str]
    cwd: str
    clock: Clock = system_clock
    sampler: Sampler | None = None
    tx: Transaction | None = None
    prepared: Any = None  # what the operation's prepare phase returned
    _location: StateLocation | None = None
    _store: Store | None = None
    _opened: list[Store] = field(default_factory=list)

    @property
    def location(self) -> StateLocation:
        if self._location is None:
            self._location = resolve_state(self.env, self.cwd)
        return self._location

    @property
    def store(self) -> Store:
        """The open state (raises ``NotFound`` when the project is not initialized)."""
        if self.tx is not None:
            return self.tx.store
        if self._store is None:
            self._store = Store.open(self.location, clock=self.clock)
            self._opened.append(self._store)
        return self._store

    def write(self) -> Transaction:
        """The current transaction of a mutating operation."""
        if self.tx is None:
            raise InternalError("a read-only operation tried to write", code="read_only_violation")
        return self.tx

    def require_confirm(self, confirmed: bool, why: str) -> None:
        """Refuse a destructive variant unless it was confirmed.

        Raises:
            ConfirmationRequired: ``confirmed`` is false.
        """
        if not confirmed:
            raise ConfirmationRequired(f"{why}: repeat with --yes (confirm: true)")

    def default_actor(self) -> str:
        return self.env.get("ANVIL_ACTOR", "").strip() or "anvil"

    def close(self) -> None:
        for store in self._opened:
            store.close()
        self._opened.clear()
        self._store = None


def load_handler(path: str) -> Handler:
    """The function at ``"module:function"`` (imported on first use)."""
    module, _, func = path.partition(":")
    handler: Handler = getattr(importlib.import_module(module), func)
    return handler


def request_digest(spec: OpSpec, args: Mapping[str, Any]) -> str:
    """What identifies a request for idempotency: the operation and its input, minus the retry controls."""
    return sha256_hex(canonical_json({"op": spec.name, "input": {k: v for k, v in args.items()
                                                                  if k not in NOT_REQUEST_FIELDS}}))


def execute(spec: OpSpec, args: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    """Run one validated call.

    Mutating operations run inside one write transaction that also covers stale-claim reaping
    and the idempotency record, so a retry can never produce a second event and a failure
    leaves nothing behind. ``dry_run`` runs everything, then rolls the transaction back.

    Raises:
        AnvilError: any failure; SQLite failures become ``InternalError``. Other exceptions are bugs:
            they propagate, and each surface reports them as one internal error.
    """
    for name in ("actor", "reviewer"):
        value = args.get(name)
        if isinstance(value, str) and (not value.strip() or value != value.strip()):
            raise UsageError(f"{name} must be a name without leading or trailing spaces", code="invalid_actor")
    handler = load_handler(spec.handler)
    call_args = dict(args)
    try:
        if not spec.mutating or spec.bootstrap:
            if spec.reaps and ctx.location.initialized:
                _reap_if_due(ctx)
            return handler(ctx, call_args)
        return _execute_mutation(spec, handler, call_args, ctx)
    except AnvilError:
        raise
    except sqlite3.Error as exc:
        raise InternalError(f"state database error ({type(exc).__name__})", code="state_error") from exc
    finally:
        ctx.close()


def _execute_mutation(spec: OpSpec, handler: Handler, args: dict[str, Any], ctx: Context) -> dict[str, Any]:
    from anvil.engine.storage import idempotency
    from anvil.engine.work.claims import reap_stale

    store = ctx.store
    if spec.prepare:
        # Slow work that needs no lock (e.g. asking the client's model) happens before the write.
        ctx.prepared = load_handler(spec.prepare)(ctx, args)
    actor = str(args.get("actor") or args.get("reviewer") or ctx.default_actor())
    key = args.get("idempotency_key")
    digest = request_digest(spec, args)
    dry_run = bool(args.get("dry_run"))
    refusal: AnvilError | None = None
    with store.write(actor) as tx:
        if key:
            earlier = idempotency.recall(tx, actor, spec.name, key, digest)
            if earlier is not None:
                tx.rollback_only = True
                return earlier
        # Reap at this transaction's own time (taken after the writer lock was granted), so a lease
        # that ran out while waiting for the lock is gone before the operation looks. A refused
        # operation is undone by its savepoint, but the reaping still commits.
        reap_stale(tx)
        ctx.tx = tx
        try:
            with tx.savepoint():
                output = handler(ctx, args)
        except AnvilError as error:
            refusal = error
            tx.rollback_only = dry_run or not tx.appended
        finally:
            ctx.tx = None
        if refusal is None and dry_run:
            tx.rollback_only = True
        elif refusal is None and key:
            idempotency.remember(tx, actor, spec.name, key, digest, output)
    if refusal is not None:
        raise refusal
    return output


def _reap_if_due(ctx: Context) -> None:
    """Reap expired claims before a read that must see them gone; a cheap read decides first."""
    from anvil.engine.work.claims import has_stale, reap_stale

    store = ctx.store
    if has_stale(store.conn, format_ts(ctx.clock())):
        with store.write(ctx.default_actor()) as tx:
            reap_stale(tx)


def default_context(env: Mapping[str, str] | None = None, cwd: str | None = None,
                    sampler: Sampler | None = None) -> Context:
    return Context(env=dict(os.environ) if env is None else env, cwd=cwd or os.getcwd(), sampler=sampler)
