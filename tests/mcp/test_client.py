"""The CLI's lightweight MCP client: stdio spawn, Streamable HTTP (both eras), SSE, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.errors import AuthFailed, InternalError, Refused, TargetUnavailable, UsageError
from anvil.mcp.client import call_tool
from anvil.mcp.http_app import build_http_app
from anvil.mcp.jsonrpc import tool_output
from anvil.mcp.server import build_server
from anvil.mcp.target import McpTarget
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import (
    FAKE_OPERATIONS,
    TOKEN,
    FakeHttpServer,
    FakeInvoke,
    Recorded,
    ServerProcess,
    ThreadedUvicorn,
    json_reply,
    sse_reply,
)

SECRET_URL = "http://127.0.0.1:9/mcp?api_key=QUERYSECRET#FRAGSECRET"


# --- targets ------------------------------------------------------------------------------------


def test_a_target_displays_without_userinfo_query_or_fragment() -> None:
    target = McpTarget("http", SECRET_URL, "SOME_TOKEN")
    assert target.display() == "http://127.0.0.1:9/mcp"
    assert "SECRET" not in repr(target) and "SECRET" not in str(target)
    assert McpTarget("sse", "https://h.example:8443/sse?x=1").display() == "sse:https://h.example:8443/sse"
    assert McpTarget("stdio").display().startswith("stdio")


@pytest.mark.parametrize("url", ["http://user:S3CRETPW@h.example/mcp", "https://S3CRETPW@h.example/mcp"])
def test_a_target_url_with_credentials_is_refused_without_echoing_them(url: str) -> None:
    with pytest.raises(UsageError) as caught:
        McpTarget("http", url)
    assert caught.value.code == "credentials_in_url" and "S3CRETPW" not in caught.value.message


@pytest.mark.parametrize(("kind", "url"), [("http", "ftp://h/mcp"), ("http", None), ("sse", "h.example/sse"),
                                           ("stdio", "http://h/mcp")])
def test_an_incoherent_target_is_a_usage_error(kind: Any, url: str | None) -> None:
    with pytest.raises(UsageError):
        McpTarget(kind, url)


# --- decoding tool results ----------------------------------------------------------------------


def test_a_tool_error_document_is_rebuilt_into_the_same_error() -> None:
    document = {"error": {"code": "wrong_status", "message": "task is done", "exit_code": 5, "details": {"a": 1}}}
    result = {"isError": True, "content": [{"type": "text", "text": json.dumps(document)}]}
    with pytest.raises(Refused) as caught:
        tool_output(result, McpTarget("stdio"))
    assert (caught.value.code, caught.value.message, caught.value.details) == ("wrong_status", "task is done", {"a": 1})


def test_a_tool_error_without_a_document_is_a_fixed_internal_error() -> None:
    result = {"isError": True, "content": [{"type": "text", "text": "Traceback: secret stuff"}]}
    with pytest.raises(InternalError) as caught:
        tool_output(result, McpTarget("stdio"))
    assert "secret" not in caught.value.message


def test_a_success_without_structured_content_falls_back_to_the_json_text() -> None:
    result = {"content": [{"type": "text", "text": '{"ok": true}'}]}
    assert tool_output(result, McpTarget("stdio")) == {"ok": True}
    with pytest.raises(InternalError):
        tool_output({"content": [{"type": "text", "text": "[1, 2]"}]}, McpTarget("stdio"))


# --- stdio --------------------------------------------------------------------------------------


def test_stdio_spawns_the_server_with_the_callers_full_environment(anvil_env: dict[str, str],
                                                                  tmp_path: Path) -> None:
    env = anvil_subprocess_env(anvil_env)
    env["ANVIL_HOME"] = str(tmp_path / "another-home")  # only the env argument knows this one
    output = call_tool(McpTarget("stdio"), "get_project_status", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert output["initialized"] is False
    assert output["state_dir"].startswith(str(tmp_path / "another-home"))


def test_stdio_exposes_planning_tools_to_the_cli(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    env.pop("ANVIL_MCP_PLANNING", None)
    output = call_tool(McpTarget("stdio"), "describe_surface", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert isinstance(output, dict) and output


def test_stdio_that_cannot_start_is_target_unavailable(anvil_env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(TargetUnavailable) as caught:
        call_tool(McpTarget("stdio"), "get_project_status", {}, env=anvil_subprocess_env(anvil_env),
                  cwd=str(tmp_path / "missing"))
    assert caught.value.exit_code == 7


def test_stdio_gives_up_at_the_deadline(anvil_env: dict[str, str]) -> None:
    with pytest.raises(TargetUnavailable) as caught:
        call_tool(McpTarget("stdio"), "get_project_status", {}, env=anvil_subprocess_env(anvil_env),
                  cwd=anvil_env["ANVIL_ROOT"], timeout=0.05)
    assert caught.value.code == "target_timeout"


# --- the same call over each transport ----------------------------------------------------------


@pytest.fixture(params=["stdio", "http"])
def real_target(request: pytest.FixtureRequest, http_server_process: Callable[..., ServerProcess]) -> McpTarget:
    if request.param == "stdio":
        return McpTarget("stdio")
    return McpTarget("http", http_server_process().url, "MCP_TEST_TOKEN")


def test_every_transport_returns_the_real_operation_output(real_target: McpTarget, anvil_env: dict[str, str]) -> None:
    env = {**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN}
    output = call_tool(real_target, "get_project_status", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert output["initialized"] is False and output["state_dir"].startswith(anvil_env["ANVIL_HOME"])


def test_every_transport_rebuilds_the_servers_usage_error(real_target: McpTarget, anvil_env: dict[str, str]) -> None:
    env = {**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN}
    with pytest.raises(UsageError) as caught:
        call_tool(real_target, "get_project_status", {"prd_id": 7, "nope": True}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert caught.value.code == "invalid_input" and caught.value.exit_code == 2


# --- Streamable HTTP ----------------------------------------------------------------------------


class CountingApp:
    """Counts the HTTP requests reaching an ASGI app and keeps their headers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.seen.append(headers | {":method": scope["method"]})
        await self.app(scope, receive, send)


