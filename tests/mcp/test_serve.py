"""The server processes: stdio and Streamable HTTP started the way users start them (the tests whose
subject is the HTTP app behind the process fork it warm, see tests.warm)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from anvil import __version__
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import TOKEN, ServerProcess, free_port, sdk_call


def test_the_command_line_refuses_a_public_bind_without_a_token(anvil_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "anvil.mcp", "--http", "--host", "0.0.0.0", "--port",
                           str(free_port())], env=anvil_subprocess_env(anvil_env), capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "token" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.anyio
async def test_the_deployed_server_process_serves_the_real_registry(
        spawned_http_server_process: Callable[..., ServerProcess]) -> None:
    server = spawned_http_server_process()
    for era in ("legacy", "auto"):  # one process serves both protocol eras
        result = await sdk_call(server.url, era, "get_project_status", {})
        assert result.is_error is False and result.structured_content["initialized"] is False, era
    log = server.stop()
    assert TOKEN not in log


LEAK_PROBE = """
import os
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
print(call_tool(McpTarget("http", "URL", "MCP_TEST_TOKEN"), "get_project_status", {}, env=os.environ, cwd="."))
try:
    call_tool(McpTarget("http", "URL", "WRONG_TOKEN"), "get_project_status", {}, env=os.environ, cwd=".")
except Exception as exc:
    print(repr(exc), exc.args, exc.__dict__, exc.__context__, exc.__cause__)
    raise
"""


def test_the_token_never_leaks_into_any_output(spawned_http_server_process: Callable[..., ServerProcess],
                                               anvil_env: dict[str, str]) -> None:
    """An authenticated call and a refused one, through the anvil CLI client in a child process."""
    server = spawned_http_server_process()
    script = LEAK_PROBE.replace("URL", server.url)
    env = anvil_subprocess_env(anvil_env)
    env.update(MCP_TEST_TOKEN=TOKEN, WRONG_TOKEN=TOKEN + "-wrong")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    server_output = server.stop()
    assert "initialized" in proc.stdout and "AuthFailed" in proc.stdout  # both calls happened
    assert "Traceback" in proc.stderr  # the re-raised error printed its traceback: still no token
    for text in (proc.stdout, proc.stderr, server_output):
        assert TOKEN not in text


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_stdio_server_serves_the_real_registry_to_the_sdk_client(era: str,
                                                                           anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp"], env=env,
                                   cwd=anvil_env["ANVIL_ROOT"])
    with anyio.fail_after(60):
        async with Client(params, mode=era, read_timeout_seconds=60) as client:
            assert client.server_info is not None and client.server_info.version == __version__
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("get_project_status", {})
    assert "get_project_status" in names and "init_project" not in names
    assert result.is_error is False
    assert result.structured_content is not None and result.structured_content["initialized"] is False
    assert result.structured_content["state_dir"].startswith(anvil_env["ANVIL_HOME"])


HANDSHAKE: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_project_status", "arguments": {}}},
]


def test_the_stdio_server_writes_nothing_but_protocol_messages_to_stdout(anvil_env: dict[str, str]) -> None:
    with subprocess.Popen([sys.executable, "-m", "anvil.mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=anvil_subprocess_env(anvil_env),
                          cwd=anvil_env["ANVIL_ROOT"]) as process:
        assert process.stdin is not None and process.stdout is not None
        lines = []
        for message in HANDSHAKE:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                lines.append(process.stdout.readline())
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(timeout=30) == 0
        assert rest == b""
        replies = [json.loads(line) for line in lines]
        assert [reply["id"] for reply in replies] == [1, 2]
        assert all(reply["jsonrpc"] == "2.0" and "result" in reply for reply in replies)
        assert replies[1]["result"]["structuredContent"]["initialized"] is False


NOISY_SERVER = """
import os, sys
from anvil.mcp import serve
from anvil.mcp.server import build_server
from tests.mcp.support import FAKE_OPERATIONS, FakeInvoke

def noisy(arguments, sampler):
    print("PRINTED-NOISE")
    os.system(sys.executable + " -c \\"print('CHILD-NOISE')\\"")
    return {"text": "quiet"}

