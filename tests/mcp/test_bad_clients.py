"""Malformed requests from a client get a clean protocol error; the server keeps serving and
writes no traceback. Idempotent retries behave the same over every route."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from anvil.ops.scenarios import build_scenario
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import TOKEN, ServerProcess

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}


def post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=HEADERS, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"jsonrpc": "2.0"}', b"\xff\xfe"])
def test_malformed_http_bodies_get_a_client_error_and_the_server_keeps_serving(
        http_server_process: Callable[..., ServerProcess], anvil_env: dict[str, str], body: bytes) -> None:
    server = http_server_process()
    status, _ = post(server.url, body)
    assert 400 <= status < 500
    probe = subprocess.run([sys.executable, "-m", "anvil", "status", "--json", "--mcp", server.url,
                            "--mcp-token-env", "MCP_TEST_TOKEN"],
                           env={**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN},
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert "Traceback" not in server.stop()


def test_a_malformed_stdio_line_does_not_end_the_session(anvil_env: dict[str, str]) -> None:
    client = {"name": "t", "version": "0"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    lines = [json.dumps(init), "{this is not json", json.dumps(initialized),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "get_project_status", "arguments": {}}})]
    proc = subprocess.Popen([sys.executable, "-m", "anvil.mcp"], env=anvil_subprocess_env(anvil_env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    for line in lines:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        if '"id"' in line:
            while True:  # skip anything else (a JSON-RPC error for the garbage line, if one is sent)
                reply = json.loads(proc.stdout.readline())
                if reply.get("id") == json.loads(line)["id"]:
                    replies.append(reply)
                    break
    proc.stdin.close()
    assert proc.stderr is not None
    proc.wait(timeout=30)
    stderr = proc.stderr.read()
    by_id = {reply.get("id"): reply for reply in replies}
    assert by_id[1]["result"]["serverInfo"]["name"] == "anvil"
    assert by_id[2]["result"]["structuredContent"]["initialized"] is False
    assert "Traceback" not in stderr


@pytest.mark.parametrize("route", ["direct", "stdio", "http"])
def test_an_idempotent_retry_returns_the_first_result_on_every_route(
        route: str, anvil_env: dict[str, str], http_server_process: Callable[..., ServerProcess]) -> None:
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    extra: list[str] = []
    env = anvil_subprocess_env(anvil_env)
    if route == "stdio":
        extra = ["--mcp", "stdio"]
    elif route == "http":
        extra = ["--mcp", http_server_process().url, "--mcp-token-env", "MCP_TEST_TOKEN"]
        env["MCP_TEST_TOKEN"] = TOKEN

    def claim(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
        proc = subprocess.run([sys.executable, "-m", "anvil", "claim", "T001", "--json", *args, *extra], env=env,
                              capture_output=True, text=True, timeout=60, cwd=anvil_env["ANVIL_ROOT"])
        return proc.returncode, json.loads(proc.stdout)

    first = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    again = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    changed = claim("--actor", "agent-1", "--idempotency-key", "k-1", "--lease", "60")
    assert first[0] == 0 and again == first
    assert changed[0] == 5 and changed[1]["error"]["code"] == "idempotency_conflict"
