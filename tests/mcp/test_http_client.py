"""The CLI's Streamable HTTP (both eras) and legacy SSE transports, and how their failures read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from anvil.engine.errors import AuthFailed, InternalError, Refused, TargetUnavailable, UsageError
from anvil.mcp.client import call_tool
from anvil.mcp.http_app import build_http_app
from anvil.mcp.server import build_server
from anvil.mcp.target import McpTarget
from tests.mcp.support import (
    FAKE_OPERATIONS,
    TOKEN,
    FakeHttpServer,
    FakeInvoke,
    Recorded,
    ThreadedUvicorn,
    json_reply,
    sse_reply,
)

SECRET_URL = "http://127.0.0.1:9/mcp?api_key=QUERYSECRET#FRAGSECRET"


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
