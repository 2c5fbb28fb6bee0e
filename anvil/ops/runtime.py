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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anvil.engine.errors import AnvilError, AuthFailed, ConfirmationRequired, InternalError, UsageError
from anvil.engine.identity import DEFAULT_ACTOR, Identity, check_name, name_problem, same_person
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.locking import LOCK_TIMEOUT_ENV, parse_lock_timeout
from anvil.engine.storage.paths import StateLocation, current_directory, resolve_state
from anvil.engine.storage.store import Clock, Store, Transaction, database_error, format_ts, system_clock
from anvil.ops.contract import MAX_WAIT_SECONDS, OpSpec, ParamSpec

Sampler = Callable[[str, int], "str | None"]
"""Asks the calling MCP client's model for a completion: ``(prompt, max_tokens) -> text``; None when
the client gave no usable reply. A sampler may raise :class:`SamplingDeferred` instead."""


class SamplingDeferred(Exception):
    """The sampler cannot ask within this call: the client must be asked to sample and call again.

    Raised by the sampler of a 2026-07-28 client (where a server sends no request of its own): the
    MCP server answers the call with an ``input_required`` result carrying the sampling request, and
    the client's retry carries the reply. Nothing was written: the sampler runs before the write.
    """

    def __init__(self, prompt: str, max_tokens: int) -> None:
        super().__init__("sampling deferred to the client's retry")
        self.prompt = prompt
        self.max_tokens = max_tokens

Handler = Callable[["Context", Any], dict[str, Any]]
"""An operation's handler: ``(ctx, validated input) -> output``. Each one annotates its input with the
operation's ``TypedDict`` from :mod:`anvil.ops.inputs`."""

NOT_REQUEST_FIELDS = frozenset({"idempotency_key", "dry_run"})


@dataclass
class Context:
    """Everything a handler may touch besides its input.

    ``principal`` is who the transport authenticated (an HTTP request's per-agent token), None when
    nobody was; ``remote`` marks a call that came over the network (then this process's
    ANVIL_ACTOR names nobody: it is the server's, not the caller's). :func:`execute` resolves
    ``caller``, the identity the operation acts as.
    """

    env: Mapping[str, str]
    cwd: str
    clock: Clock = system_clock
    sampler: Sampler | None = None
    tx: Transaction | None = None
    prepared: Any = None  # what the operation's prepare phase returned
    waiting: bool = False  # inside a wait: an empty answer is not kept for idempotent retries
    principal: Identity | None = None
    remote: bool = False
    caller: Identity = field(default_factory=lambda: Identity(DEFAULT_ACTOR, how="default"))
    _location: StateLocation | None = None
    _store: Store | None = None
    _opened: list[Store] = field(default_factory=list)

    @property
    def location(self) -> StateLocation:
        if self._location is None:
            self._location = resolve_state(self.env, self.cwd)
        return self._location

    @property
    def lock_timeout(self) -> float:
        """Seconds a write waits for the writer lock (``ANVIL_LOCK_TIMEOUT``, default 30)."""
        return parse_lock_timeout(self.env.get(LOCK_TIMEOUT_ENV))

    @property
    def store(self) -> Store:
        """The open state (raises ``NotFound`` when the project is not initialized)."""
        if self.tx is not None:
            return self.tx.store
        if self._store is None:
            self._store = Store.open(self.location, clock=self.clock, lock_timeout=self.lock_timeout)
            self._opened.append(self._store)
        return self._store

    def adopt(self, store: Store) -> None:
        """Run on ``store``, already open on the state this context selects (the HTTP gate's, see
        :class:`anvil.ops.access.HeldState`), instead of resolving the location and opening it again;
        it is closed with the context, as a store the context opened itself would be."""
        self.close()
        store.lock_timeout = self.lock_timeout
        if store.backend == "sqlite":  # PostgreSQL's store keeps the database's clock
            store.clock = self.clock
        self._location, self._store = store.location, store
        self._opened.append(store)

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
        """ANVIL_ACTOR of a local call when it is a valid name, else ``anvil`` (the author of
        housekeeping such as reaping)."""
        name = "" if self.remote else self.env.get("ANVIL_ACTOR", "").strip()
        return name if name and name_problem(name) is None else DEFAULT_ACTOR

    def reset_location(self) -> None:
        """Forget the resolved state location (the call's directory or environment changed)."""
        self.close()
        self._location = None

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
    """What identifies a request for idempotency: the operation and its input, minus the retry
    controls and the caller's name (keys are scoped by the caller already, whatever its spelling)."""
    skip = NOT_REQUEST_FIELDS | {p.name for p in spec.params if p.format == "caller"}
    return sha256_hex(canonical_json({"op": spec.name, "input": {k: v for k, v in args.items() if k not in skip}}))