invoke = FakeInvoke(behaviour={"echo": noisy})
serve._build = lambda planning, extra=(): build_server(FAKE_OPERATIONS, invoke)
serve.serve_stdio()
"""


def test_stray_prints_and_child_output_go_to_stderr_not_the_protocol(anvil_env: dict[str, str]) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    with subprocess.Popen([sys.executable, "-c", NOISY_SERVER],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=anvil_subprocess_env(anvil_env), cwd=anvil_env["ANVIL_ROOT"]) as process:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        replies = []
        for message in [*HANDSHAKE[:2], call]:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                replies.append(json.loads(process.stdout.readline()))
        process.stdin.close()
        assert process.stdout.read() == b""
        errors = process.stderr.read().decode()
        assert process.wait(timeout=30) == 0
        assert replies[1]["result"]["structuredContent"] == {"text": "quiet"}  # nulls are left out
        assert "PRINTED-NOISE" in errors and "CHILD-NOISE" in errors


def test_a_malformed_stdio_line_does_not_end_the_session(anvil_env: dict[str, str]) -> None:
    client = {"name": "t", "version": "0"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    lines = [json.dumps(init), "{this is not json", json.dumps(initialized),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "get_project_status", "arguments": {}}})]
    with subprocess.Popen([sys.executable, "-m", "anvil.mcp"], env=anvil_subprocess_env(anvil_env),
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
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


HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}


def post_raw(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=HEADERS, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


MALFORMED_BODIES = [b"{not json", b"[]", b'{"jsonrpc": "2.0"}', b"\xff\xfe"]


def test_malformed_http_bodies_get_a_client_error_and_the_server_keeps_serving(
        http_server_process: Callable[..., ServerProcess], anvil_env: dict[str, str]) -> None:
    server = http_server_process()
    for body in MALFORMED_BODIES:
        status, _ = post_raw(server.url, body)
        assert 400 <= status < 500, body
        probe = subprocess.run([sys.executable, "-m", "anvil", "status", "--json", "--mcp", server.url,
                                "--mcp-token-env", "MCP_TEST_TOKEN"],
                               env={**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN},
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode == 0, (body, probe.stdout + probe.stderr)
    assert "Traceback" not in server.stop()


@pytest.mark.anyio
async def test_cwd_selects_a_project_over_stdio_and_stays_inside_the_served_one_over_http(
        http_server_process: Callable[..., ServerProcess], anvil_env: dict[str, str], tmp_path: Any) -> None:
    other = tmp_path / "other"
    other.mkdir()
    env = anvil_subprocess_env(anvil_env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp", "--planning"], env=env,
                                   cwd=anvil_env["ANVIL_ROOT"])
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            created = await client.call_tool("init_project", {"name": "Other", "cwd": str(other)})
            assert created.is_error is False
            there = await client.call_tool("get_project_status", {"cwd": str(other)})
            here = await client.call_tool("get_project_status", {})
    assert there.structured_content["project_name"] == "Other"  # type: ignore[index]
    assert here.structured_content["initialized"] is False  # type: ignore[index]
    server = http_server_process()
    inside = await sdk_call(server.url, "auto", "get_project_status", {"cwd": "."})
    outside = await sdk_call(server.url, "auto", "get_project_status", {"cwd": str(other)})
    assert inside.is_error is False
    assert outside.is_error is True
    assert json.loads(outside.content[0].text)["error"]["code"] == "cwd_outside_project"  # type: ignore[union-attr]


def test_a_server_on_postgresql_never_shows_the_password_of_its_connection_string(
        anvil_env: dict[str, str], pg_url: str, spawned_http_server_process: Callable[..., ServerProcess]) -> None:
    import psycopg

    from anvil.engine.storage.postgres import display_database_url
    from tests.ops.support import op

    secret = "s3cret-pw-never-shown"
    anvil_env["ANVIL_DATABASE_URL"] = pg_url.replace("postgresql://postgres@", f"postgresql://postgres:{secret}@")
    op(anvil_env, "init_project", name="Demo")
    server = spawned_http_server_process()  # its command line is checked too
    client = anvil_subprocess_env(anvil_env) | {"MCP_TEST_TOKEN": TOKEN}
    route = ["--mcp", server.url, "--mcp-token-env", "MCP_TEST_TOKEN", "--json"]
    outputs = []
    for args in (["status"], ["claim", "T404", "--actor", "agent-1"], ["verify"]):
        proc = subprocess.run([sys.executable, "-m", "anvil", *args, *route], env=client, capture_output=True,
                              text=True, timeout=60)
        outputs.append(proc.stdout + proc.stderr)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        logged = conn.execute("SELECT count(*) FROM events WHERE payload LIKE %s", (f"%{secret}%",)).fetchone()
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND pid <> pg_backend_pid()")
        conn.execute("ALTER TABLE events RENAME TO events_gone")  # the database breaks under the server
    broken = subprocess.run([sys.executable, "-m", "anvil", "status", *route], env=client, capture_output=True,
                            text=True, timeout=60)
    outputs.append(broken.stdout + broken.stderr)
    cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode(errors="replace")
    log = server.stop()
    assert f"state in PostgreSQL at {display_database_url(pg_url)}" in log
    assert logged == (0,) and broken.returncode != 0
    assert secret not in log + cmdline + "".join(outputs), (log, outputs)


def test_the_stdio_server_in_a_terminal_exits_130_on_the_first_ctrl_c(anvil_env: dict[str, str]) -> None:
    import os
    import pty
    import signal

    from tests.conftest import interruptible

    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "anvil.mcp"], env=anvil_subprocess_env(anvil_env),
                               stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=anvil_env["ANVIL_ROOT"], preexec_fn=interruptible)
    os.close(terminal)
    try:
        assert process.stderr is not None
        os.write(controller, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        assert process.stdout is not None and b'"id":1' in process.stdout.readline()  # serving, reading the tty
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert b"interrupted" in process.stderr.read()
    finally:
        process.kill()
        process.wait()
        os.close(controller)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