def test_http_uses_one_sessionless_post_against_a_current_server(serve_app: Callable[[Any], ThreadedUvicorn],
                                                                 fake_invoke: FakeInvoke) -> None:
    app = CountingApp(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), token=TOKEN))
    server = serve_app(app)
    output = call_tool(McpTarget("http", server.url, "TOK"), "echo", {"text": "a"}, env={"TOK": TOKEN}, cwd=".")
    assert output == {"text": "a", "sampled": None}
    assert len(app.seen) == 1
    headers = app.seen[0]
    assert (headers[":method"], headers["mcp-protocol-version"], headers["mcp-method"], headers["mcp-name"]) == \
        ("POST", "2026-07-28", "tools/call", "echo")
    assert headers["authorization"] == f"Bearer {TOKEN}"


def test_http_rebuilds_a_tool_error(serve_app: Callable[[Any], ThreadedUvicorn], fake_invoke: FakeInvoke) -> None:
    server = serve_app(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke)))
    with pytest.raises(Refused) as caught:
        call_tool(McpTarget("http", server.url), "wipe", {}, env={}, cwd=".")
    assert (caught.value.code, caught.value.details) == ("wipe_refused", {"why": "test"})


def legacy_server(record: Recorded) -> tuple[int, dict[str, str], bytes]:
    """A handshake-era server with sessions that answers calls as server-sent events."""
    if record.method == "DELETE":
        return 200, {}, b""
    if record.headers.get("mcp-protocol-version") == "2026-07-28":
        return json_reply({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Missing session"}}, 400)
    body = record.body
    if body["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "x",
                                                                                                "version": "1"}}
        return json_reply({"jsonrpc": "2.0", "id": body["id"], "result": result}, headers={"Mcp-Session-Id": "sess-1"})
    assert record.headers.get("mcp-session-id") == "sess-1"
    assert record.headers.get("mcp-protocol-version") == "2025-06-18"
    if body["method"] == "notifications/initialized":
        return 202, {}, b""
    progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [], "structuredContent": {"ok": 1}}}
    return sse_reply(progress, answer)


def test_http_falls_back_to_the_handshake_and_reads_server_sent_events() -> None:
    with FakeHttpServer(legacy_server) as server:
        assert call_tool(McpTarget("http", server.url), "t", {}, env={}, cwd=".") == {"ok": 1}
    methods = [r.body["method"] if isinstance(r.body, dict) else r.method for r in server.requests]
    assert methods == ["tools/call", "initialize", "notifications/initialized", "tools/call", "DELETE"]
    assert all("authorization" not in r.headers for r in server.requests)


def test_http_reports_a_refused_connection_by_the_safe_url(anvil_env: dict[str, str]) -> None:
    target = McpTarget("http", SECRET_URL.replace(":9/", ":1/"))
    with pytest.raises(TargetUnavailable) as caught:
        call_tool(target, "t", {}, env={}, cwd=".")
    assert caught.value.exit_code == 7 and "http://127.0.0.1:1/mcp" in caught.value.message
    assert "SECRET" not in caught.value.message