def _where(param: ParamSpec) -> str:
    """How a caller gives ``param``: its CLI flag (or argument) and its MCP field."""
    shown = param.name.upper() if param.positional else f"{param.flag} ({param.name})"
    return shown + (" or ANVIL_ACTOR" if param.name == "actor" else "")


VALID_NAMES_REMEMBERED = 4096
"""How many names that passed :func:`~anvil.engine.identity.check_name` a process remembers (then it
starts over): the rule depends on the text alone, and a server sees the same few names on every call."""
_VALID_NAMES: set[str] = set()


def _check_declared_name(value: Any, param: ParamSpec) -> None:
    """:func:`~anvil.engine.identity.check_name` for ``param``'s ``value``, skipped for a name that passed before.

    Raises:
        UsageError: ``invalid_actor`` (see ``check_name``).
    """
    if isinstance(value, str) and value in _VALID_NAMES:
        return
    check_name(value, _where(param))
    if isinstance(value, str):
        if len(_VALID_NAMES) >= VALID_NAMES_REMEMBERED:
            _VALID_NAMES.clear()
        _VALID_NAMES.add(value)


def resolve_caller(spec: OpSpec, args: dict[str, Any], ctx: Context) -> Identity:
    """Check every name in ``args`` and decide who makes this call; fills the caller fields in ``args``.

    An authenticated request acts as its token's identity: caller fields it leaves out are filled
    in, and naming anyone else is refused. Otherwise the caller is the name given (``actor``, or
    the ``reviewer`` alias, which must then agree), else ANVIL_ACTOR (of a local call), else nobody
    (recorded as ``anvil``, refused where the operation needs a caller).

    Raises:
        UsageError: ``invalid_actor`` (a name breaks the rule), ``reviewer_not_caller`` or
            ``caller_conflict`` (two caller
            fields disagree) or ``missing_actor``.
        AuthFailed: ``actor_mismatch`` (an authenticated request names someone else).
    """
    declared: list[tuple[ParamSpec, str]] = []
    for param in spec.params:
        value = args.get(param.name)
        if param.format is None or value is None:
            continue
        _check_declared_name(value, param)
        if param.format == "caller":
            declared.append((param, value))
    declared.sort(key=lambda item: item[0].name != "actor")
    principal = ctx.principal
    if principal is not None:
        for param, value in declared:
            if not same_person(value, principal.actor):
                raise AuthFailed(f"this request is authenticated as {principal.actor}, but {_where(param)} names "
                                 "someone else: leave it out (the token says who you are) or use that actor's "
                                 "token", code="actor_mismatch")
        caller = principal
    elif declared:
        first = declared[0][1]
        for param, value in declared[1:]:
            if not same_person(value, first):
                if param.name == "reviewer":
                    raise UsageError(f"{_where(param)} must name the caller: the reviewer of a decision is whoever "
                                     "makes it (--actor / ANVIL_ACTOR); leave it out", code="reviewer_not_caller")
                raise UsageError(f"{_where(param)} and {_where(declared[0][0])} name different people: both name "
                                 "whoever makes the call; pass one of them", code="caller_conflict")
        caller = Identity(first, how="declared")
    else:
        from_env = "" if ctx.remote else ctx.env.get("ANVIL_ACTOR", "").strip()
        if from_env:
            caller = Identity(check_name(from_env, "ANVIL_ACTOR"), how="declared")
        elif spec.needs_caller:
            raise UsageError("missing actor: pass --actor NAME or set ANVIL_ACTOR", code="missing_actor")
        else:
            return Identity(DEFAULT_ACTOR, how="default")
    for param in spec.params:
        if param.format == "caller":
            args[param.name] = caller.actor
    return caller


