"""The CLI's MCP transport: call one anvil tool on a stdio, Streamable HTTP or legacy SSE server.

This is the CLI's hot path, so it uses the standard library only (the SDK costs ~0.5-1 s to
import): a small, strict JSON-RPC client. The SDK is loaded only for the rare ``sse:`` targets.

* **stdio**: spawns this install's server (``python -P -m anvil.mcp --planning``: ``-P`` keeps a
  directory named ``anvil`` in the working directory from shadowing the install, ``--planning``
  exposes every operation, as the direct path does) in the caller's working directory with the
  caller's full environment, performs the ``initialize`` handshake, makes the call, closes stdin
  and reaps the child within a bounded wait.
* **http**: see :mod:`anvil.mcp._http_client` (one sessionless 2026-07-28 POST, falling back to the
  initialize handshake for older servers).

Whatever happens, the result is a JSON object (the tool's ``structuredContent``) or an
:class:`~anvil.engine.errors.AnvilError`: a tool error is rebuilt with ``from_wire`` from the error
document; transport failures become ``TargetUnavailable`` naming the target by
:meth:`McpTarget.display` only; refused credentials become ``AuthFailed``. Bearer tokens travel
only in the ``Authorization`` header and never appear in any message.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

from anvil import __version__
from anvil.engine.errors import AnvilError, InternalError, TargetUnavailable, UsageError, from_wire
from anvil.mcp.target import McpTarget

HANDSHAKE_VERSION = "2025-11-25"
CLIENT_INFO: dict[str, str] = {"name": "anvil-cli", "version": __version__}
STDIO_EXIT_WAIT_SECONDS = 5.0
MAX_LINE_BYTES = 64 * 1024 * 1024
DEBUG_ENV = "ANVIL_MCP_DEBUG"
DEBUG_HINT = f" (set {DEBUG_ENV}=1 to see its log)"

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


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


class _StdioSession:
    """One spawned server and the JSON-RPC exchange with it."""

    def __init__(self, process: subprocess.Popen[bytes], target: McpTarget, deadline: Deadline) -> None:
        self._process = process
        self._target = target
        self._deadline = deadline
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        reader.start()

    def _read(self, stream: IO[bytes] | None) -> None:
        try:
            while stream is not None:
                line = stream.readline(MAX_LINE_BYTES)
                if not line:
                    break
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self._process.stdin
        try:
            assert stdin is not None
            stdin.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
            stdin.flush()
        except (OSError, ValueError):
            raise TargetUnavailable(f"the MCP server {self._target.display()} exited early{DEBUG_HINT}",
                                    code="target_exited") from None

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its result, answering the server's own requests meanwhile.

        Raises:
            RpcError: the server answered with an error.
            TargetUnavailable: the server exited, timed out or wrote something that is not JSON-RPC.
        """
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            try:
                line = self._lines.get(timeout=self._deadline.remaining())
            except queue.Empty:
                raise self._deadline.expired() from None
            if line is None:
                raise TargetUnavailable(f"the MCP server {self._target.display()} exited before answering"
                                        f"{DEBUG_HINT}", code="target_exited")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                raise not_mcp(self._target) from None
            if isinstance(message, dict) and "method" in message and "id" in message:
                self._answer_server_request(message)
                continue
            result = response_for(message, request_id, self._target)
            if result is not None:
                return result

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        if message.get("method") == "ping":
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        else:
            self._send({"jsonrpc": "2.0", "id": message["id"],
                        "error": {"code": METHOD_NOT_FOUND, "message": "not supported by the anvil CLI"}})

    def close(self) -> None:
        """Close stdin (the server's signal to exit) and reap the child, killing it if it lingers."""
        process = self._process
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=STDIO_EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def stdio_command() -> list[str]:
    """The command that starts this install's own MCP server with every tool listed."""
    return [sys.executable, "-P", "-m", "anvil.mcp", "--planning"]


def call_stdio(name: str, arguments: dict[str, Any], env: Mapping[str, str], cwd: str,
               deadline: Deadline) -> dict[str, Any]:
    """Run one ``tools/call`` on a freshly spawned stdio server; returns the raw result.

    Raises:
        RpcError: the server answered with a JSON-RPC error.
        TargetUnavailable: the server could not be started or did not answer.
    """
    target = McpTarget("stdio")
    stderr = None if _truthy(env.get(DEBUG_ENV)) else subprocess.DEVNULL
    try:
        process = subprocess.Popen(stdio_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                   cwd=cwd, env=dict(env))
    except OSError:
        raise TargetUnavailable(f"could not start the MCP server {target.display()}", code="target_unavailable") \
            from None
    session = _StdioSession(process, target, deadline)
    try:
        check_initialize(session.request("initialize", initialize_params()), target)
        session.notify("notifications/initialized")
        return session.request("tools/call", {"name": name, "arguments": arguments})
    finally:
        session.close()


def call_tool(target: McpTarget, name: str, arguments: dict[str, Any], *, env: Mapping[str, str], cwd: str,
              timeout: float = 60.0) -> dict[str, Any]:
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
        The tool's structured output (a JSON object).

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
            result = call_stdio(name, dict(arguments), env, cwd, deadline)
        else:
            from anvil.mcp import _http_client

            if target.kind == "http":
                result = _http_client.call_http(target, name, dict(arguments), env, deadline)
            else:
                result = _http_client.call_sse(target, name, dict(arguments), env, deadline)
    except RpcError as exc:
        raise map_rpc_error(exc, target) from None
    return tool_output(result, target)
