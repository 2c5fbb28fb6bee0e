"""The one interface the CLI talks to: ``Backend.invoke(op, input) -> output``.

``DirectBackend`` runs the handler in-process; ``McpBackend`` calls the same operation as an MCP
tool (stdio, Streamable HTTP or SSE) and validates the structured result back into the
operation's output model. Errors come back as the same :class:`AnvilError` either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from anvil.cli.routing import Route
from anvil.ops.runtime import Context, execute
from anvil.ops.spec import meta_of


class Backend(Protocol):
    def invoke(self, op: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        """Run the operation described by the spec entry ``op`` with validated ``args``."""
        ...


class DirectBackend:
    """Runs operations in this process."""

    def __init__(self, env: Mapping[str, str], cwd: str):
        self.env, self.cwd = env, cwd

    def invoke(self, op: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        return execute(meta_of(op), args, Context(env=self.env, cwd=self.cwd))


class McpBackend:
    """Calls operations as tools of an MCP server."""

    def __init__(self, route: Route, env: Mapping[str, str], cwd: str):
        self.route, self.env, self.cwd = route, env, cwd

    def invoke(self, op: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
        from anvil.engine.errors import InternalError
        from anvil.mcp.client import call_tool
        from anvil.mcp.target import McpTarget

        target = McpTarget(kind=self.route.kind, url=self.route.url, token_env=self.route.token_env)  # type: ignore[arg-type]
        result = call_tool(target, op["name"], args, env=self.env, cwd=self.cwd)
        from pydantic import ValidationError

        from anvil.ops.registry import get_operation

        try:
            model = get_operation(op["name"]).output_model.model_validate(result)
        except ValidationError:
            raise InternalError("the MCP server returned a result that does not match the tool's output schema",
                                code="bad_response") from None
        return model.model_dump(mode="json")


def backend_for(route: Route, env: Mapping[str, str], cwd: str) -> Backend:
    return DirectBackend(env, cwd) if route.direct else McpBackend(route, env, cwd)
