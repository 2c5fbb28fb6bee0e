"""The CLI's MCP transport: call one anvil tool on a stdio, Streamable HTTP or legacy SSE server.

This is the CLI's hot path, so it uses the standard library only (the SDK costs ~0.5-1 s to
import): a small, strict JSON-RPC client. The SDK is loaded only for the rare ``sse:`` targets.

* **stdio**: spawns this install's server (``python -P -m anvil.mcp --planning``: ``-P`` keeps a
  directory named ``anvil`` in the working directory from shadowing the install, ``--planning``
  exposes every operation, as the direct path does) in the caller's working directory with the
  caller's full environment, performs the ``initialize`` handshake, makes the call, closes stdin
  and reaps the child within a bounded wait.
* **http**: see :mod:`anvil.mcp.http_client` (one sessionless 2026-07-28 POST, falling back to the
  initialize handshake for older servers).

Whatever happens, the result is a JSON object (the tool's ``structuredContent``) or an
:class:`~anvil.engine.errors.AnvilError`: a tool error is rebuilt with ``from_wire`` from the error
document; transport failures become ``TargetUnavailable`` naming the target by
:meth:`McpTarget.display` only; refused credentials become ``AuthFailed``. Bearer tokens travel
only in the ``Authorization`` header and never appear in any message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anvil.engine.errors import UsageError
from anvil.mcp.jsonrpc import Deadline, RpcError, map_rpc_error, result_caller, tool_output
from anvil.mcp.target import McpTarget


def call_tool(target: McpTarget, name: str, arguments: dict[str, Any], *, env: Mapping[str, str], cwd: str,
              timeout: float = 60.0) -> dict[str, Any]:
    """Call the tool ``name`` on ``target`` and return its structured output (see :func:`call_tool_as`).

    Raises:
        AnvilError: as :func:`call_tool_as`.
    """
    return call_tool_as(target, name, arguments, env=env, cwd=cwd, timeout=timeout)[0]


def call_tool_as(target: McpTarget, name: str, arguments: dict[str, Any], *, env: Mapping[str, str], cwd: str,
                 timeout: float = 60.0) -> tuple[dict[str, Any], str | None]:
    """Call the tool ``name`` on ``target`` and return its structured output.

    Args:
        target: where the server is.
        name: the tool (operation) name.
        arguments: the tool input, already shaped like the operation's input model.
        env: the environment: passed whole to a spawned stdio server, and where the bearer token
            variable named by ``target.token_env`` is read.
        cwd: the working directory of a spawned stdio server.
        timeout: seconds for the whole call, connection and server start included.

    Returns:
        The tool's structured output (a JSON object), and the caller the server's per-agent token
        check authenticated (None when no token said who).

    Raises:
        AnvilError: the tool's own error, rebuilt exactly; ``TargetUnavailable`` (exit 7) when the
            server cannot be reached or does not speak MCP; ``AuthFailed`` (exit 4) when it refuses
            the credentials; ``UsageError`` ``token_env_unset`` when the named token variable is unset.
    """
    if not isinstance(arguments, Mapping):
        raise UsageError("tool arguments must be an object", code="invalid_input")
    deadline = Deadline(timeout, target)
    try:
        if target.kind == "stdio":
            from anvil.mcp.stdio_client import call_stdio

            result = call_stdio(name, dict(arguments), env, cwd, deadline)
        else:
            from anvil.mcp import http_client

            if target.kind == "http":
                result = http_client.call_http(target, name, dict(arguments), env, deadline)
            else:
                result = http_client.call_sse(target, name, dict(arguments), env, deadline)
    except RpcError as exc:
        raise map_rpc_error(exc, target) from None
    return tool_output(result, target), result_caller(result)
