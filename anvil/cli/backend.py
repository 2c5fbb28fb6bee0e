"""The one interface the CLI talks to: ``Backend.invoke(op, input) -> output``.

``DirectBackend`` runs the handler in-process; ``McpBackend`` calls the same operation as an MCP
tool (stdio, Streamable HTTP or SSE) and validates the structured result back into the
operation's output model. Errors come back as the same :class:`AnvilError` either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from anvil.engine.errors import InternalError
from anvil.mcp.target import McpTarget
from anvil.ops.contract import OpSpec
from anvil.ops.runtime import Context, execute


class Backend(Protocol):
    def invoke(self, op: OpSpec, args: dict[str, Any]) -> dict[str, Any]:
        """Run the operation ``op`` with validated ``args``.

        Raises:
            AnvilError: the operation failed, or the route could not carry the call.
        """
        ...


class DirectBackend:
    """Runs operations in this process."""

    def __init__(self, env: Mapping[str, str], cwd: str):
        self.env, self.cwd = env, cwd

    def invoke(self, op: OpSpec, args: dict[str, Any]) -> dict[str, Any]:
        return execute(op, args, Context(env=self.env, cwd=self.cwd))


class McpBackend:
    """Calls operations as tools of an MCP server.

    With ``deep`` the result is validated into the operation's pydantic output model. The fast
    CLI path (no pydantic) checks the exact set of output fields instead: the server has already
    validated the document against the same model, and a server of another version adds or drops
    fields, which both checks refuse the same way.
    """

    def __init__(self, target: McpTarget, env: Mapping[str, str], cwd: str, *, deep: bool = True):
        self.target, self.env, self.cwd, self.deep = target, env, cwd, deep
        self.token_actor: str | None = None  # who the server's per-agent token check said the caller is

    def invoke(self, op: OpSpec, args: dict[str, Any]) -> dict[str, Any]:
        from anvil.mcp.client import call_tool_as

        # A waiting call (next --wait) may take its whole wait before the server answers.
        wait = float(args.get("wait_seconds") or 0) if op.wait_field else 0.0
        result, self.token_actor = call_tool_as(self.target, op.name, args, env=self.env, cwd=self.cwd,
                                                timeout=60.0 + wait)
        if not self.deep:
            if tuple(sorted(result)) != op.output_fields:
                raise _bad_response()
            return result
        from pydantic import ValidationError

        from anvil.ops.registry import get_operation

        try:
            model = get_operation(op.name).output_model.model_validate(result)
        except ValidationError:
            raise _bad_response() from None
        return model.model_dump(mode="json")


def _bad_response() -> InternalError:
    return InternalError("the MCP server returned a result that does not match the tool's output schema (is it "
                         "running another anvil version?)", code="bad_response")


def backend_for(route: McpTarget | None, env: Mapping[str, str], cwd: str, *, fast: bool = False) -> Backend:
    """Direct when ``route`` is None, else the MCP target's backend."""
    return DirectBackend(env, cwd) if route is None else McpBackend(route, env, cwd, deep=not fast)


Caller = Callable[..., dict[str, Any]]
"""``call(operation_name, **inputs)``: one operation on the chosen route, every other input at its default."""


def operation_caller(mcp: str | None, token_env: str | None,
                     env: Mapping[str, str]) -> tuple[Caller, str, McpTarget | None]:
    """The route a client-side command (``verify-task``, ``land``) reads and records through.

    Args:
        mcp: the ``--mcp`` value (None: direct).
        token_env: the ``--mcp-token-env`` value.
        env: the process environment.

    Returns:
        ``call(name, **values)`` invoking an operation with every input it is not given at its
        default, the current directory, and the route (None: direct).

    Raises:
        UsageError: a bad MCP target or token variable.
    """
    from anvil.cli.routing import resolve_route
    from anvil.engine.storage.paths import current_directory
    from anvil.ops.contract import spec_named

    route = resolve_route(mcp, token_env, env)
    cwd = current_directory()
    backend = backend_for(route, env, cwd, fast=True)

    def call(name: str, **values: Any) -> dict[str, Any]:
        spec = spec_named(name)
        full = {param.name: param.fresh_default() for param in spec.params}
        full.update(values)
        return backend.invoke(spec, full)

    return call, cwd, route
