"""The Streamable HTTP app: bind policy, bearer token, Host/Origin checks, body limit, statelessness."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from anvil import __version__
from anvil.engine.errors import UsageError
from anvil.mcp.http_app import build_http_app, is_loopback, read_token
from anvil.mcp.serve import serve_http
from anvil.mcp.server import build_server
from tests.mcp.support import FAKE_OPERATIONS, TOKEN, FakeInvoke, ThreadedUvicorn, auth, free_port, sdk_call

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def guarded(serve_app: Callable[[Any], ThreadedUvicorn], fake_invoke: FakeInvoke) -> ThreadedUvicorn:
    """Fake operations behind a token, with one extra allowed origin."""
    app = build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), token=TOKEN,
                         allowed_origins=["https://ui.example"])
    return serve_app(app)


def post(url: str, body: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None) -> httpx2.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx2.post(url, content=content, headers={**JSON_HEADERS, **(headers or {})}, timeout=10)


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


def test_a_body_over_the_limit_gets_413(guarded: ThreadedUvicorn) -> None:
    from anvil.mcp.http_app import MAX_BODY_BYTES

    padding = {**INIT, "params": {**INIT["params"], "pad": "x" * MAX_BODY_BYTES}}  # type: ignore[dict-item]
    assert post(guarded.url, padding, auth()).status_code == 413


def test_extra_allowed_hosts_are_accepted(serve_app: Callable[[Any], ThreadedUvicorn],
                                          fake_invoke: FakeInvoke) -> None:
    server = serve_app(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), allowed_hosts=["mcp.example"]))
    assert post(server.url, INIT, {"Host": "mcp.example"}).status_code == 200
    assert post(server.url, INIT, {"Host": "other.example"}).status_code == 421


def test_building_a_public_app_without_a_token_is_refused(fake_invoke: FakeInvoke) -> None:
    with pytest.raises(UsageError):
        build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), host="0.0.0.0")


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_the_sdk_client_calls_a_tool_over_streamable_http(era: str, guarded: ThreadedUvicorn,
                                                                fake_invoke: FakeInvoke) -> None:
    result = await sdk_call(guarded.url, era, "echo", {"text": "hi", "times": 3})
    assert result.is_error is False and result.structured_content == {"text": "hihihi"}
    assert fake_invoke.calls[-1][2] is None  # stateless HTTP cannot carry sampling requests


# -- per-agent tokens: the gate reads the served project's token table on every request ------------


@pytest.fixture
def project_with_a_token(anvil_env: dict[str, str]) -> tuple[dict[str, str], str]:
    from anvil.ops.invoke import invoke

    root = anvil_env["ANVIL_ROOT"]
    invoke("init_project", {"actor": "lead"}, env=anvil_env, cwd=root)
    token = invoke("add_token", {"name": "agent-1", "role": "agent"}, env=anvil_env, cwd=root)["token"]
    return anvil_env, token


def test_the_legacy_sse_transport_carries_the_token_identity_to_the_tool_call(
        serve_app: Callable[[Any], ThreadedUvicorn], fake_invoke: FakeInvoke,
        project_with_a_token: tuple[dict[str, str], str]) -> None:
    from anvil.mcp.client import call_tool
    from anvil.mcp.target import McpTarget

    env, token = project_with_a_token
    app = build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), legacy_sse=True, state_env=env,
                         state_cwd=env["ANVIL_ROOT"])
    server = serve_app(app)
    sse = McpTarget("sse", f"http://127.0.0.1:{server.port}/sse", "TOK")
    for target in (sse, McpTarget("http", server.url, "TOK")):
        assert call_tool(target, "echo", {"text": "s"}, env={"TOK": token}, cwd=".", timeout=30)["text"] == "s"
    assert [(p.actor, p.role, p.authenticated) for p in fake_invoke.principals] == [("agent-1", "agent", True)] * 2
    assert all(fake_invoke.remotes)


def test_a_project_whose_state_cannot_be_read_refuses_every_request(
        serve_app: Callable[[Any], ThreadedUvicorn], fake_invoke: FakeInvoke,
        project_with_a_token: tuple[dict[str, str], str]) -> None:
    from anvil.engine.storage.paths import resolve_state

    env, token = project_with_a_token
    server = serve_app(build_http_app(build_server(FAKE_OPERATIONS, fake_invoke), state_env=env,
                                      state_cwd=env["ANVIL_ROOT"]))
    assert post(server.url, INIT, auth(token)).status_code == 200
    location = resolve_state(env, env["ANVIL_ROOT"])
    location.db_path.write_bytes(b"not a database" * 100)
    for wal in location.state_dir.glob("state.db-*"):
        wal.unlink()
    refused = post(server.url, INIT, auth(token))
    assert refused.status_code == 503 and token not in refused.text
    assert fake_invoke.calls == []
