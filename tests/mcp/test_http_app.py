"""Streamable HTTP serving: bind policy, bearer token, Host/Origin checks, body limit, statelessness."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from anvil import __version__
from anvil.engine.errors import UsageError
from anvil.mcp.http_app import build_http_app, is_loopback, read_token
from anvil.mcp.serve import serve_http
from anvil.mcp.server import build_server
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import FAKE_OPERATIONS, TOKEN, FakeInvoke, ServerProcess, ThreadedUvicorn, free_port

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def guarded(serve_app: Callable[[Any], ThreadedUvicorn], fake_invoke: FakeInvoke) -> ThreadedUvicorn:
    """Fake operations behind a token, with one extra allowed origin."""
    app = build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), token=TOKEN,
                         allowed_origins=["https://ui.example"])
    return serve_app(app)


def post(url: str, body: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None) -> httpx2.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx2.post(url, content=content, headers={**JSON_HEADERS, **(headers or {})}, timeout=10)


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                                ("127.0.0.2", True), ("0.0.0.0", False), ("::", False),
                                                ("10.1.2.3", False), ("example.com", False)])
def test_loopback_addresses_are_recognized(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::"])
def test_a_non_loopback_bind_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(UsageError) as caught:
        read_token(host, None, {})
    assert caught.value.code == "token_required"
    with pytest.raises(UsageError):
        serve_http(host, free_port(), None)


def test_a_loopback_bind_may_run_without_a_token() -> None:
    assert read_token("127.0.0.1", None, {}) is None


def test_a_named_but_unset_token_variable_is_named_in_the_error() -> None:
    with pytest.raises(UsageError) as caught:
        read_token("0.0.0.0", "ANVIL_TEST_TOKEN", {"ANVIL_TEST_TOKEN": "  "})
    assert caught.value.code == "token_env_unset" and "ANVIL_TEST_TOKEN" in caught.value.message


def test_a_token_given_instead_of_a_variable_name_is_not_echoed() -> None:
    with pytest.raises(UsageError) as caught:
        read_token("0.0.0.0", "abc-def.123/secret", {})
    assert caught.value.code == "invalid_token_env" and "abc-def" not in caught.value.message


def test_the_command_line_refuses_a_public_bind_without_a_token(anvil_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "anvil.mcp", "--http", "--host", "0.0.0.0", "--port",
                           str(free_port())], env=anvil_subprocess_env(anvil_env), capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "token" in proc.stderr and "Traceback" not in proc.stderr


def test_a_request_without_a_token_gets_401_with_a_bearer_challenge(guarded: ThreadedUvicorn) -> None:
    response = post(guarded.url, INIT)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer", f"Basic {TOKEN}", TOKEN])
def test_a_wrong_token_gets_401(guarded: ThreadedUvicorn, header: str) -> None:
    response = post(guarded.url, INIT, {"Authorization": header})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in response.text


def test_the_right_token_is_let_through_and_no_session_is_kept(guarded: ThreadedUvicorn) -> None:
    response = post(guarded.url, INIT, auth())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["serverInfo"] == {"name": "anvil", "version": __version__}


def test_a_foreign_host_header_is_refused(guarded: ThreadedUvicorn) -> None:
    assert post(guarded.url, INIT, {**auth(), "Host": "evil.example"}).status_code == 421
    assert post(guarded.url, INIT, {**auth(), "Host": f"localhost:{guarded.port}"}).status_code == 200


def test_only_loopback_and_configured_origins_are_accepted(guarded: ThreadedUvicorn) -> None:
    assert post(guarded.url, INIT, {**auth(), "Origin": "https://evil.example"}).status_code == 403
    assert post(guarded.url, INIT, {**auth(), "Origin": "https://ui.example"}).status_code == 200
    assert post(guarded.url, INIT, {**auth(), "Origin": f"http://localhost:{guarded.port}"}).status_code == 200


def test_a_body_over_one_mebibyte_gets_413(guarded: ThreadedUvicorn) -> None:
    padding = {**INIT, "params": {**INIT["params"], "pad": "x" * (1 << 20)}}  # type: ignore[dict-item]
    assert post(guarded.url, padding, auth()).status_code == 413


def test_extra_allowed_hosts_are_accepted(serve_app: Callable[[Any], ThreadedUvicorn],
                                          fake_invoke: FakeInvoke) -> None:
    server = serve_app(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), allowed_hosts=["mcp.example"]))
    assert post(server.url, INIT, {"Host": "mcp.example"}).status_code == 200
    assert post(server.url, INIT, {"Host": "other.example"}).status_code == 421


def test_building_a_public_app_without_a_token_is_refused(fake_invoke: FakeInvoke) -> None:
    with pytest.raises(UsageError):
        build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), host="0.0.0.0")


async def sdk_call(url: str, era: str, name: str, arguments: dict[str, Any], token: str | None = TOKEN) -> Any:
    headers = auth(token) if token else {}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=era,
                              read_timeout_seconds=30) as client:
                assert client.server_info is not None and client.server_info.version == __version__
                return await client.call_tool(name, arguments)


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_sdk_client_calls_a_tool_over_streamable_http(era: str, guarded: ThreadedUvicorn,
                                                                fake_invoke: FakeInvoke) -> None:
    result = await sdk_call(guarded.url, era, "echo", {"text": "hi", "times": 3})
    assert result.is_error is False and result.structured_content == {"text": "hihihi", "sampled": None}
    assert fake_invoke.calls[-1][2] is None  # stateless HTTP cannot carry sampling requests


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_deployed_server_process_serves_the_real_registry(
        era: str, http_server_process: Callable[..., ServerProcess]) -> None:
    server = http_server_process()
    result = await sdk_call(server.url, era, "get_project_status", {})
    assert result.is_error is False and result.structured_content["initialized"] is False
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


def test_the_token_never_leaks_into_any_output(http_server_process: Callable[..., ServerProcess],
                                               anvil_env: dict[str, str]) -> None:
    """An authenticated call and a refused one, through the anvil CLI client in a child process."""
    server = http_server_process()
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
