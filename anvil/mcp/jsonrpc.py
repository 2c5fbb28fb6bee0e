"""JSON-RPC pieces shared by the CLI's MCP transports: deadlines, the handshake, reading results.

Standard library only. A tool result becomes its structured output or the exact
:class:`~anvil.engine.errors.AnvilError` its error document carries; a peer that does not answer
like an MCP server becomes ``TargetUnavailable`` naming the target by its display form only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from anvil import __version__
from anvil.engine.errors import AnvilError, InternalError, TargetUnavailable, UsageError, from_wire
from anvil.mcp.target import McpTarget

HANDSHAKE_VERSION = "2025-11-25"
CLIENT_INFO: dict[str, str] = {"name": "anvil-cli", "version": __version__}
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class RpcError(Exception):
    """A JSON-RPC error answer (kept internal: mapped to an AnvilError before leaving)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Deadline:
    """The time left for a whole call."""

    def __init__(self, seconds: float, target: McpTarget) -> None:
        self._end = time.monotonic() + max(seconds, 0.001)
        self._seconds = seconds
        self._target = target

    def remaining(self) -> float:
        """Seconds left.

        Raises:
            TargetUnavailable: the deadline has passed.
        """
        left = self._end - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> TargetUnavailable:
        """The error for a call that ran out of time."""
        return TargetUnavailable(f"the MCP server {self._target.display()} did not answer within "
                                 f"{self._seconds:g} s", code="target_timeout")


def not_mcp(target: McpTarget) -> TargetUnavailable:
    """The error for a peer that does not answer like an MCP server."""
    return TargetUnavailable(f"{target.display()} did not answer as an MCP server", code="not_mcp")


def map_rpc_error(exc: RpcError, target: McpTarget) -> AnvilError:
    """Turn a JSON-RPC error into the AnvilError the CLI reports (no server text is echoed)."""
    if exc.code == INVALID_PARAMS:
        return UsageError(f"the MCP server {target.display()} rejected the request parameters "
                          f"(JSON-RPC {exc.code})", code="invalid_input")
    if exc.code == METHOD_NOT_FOUND:
        return TargetUnavailable(f"{target.display()} does not serve MCP tool calls", code="not_mcp")
    return InternalError(f"the MCP server {target.display()} failed the call (JSON-RPC {exc.code})",
                         code="server_error")


def _first_text(result: Mapping[str, Any]) -> str | None:
    content = result.get("content")
    if isinstance(content, list):
        for block in content:
            text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
            if isinstance(text, str):
                return text
    return None


def _json_object(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def tool_output(result: Any, target: McpTarget) -> dict[str, Any]:
    """The structured output of a ``tools/call`` result, or the AnvilError it carries.

    Raises:
        AnvilError: the tool failed (rebuilt from its error document), or the result is malformed.
    """
    if not isinstance(result, dict):
        raise not_mcp(target)
    structured = result.get("structuredContent")
    if result.get("isError") is True:
        document = structured if isinstance(structured, dict) and "error" in structured else None
        raise from_wire(document or _json_object(_first_text(result)))
    if isinstance(structured, dict):
        return structured
    parsed = _json_object(_first_text(result))
    if parsed is not None:
        return parsed
    raise InternalError(f"the MCP server {target.display()} returned no structured result", code="bad_response")


def result_caller(result: Any) -> str | None:
    """The caller a per-agent token authenticated, as a tool result's ``_meta`` reports it (or None)."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    caller = meta.get("anvil/caller") if isinstance(meta, dict) else None
    return caller if isinstance(caller, str) and 0 < len(caller) <= 200 else None


def response_for(message: Any, request_id: int, target: McpTarget) -> dict[str, Any] | None:
    """The result in ``message`` if it is the JSON-RPC response to ``request_id``, else None.

    Raises:
        RpcError: it is the response, and an error.
        TargetUnavailable: it is the response, and its result is not an object.
    """
    if not isinstance(message, dict) or message.get("id") != request_id or "method" in message:
        return None
    if "error" in message:
        error = message["error"]
        code = error.get("code") if isinstance(error, dict) else None
        raise RpcError(code if isinstance(code, int) else 0)
    result = message.get("result")
    if not isinstance(result, dict):
        raise not_mcp(target)
    return result


FULL_RESULT_META: dict[str, str] = {"anvil/result": "full"}
"""The ``_meta`` of every ``tools/call`` the CLI makes: the complete document, as the direct route returns
it (an anvil server otherwise compacts results for models; see :mod:`anvil.mcp.results`)."""


def initialize_params() -> dict[str, Any]:
    """The ``initialize`` request parameters of the handshake era."""
    return {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}


def check_initialize(result: dict[str, Any], target: McpTarget) -> str:
    """The protocol version the server agreed to.

    Raises:
        TargetUnavailable: the answer is not an MCP initialize result.
    """
    version = result.get("protocolVersion")
    if not isinstance(version, str) or not isinstance(result.get("capabilities"), dict):
        raise not_mcp(target)
    return version
