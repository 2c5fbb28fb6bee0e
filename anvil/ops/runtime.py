"""Runs an operation: the one pipeline every surface goes through (stdlib + engine only).

The CLI's direct backend and the MCP server both end in :func:`execute`, so the reserved inputs
(``idempotency_key``, ``dry_run``, ``confirm``), stale-claim reaping and the transaction around a
mutation happen in one place whichever surface the call came from. This module must stay free of
pydantic, typer and the MCP SDK: the direct CLI path imports it.
"""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anvil.engine.canonical import canonical_json, sha256_hex
from anvil.engine.errors import AnvilError, ConfirmationRequired, InternalError, Refused, UsageError
from anvil.engine.paths import StateLocation, resolve_state
from anvil.engine.store import Clock, Store, Transaction, system_clock

Sampler = Callable[[str, int], "str | None"]
"""Asks the calling MCP client's model for a completion: ``(prompt, max_tokens) -> text``."""

NOT_REQUEST_FIELDS = frozenset({"idempotency_key", "dry_run"})


@dataclass(frozen=True, slots=True)
class OpMeta:
    """What the runtime needs to know about an operation (no pydantic involved)."""

    name: str
    handler: str  # "module:function"
    effect: str  # read | mutating | destructive
    bootstrap: bool = False  # the handler creates the state itself (init)
    reaps: bool = False  # a read that reaps stale claims first (next, summary)
    prepare: str | None = None  # "module:function" run before the writer lock; its result is ctx.prepared


class Args(dict[str, Any]):
    """Validated input: a dict whose keys also read as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


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

    def require_confirm(self, args: Mapping[str, Any], why: str) -> None:
        """Refuse a destructive variant unless ``confirm`` was given.

        Raises:
            ConfirmationRequired: ``confirm`` is false.
        """
        if not args.get("confirm"):
            raise ConfirmationRequired(f"{why}: repeat with --yes (confirm: true)")

    def default_actor(self) -> str:
        return self.env.get("ANVIL_ACTOR", "").strip() or "anvil"

    def close(self) -> None:
        for store in self._opened:
            store.close()
        self._opened.clear()
        self._store = None


def load_handler(meta: OpMeta, path: str | None = None) -> Callable[[Context, Args], Any]:
    module, _, func = (path or meta.handler).partition(":")
    handler: Callable[[Context, Args], dict[str, Any]] = getattr(importlib.import_module(module), func)
    return handler


def request_digest(meta: OpMeta, args: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_json({"op": meta.name, "input": {k: v for k, v in args.items()
                                                                  if k not in NOT_REQUEST_FIELDS}}))


def execute(meta: OpMeta, args: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
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
    handler = load_handler(meta)
    call_args = Args(args)
    try:
        if meta.effect == "read" or meta.bootstrap:
            if meta.reaps and ctx.location.initialized:
                _reap_if_due(ctx)
            return handler(ctx, call_args)
        return _execute_mutation(meta, handler, call_args, ctx)
    except AnvilError:
        raise
    except sqlite3.Error as exc:
        raise InternalError(f"state database error ({type(exc).__name__})", code="state_error") from exc
    finally:
        ctx.close()


def _execute_mutation(meta: OpMeta, handler: Callable[[Context, Args], dict[str, Any]], args: Args,
                      ctx: Context) -> dict[str, Any]:
    store = ctx.store
    if meta.prepare:
        # Slow work that needs no lock (e.g. asking the client's model) happens before the write.
        ctx.prepared = load_handler(meta, meta.prepare)(ctx, args)
    actor = str(args.get("actor") or args.get("reviewer") or ctx.default_actor())
    key = args.get("idempotency_key")
    dry_run = bool(args.get("dry_run"))
    refusal: AnvilError | None = None
    with store.write(actor) as tx:
        if key:
            row = tx.conn.execute(
                "SELECT request_digest, result FROM idempotency WHERE actor = ? AND operation = ? AND key = ?",
                (actor, meta.name, key)).fetchone()
            if row is not None:
                tx.rollback_only = True
                if row[0] != request_digest(meta, args):
                    raise Refused("this idempotency key was already used with a different input",
                                  code="idempotency_conflict")
                result: dict[str, Any] = json.loads(row[1])
                return result
        # Reap at this transaction's own time (taken after the writer lock was granted), so a lease
        # that ran out while waiting for the lock is gone before the operation looks. A refused
        # operation is undone by its savepoint, but the reaping still commits.
        _reap(tx)
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
            tx.conn.execute(
                "INSERT INTO idempotency (actor, operation, key, request_digest, result, created_at) "
                "VALUES (?,?,?,?,?,?)",
                (actor, meta.name, key, request_digest(meta, args), canonical_json(output), tx.ts))
    if refusal is not None:
        raise refusal
    return output


def _reap(tx: Transaction) -> None:
    from anvil.engine.claims import reap_stale

    reap_stale(tx)


def _reap_if_due(ctx: Context) -> None:
    """Reap expired claims before a read that must see them gone; a cheap read decides first."""
    from anvil.engine.claims import has_stale
    from anvil.engine.store import format_ts

    store = ctx.store
    if has_stale(store.conn, format_ts(ctx.clock())):
        with store.write(ctx.default_actor()) as tx:
            _reap(tx)


def default_context(env: Mapping[str, str] | None = None, cwd: str | None = None,
                    sampler: Sampler | None = None) -> Context:
    return Context(env=dict(os.environ) if env is None else env, cwd=cwd or os.getcwd(), sampler=sampler)


def invoke(name: str, arguments: Mapping[str, Any], *, sampler: Sampler | None = None,
           env: Mapping[str, str] | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Validate ``arguments`` with the operation's pydantic input model and run it.

    Used by the MCP server and the CLI's Typer path (both already pay for pydantic).

    Raises:
        UsageError: unknown operation or invalid arguments.
        AnvilError: any failure of the operation itself.
    """
    from anvil.ops.registry import get_operation
    from anvil.ops.validation import validate_input

    try:
        op = get_operation(name)
    except KeyError:
        raise UsageError("unknown operation", code="unknown_operation") from None
    args = validate_input(op, arguments)
    return execute(op.meta, args, default_context(env, cwd, sampler))