def test_a_name_that_does_not_resolve_is_target_unavailable() -> None:
    with pytest.raises(TargetUnavailable):
        call_tool(McpTarget("http", "http://no-such-host.invalid/mcp"), "t", {}, env={}, cwd=".", timeout=10)


def test_a_peer_that_is_not_mcp_is_target_unavailable() -> None:
    with FakeHttpServer(lambda r: (200, {"Content-Type": "text/html"}, b"<html>hello</html>")) as server:
        with pytest.raises(TargetUnavailable) as caught:
            call_tool(McpTarget("http", server.url), "t", {}, env={}, cwd=".")
    assert caught.value.code == "not_mcp"


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_auth_failed_with_a_fixed_message(status: int) -> None:
    with FakeHttpServer(lambda r: json_reply({"error": "invalid_token"}, status)) as server:
        with pytest.raises(AuthFailed) as caught:
            call_tool(McpTarget("http", server.url, "TOK"), "t", {}, env={"TOK": TOKEN}, cwd=".")
    assert caught.value.exit_code == 4 and TOKEN not in caught.value.message


def test_an_unset_token_variable_is_named_and_nothing_is_sent() -> None:
    with FakeHttpServer(lambda r: json_reply({})) as server:
        with pytest.raises(UsageError) as caught:
            call_tool(McpTarget("http", server.url, "MISSING_TOKEN"), "t", {}, env={}, cwd=".")
    assert caught.value.code == "token_env_unset" and "MISSING_TOKEN" in caught.value.message
    assert server.requests == []


def test_a_redirect_is_not_followed_so_the_token_stays_home() -> None:
    with FakeHttpServer(lambda r: json_reply({})) as elsewhere:
        with FakeHttpServer(lambda r: (307, {"Location": elsewhere.url}, b"")) as server:
            with pytest.raises(TargetUnavailable) as caught:
                call_tool(McpTarget("http", server.url, "TOK"), "t", {}, env={"TOK": TOKEN}, cwd=".")
    assert caught.value.code == "target_redirected" and elsewhere.requests == []


def test_a_silent_server_times_out_as_target_unavailable() -> None:
    holder: dict[str, FakeHttpServer] = {}

    def hang(record: Recorded) -> tuple[int, dict[str, str], bytes]:
        holder["server"].release.wait(30)
        return json_reply({})

    with FakeHttpServer(hang) as server:
        holder["server"] = server
        with pytest.raises(TargetUnavailable) as caught:
            call_tool(McpTarget("http", server.url), "t", {}, env={}, cwd=".", timeout=0.5)
    assert caught.value.code == "target_timeout"


def test_a_json_rpc_error_is_mapped_without_echoing_the_servers_text() -> None:
    def fail(record: Recorded) -> tuple[int, dict[str, str], bytes]:
        return json_reply({"jsonrpc": "2.0", "id": record.body["id"], "error": {"code": -32603, "message": "SECRET"}})

    with FakeHttpServer(fail) as server:
        with pytest.raises(InternalError) as caught:
            call_tool(McpTarget("http", server.url), "t", {}, env={}, cwd=".")
    assert "SECRET" not in caught.value.message and "-32603" in caught.value.message


# --- legacy SSE ---------------------------------------------------------------------------------


def test_sse_targets_reach_the_legacy_transport(serve_app: Callable[[Any], ThreadedUvicorn],
                                                fake_invoke: FakeInvoke) -> None:
    server = serve_app(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), token=TOKEN, legacy_sse=True))
    target = McpTarget("sse", f"http://127.0.0.1:{server.port}/sse", "TOK")
    assert call_tool(target, "echo", {"text": "s"}, env={"TOK": TOKEN}, cwd=".", timeout=30) == \
        {"text": "s", "sampled": None}
    with pytest.raises(Refused):
        call_tool(target, "wipe", {}, env={"TOK": TOKEN}, cwd=".", timeout=30)
    with pytest.raises(AuthFailed):
        call_tool(target, "echo", {"text": "s"}, env={"TOK": "wrong"}, cwd=".", timeout=30)


def test_the_client_module_does_not_import_the_sdk(anvil_env: dict[str, str]) -> None:
    probe = ("import sys, anvil.mcp.client, anvil.mcp.http_client, anvil.mcp.stdio_client, anvil.mcp.target\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic', 'httpx2')))")
    proc = subprocess.run([sys.executable, "-c", probe], env=anvil_subprocess_env(anvil_env), capture_output=True,
                          text=True, timeout=30)
    assert proc.stdout.strip() == "[]", proc.stderr
