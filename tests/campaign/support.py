"""Helpers of the campaign tests: a raw stdio MCP session on a real server process."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import anvil_subprocess_env

CLIENT = {"name": "campaign", "version": "0"}


class StdioSession:
    """A ``python -m anvil.mcp`` process spoken to line by line (initialize done on entry)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "anvil.mcp", *args], env=anvil_subprocess_env(env),
                                     cwd=env["ANVIL_ROOT"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its reply (anything else the server sends first is skipped)."""
        assert self.proc.stdout is not None
        ident, self.next_id = self.next_id, self.next_id + 1
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            assert line, "the stdio server closed its output"
            reply = json.loads(line)
            if reply.get("id") == ident:
                return reply  # type: ignore[no-any-return]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tools/call``: the structured result, or the error document of a tool error."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError"):
            return json.loads(result["content"][0]["text"])  # type: ignore[no-any-return]
        return result["structuredContent"]  # type: ignore[no-any-return]

    def close(self) -> str:
        """End the session; returns what the server wrote on stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()

    def __enter__(self) -> StdioSession:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
