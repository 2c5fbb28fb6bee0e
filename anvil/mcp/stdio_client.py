"""The CLI's stdio transport: spawn this install's own MCP server and make one tool call.

The server is started as ``python -P -m anvil.mcp --planning`` (``-P`` keeps a directory named
``anvil`` in the working directory from shadowing the install; ``--planning`` exposes every
operation, as the direct path does) in the caller's working directory with the caller's full
environment plus ``ANVIL_MCP_LEAN=1``: the server answers this exchange without importing the MCP
SDK (:mod:`anvil.mcp.lean`). ``ANVIL_MCP_LEAN=0`` in the caller's environment keeps the SDK server
(a way out, and what ``scripts/bench_cli.py`` compares against). The client performs the
``initialize`` handshake, makes the call, closes stdin and reaps the child within a bounded wait.
Standard library only. Tests can serve the same exchange in-process through :mod:`anvil.mcp.channels`.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import IO, Any

from anvil.engine.errors import TargetUnavailable
from anvil.mcp.channels import installed
from anvil.mcp.jsonrpc import (
    FULL_RESULT_META,
    METHOD_NOT_FOUND,
    Deadline,
    check_initialize,
    initialize_params,
    not_mcp,
    response_for,
)
from anvil.mcp.target import McpTarget

STDIO_EXIT_WAIT_SECONDS = 5.0
MAX_LINE_BYTES = 64 * 1024 * 1024
DEBUG_ENV = "ANVIL_MCP_DEBUG"
LEAN_ENV = "ANVIL_MCP_LEAN"
"""Set in the spawned server's environment: serve this single call without importing the MCP SDK when
the session allows (:mod:`anvil.mcp.lean`; the server hands over to the SDK for anything else)."""
DEBUG_HINT = f" (set {DEBUG_ENV}=1 to see its log)"


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
    channels = installed()
    spawn = subprocess.Popen if channels is None else channels.spawn
    try:
        process = spawn(stdio_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                        env={LEAN_ENV: "1", **env})
    except OSError:
        raise TargetUnavailable(f"could not start the MCP server {target.display()}", code="target_unavailable") \
            from None
    session = _StdioSession(process, target, deadline)
    try:
        check_initialize(session.request("initialize", initialize_params()), target)
        session.notify("notifications/initialized")
        return session.request("tools/call", {"name": name, "arguments": arguments, "_meta": FULL_RESULT_META})
    finally:
        session.close()
