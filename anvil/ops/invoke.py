"""Running an operation from untrusted arguments: validate with the pydantic input model, then execute.

The MCP server, the CLI's Typer path and the scenario builder call :func:`invoke` (they already pay
for pydantic); the direct ``--json`` path validates against the plain-data contract instead, and the
lean stdio server runs a call the contract check accepted with :func:`invoke_checked`. Both end in
:func:`run_validated`, so a call runs the same way whichever check validated it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from anvil.engine.errors import UsageError
from anvil.engine.identity import Identity
from anvil.engine.storage.paths import current_directory
from anvil.engine.storage.store import Clock
from anvil.ops.contract import OpSpec, spec_named
from anvil.ops.gitflow import GIT_OPERATIONS, with_git
from anvil.ops.runtime import Sampler, default_context, execute

if TYPE_CHECKING:
    from anvil.ops.access import HeldState


def run_validated(spec_of: Callable[[str], OpSpec], name: str, args: dict[str, Any], *,
                  sampler: Sampler | None = None, env: Mapping[str, str] | None = None, cwd: str | None = None,
                  principal: Identity | None = None, remote: bool = False,
                  clock: Clock | None = None, state: HeldState | None = None) -> dict[str, Any]:
    """Run the operation ``name`` with validated ``args``, each operation's spec read by ``spec_of``
    (see :func:`invoke` for the other arguments).

    Raises:
        AnvilError: any failure of the operation itself.
    """
    def run(op_name: str, call: dict[str, Any]) -> dict[str, Any]:
        ctx = default_context(env, cwd, sampler, clock)
        ctx.principal, ctx.remote = principal, remote
        store = state.take(ctx.env, ctx.cwd) if state is not None else None
        if store is not None:
            ctx.adopt(store)
        return execute(spec_of(op_name), call, ctx)

    if remote or name not in GIT_OPERATIONS:
        return run(name, args)
    # A local caller (a stdio server runs on its caller's machine): do the git side here, as the CLI does.
    return with_git(spec_of(name), args, run, cwd or current_directory())


def invoke_checked(name: str, args: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Run ``name`` with arguments :func:`anvil.ops.speccheck.check_arguments` validated, reading the
    operation contract (``surface.json``) instead of the registry: no pydantic (options: :func:`invoke`'s).

    Raises:
        AnvilError: any failure of the operation itself.
    """
    return run_validated(spec_named, name, args, **options)


def invoke(name: str, arguments: Mapping[str, Any], *, sampler: Sampler | None = None,
           env: Mapping[str, str] | None = None, cwd: str | None = None,
           principal: Identity | None = None, remote: bool = False, clock: Clock | None = None,
           state: HeldState | None = None) -> dict[str, Any]:
    """Validate ``arguments`` with the operation's input model and run it, as ``principal`` when the
    transport authenticated one; ``remote`` for a call that came over the network (see
    :func:`anvil.ops.runtime.resolve_caller`); ``clock`` is an injected clock for tests (the system
    clock by default); ``state``: the state the HTTP gate opened for this request, run on when it is
    the one ``env``/``cwd`` select (:class:`anvil.ops.access.HeldState`; what the call does not take, the
    gate releases when the request ends).

    Raises:
        UsageError: unknown operation or invalid arguments.
        AnvilError: any failure of the operation itself.
    """
    from anvil.ops.registry import get_operation
    from anvil.ops.specgen import op_spec
    from anvil.ops.validation import validate_input

    try:
        op = get_operation(name)
    except KeyError:
        raise UsageError("unknown operation", code="unknown_operation") from None
    args = validate_input(op, arguments)
    return run_validated(lambda op_name: op_spec(get_operation(op_name)), name, args, sampler=sampler, env=env,
                         cwd=cwd, principal=principal, remote=remote, clock=clock, state=state)