def execute(spec: OpSpec, args: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    """Run one validated call; with ``wait_seconds``, wait for something to hand out.

    An operation with a ``wait_field`` (``get_next_task``, ``claim_next_task``) that finds nothing
    and was given ``wait_seconds`` sleeps until work may have been freed (woken by a commit that may
    free some, through :mod:`anvil.engine.storage.changes`, or when the first live lease runs out, which
    frees a task without any write) and looks again, until it has an answer or the deadline passes;
    then it returns the empty answer. Empty answers given while waiting are never kept for
    idempotent retries.

    Raises:
        AnvilError: as :func:`execute_once`.
    """
    select_project(args.get("cwd"), ctx)
    wait = float(args.get("wait_seconds") or 0) if spec.wait_field else 0.0
    if wait <= 0 or not ctx.location.initialized:
        return execute_once(spec, args, ctx)
    from anvil.engine.storage.changes import head_seq, wait_for_change

    deadline = time.monotonic() + min(wait, MAX_WAIT_SECONDS)
    probe = load_handler(WAIT_PROBES[spec.name]) if spec.name in WAIT_PROBES else None
    while True:
        ctx.waiting = True
        seen = head_seq(ctx.location)  # before looking, so a change made meanwhile wakes the wait at once
        remaining = deadline - time.monotonic()
        if probe is None or remaining <= 0 or _probe(probe, spec, args, ctx):
            output = execute_once(spec, args, ctx)
            remaining = deadline - time.monotonic()
            if output.get(str(spec.wait_field)) is not None or remaining <= 0:
                return output
        # Woken only by a commit that may free work (a claim taken elsewhere frees none), or when a lease ends.
        wait_for_change(ctx.location, seen, min(max(remaining, 0.0), _until_a_lease_ends(ctx)), work=True)


WAIT_PROBES: dict[str, str] = {"claim_next_task": "anvil.ops.handlers.claiming:claimable_now"}
"""Lock-free looks of waiting writes: a waiting ``claim_next_task`` takes the writer lock only when a
read says there is something to claim (or a lease to reap), so waiters do not queue for the lock on
every commit. The write still decides everything inside its transaction; a look that was wrong only
costs one empty write, and the last try at the deadline always writes (it gives the real answer)."""

AFTER_COMMIT_HINTS: dict[str, str] = {
    "submit_completion_evidence": "anvil.ops.handlers.reporting:next_ready_after_submit",
    "apply_review_decision": "anvil.ops.handlers.reporting:next_ready_after_review",
    "apply_review_decisions": "anvil.ops.handlers.reporting:next_ready_after_reviews",
}
"""Hints a mutating answer carries that decide nothing (``next_ready``): filled from the committed state
after the write, so the writer lock never covers their reads. A dry run fills them inside its
transaction (it commits nothing); an idempotent retry gets them read afresh (the kept answer has none)."""


def _fill_hints(spec: OpSpec, ctx: Context, output: dict[str, Any]) -> dict[str, Any]:
    if spec.name in AFTER_COMMIT_HINTS:
        load_handler(AFTER_COMMIT_HINTS[spec.name])(ctx, output)
    return output


def _probe(probe: Callable[[Context, Any], Any], spec: OpSpec, args: Mapping[str, Any], ctx: Context) -> bool:
    """Whether the look says the write may find something. Anything the look cannot answer (an
    unknown caller, a state error) is left to the write, which reports it."""
    call_args = dict(args)
    try:
        ctx.caller = resolve_caller(spec, call_args, ctx)
        return bool(probe(ctx, call_args))
    except AnvilError:
        return True
    finally:
        ctx.close()


def select_project(cwd: str | None, ctx: Context) -> None:
    """Apply a call's ``cwd``: locally it selects the project (as running there would, so it wins over
    ANVIL_ROOT); over the network it may only name a directory inside the served project.

    Raises:
        UsageError: ``root_missing`` (a local cwd that is not a directory) or ``cwd_outside_project``.
    """
    if not cwd:
        return
    import errno
    from pathlib import Path

    if "\0" in cwd:
        raise UsageError("cwd holds a NUL byte: pass a directory path", code="invalid_input")
    try:
        if ctx.remote:
            served = ctx.location.root
            target = (served / cwd).resolve()  # a relative cwd is relative to the served project
            if target != served and served not in target.parents:
                raise UsageError("cwd must lie inside the project this server serves (pass a path relative to it, "
                                 "or leave cwd out)", code="cwd_outside_project")
            return
        target = (Path(ctx.cwd) / cwd).resolve()
        is_dir = target.is_dir()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise UsageError("cwd is too long for this system (a name over 255 bytes, or a path over its limit)",
                             code="invalid_input") from None
        raise UsageError("cwd cannot be looked at: pass an existing project directory (--cwd)",
                         code="root_missing") from None
    if not is_dir:
        raise UsageError("cwd is not a directory: pass an existing project directory (--cwd)", code="root_missing")
    ctx.cwd = str(target)
    ctx.env = {name: value for name, value in ctx.env.items() if name != "ANVIL_ROOT"}
    ctx.reset_location()


def _until_a_lease_ends(ctx: Context) -> float:
    """Seconds until the first live lease runs out (a little after, so it has), or a long time."""
    from datetime import datetime

    from anvil.engine.work.claims import next_lease_end

    try:
        end = next_lease_end(ctx.store.conn)
        now = ctx.store.now()  # the store's clock: the database's on PostgreSQL
    finally:
        ctx.close()
    if end is None:
        return float(MAX_WAIT_SECONDS)
    return max((datetime.fromisoformat(end) - now).total_seconds(), 0.0) + 0.05


def execute_once(spec: OpSpec, args: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    """Run one validated call.

    The caller is resolved first (:func:`resolve_caller`) and checked against the operation's
    role. Mutating operations run inside one write transaction that also covers stale-claim
    reaping and the idempotency record, so a retry can never produce a second event and a failure
    leaves nothing behind. ``dry_run`` runs everything, then rolls the transaction back. Every
    mutating result carries ``actor_identity``, added here and nowhere else.

    Raises:
        AnvilError: any failure; SQLite failures become state errors (see ``database_error``). Other
            exceptions are bugs: they propagate, and each surface reports them as one internal error.
    """
    for name, value in args.items():
        if not _encodable(value):
            raise UsageError(f"{name} is not valid Unicode text (it holds a lone surrogate, e.g. from bytes that "
                             "are not UTF-8)", code="invalid_input")
    call_args = dict(args)
    try:
        ctx.caller = resolve_caller(spec, call_args, ctx)  # names first: one holding NUL is invalid_actor
        for name, value in args.items():
            if _holds_nul(value):  # no input means a NUL byte; as a path it would reach the system as an error
                raise UsageError(f"{name} holds a NUL byte", code="invalid_input")
        if not ctx.caller.may(spec.role, runner=spec.runner_allowed):
            raise AuthFailed(f"{spec.name} needs the {spec.role} role{' (or runner)' if spec.runner else ''}; the "
                             f"token of {ctx.caller.actor} has the {ctx.caller.role} role", code="forbidden_by_role")
        handler = load_handler(spec.handler)
        if not spec.mutating:
            if ctx.waiting and ctx.principal is not None and ctx.location.initialized:
                _require_live_token(ctx.principal, ctx.store.conn, format_ts(ctx.store.now()))
            if spec.reaps and ctx.location.initialized:
                _reap_if_due(ctx)
            return handler(ctx, call_args)
        output = handler(ctx, call_args) if spec.bootstrap else _execute_mutation(spec, handler, call_args, ctx)
        # Every mutating result says who acted and whether it wrote.
        return {**output, "actor_identity": ctx.caller.to_wire(), "dry_run": bool(args.get("dry_run"))}
    except AnvilError:
        raise
    except sqlite3.Error as exc:
        raise database_error(exc, ctx.location) from exc
    finally:
        ctx.close()


def _without_secrets(spec: OpSpec, output: dict[str, Any]) -> dict[str, Any]:
    return {**output, **dict.fromkeys(spec.secret_fields)} if spec.secret_fields else output


def _holds_nul(value: Any) -> bool:
    """Whether any string in ``value`` holds a NUL byte."""
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, list | tuple):
        return any(_holds_nul(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    return False


def _encodable(value: Any) -> bool:
    """Whether every string in ``value`` can be stored as UTF-8 (no lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, list | tuple):
        return all(_encodable(item) for item in value)
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    return True


def _require_live_token(principal: Identity, conn: Any, now: str) -> None:
    """Refuse to act for a token revoked or expired after its request was admitted (a call that waited).

    Raises:
        AuthFailed: ``auth_failed``.
    """
    from anvil.engine.credentials import live

    if principal.token_id is not None and not live(conn, principal.token_id, now):
        raise AuthFailed(f"the bearer token of {principal.actor} was revoked or expired after this call was "
                         "admitted: nothing was done; ask a lead for a new token (`anvil token add`)",
                         code="auth_failed")


def _execute_mutation(spec: OpSpec, handler: Handler, args: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Run a mutation: first reading without the writer lock (taken at the first append, so a call
    that writes nothing never takes it), and once more holding it from the start when another
    writer committed after those reads (see ``Store.write``)."""
    from anvil.engine.storage.store import StaleSnapshot

    if spec.prepare:
        # Slow work that needs no lock (e.g. asking the client's model) happens before the write.
        ctx.prepared = load_handler(spec.prepare)(ctx, args)
    try:
        output = _mutate(spec, handler, dict(args), ctx, optimistic=True)
    except StaleSnapshot:
        output = _mutate(spec, handler, args, ctx, optimistic=False)
    return output if args.get("dry_run") else _fill_hints(spec, ctx, output)


def _mutate(spec: OpSpec, handler: Handler, args: dict[str, Any], ctx: Context, *, optimistic: bool
            ) -> dict[str, Any]:
    from anvil.engine.storage import idempotency
    from anvil.engine.work.claims import reap_stale

    store = ctx.store
    actor = ctx.caller.actor
    key = args.get("idempotency_key")
    digest = request_digest(spec, args)
    dry_run = bool(args.get("dry_run"))
    refusal: AnvilError | None = None
    with store.write(actor, optimistic=optimistic) as tx:
        if key:
            # Keys are scoped by the caller's name key, so a retry spelled differently still matches.
            earlier = idempotency.recall(tx, ctx.caller.key, spec.name, key, digest)
            if earlier is not None:
                tx.rollback_only = True
                return _fill_hints(spec, ctx, earlier) if dry_run else earlier
        # Reap at this transaction's own time (taken as its reads began: after the writer lock was
        # granted, or just before an optimistic transaction's snapshot), so a lease that ran out before
        # then is gone before the operation looks. A refused operation is undone by its savepoint, but
        # the reaping still commits.
        reap_stale(tx)
        if ctx.principal is not None:  # the token may have been revoked since the request was admitted
            _require_live_token(ctx.principal, tx.conn, tx.ts)
        ctx.tx = tx
        try:
            with tx.savepoint():
                output = handler(ctx, args)
            if dry_run:
                _fill_hints(spec, ctx, output)
        except AnvilError as error:
            refusal = error
            tx.rollback_only = dry_run or not tx.appended
        finally:
            ctx.tx = None
        if refusal is None and dry_run:
            tx.rollback_only = True
            output = _without_secrets(spec, output)
        elif refusal is None and key and not (ctx.waiting and spec.wait_field and output.get(spec.wait_field)
                                                   is None):
            # A secret (a new token) is shown once: a retry gets the result without it.
            idempotency.remember(tx, ctx.caller.key, spec.name, key, digest, _without_secrets(spec, output))
    if refusal is not None:
        raise refusal
    return output


def _reap_if_due(ctx: Context) -> None:
    """Reap expired claims before a read that must see them gone; a cheap read decides first.

    A read never waits on the writer lock: when a writer holds it, the read goes on without
    reaping (a claim whose lease ran out still holds its task until a writer reaps it, and every
    write reaps first).
    """
    from anvil.engine.work.claims import has_stale, reap_stale

    store = ctx.store
    if not has_stale(store.conn, format_ts(store.now())):
        return
    with store.try_write(ctx.default_actor()) as tx:
        if tx is not None:
            reap_stale(tx)


def default_context(env: Mapping[str, str] | None = None, cwd: str | None = None,
                    sampler: Sampler | None = None, clock: Clock | None = None) -> Context:
    """The context of one call: the process environment and working directory unless given, and
    the system clock unless another is injected (tests do; no input or variable moves it)."""
    return Context(env=dict(os.environ) if env is None else env, cwd=cwd or current_directory(),
                   clock=clock or system_clock, sampler=sampler)
