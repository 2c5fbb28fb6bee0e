"""One HTTP request, one store: the gate's admission and the tool call share the state it opened,
nothing outlives the request, and the SDK's per-request work anvil needs none of is skipped."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from anvil.engine.errors import NotFound
from anvil.engine.storage.paths import location_inputs, resolve_state
from anvil.engine.storage.store import Store
from anvil.mcp.http_app import build_http_app
from anvil.mcp.server import HEADER_ANNOTATION, build_server, header_checked_schemas
from anvil.ops import access
from anvil.ops.access import Gatekeeper, HeldState
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario
from tests.mcp.support import TOKEN, ThreadedUvicorn, auth

TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)")
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


def modern_call(url: str, name: str, arguments: dict[str, Any], token: str = TOKEN,
                extra_headers: dict[str, str] | None = None) -> httpx2.Response:
    """One sessionless 2026-07-28 ``tools/call`` POST."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments,
                                                                          "_meta": META}}
    headers = {"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": name, **auth(token), **(extra_headers or {})}
    return httpx2.post(url, content=json.dumps(body).encode(), headers=headers, timeout=30)


def untimed(body: bytes) -> bytes:
    """``body`` with its timestamps (an answer's ``as_of``, a window's start) blanked: the rest must match."""
    return TIMESTAMP.sub(b"<time>", body)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``Store.open`` from now on (the database or file each opened), the real open still run."""
    seen: list[str] = []
    real = Store.open.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Store], location: Any, **options: Any) -> Store:
        seen.append(str(location.database_url or location.db_path))
        return real(cls, location, **options)  # type: ignore[no-any-return]

    monkeypatch.setattr(Store, "open", classmethod(counted))
    return seen


@pytest.fixture
def served(anvil_env: dict[str, str]) -> Iterator[Callable[[], ThreadedUvicorn]]:
    """A ready project served over HTTP behind the shared token, as ``anvil serve --http`` builds it."""
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    running: list[ThreadedUvicorn] = []

    def start() -> ThreadedUvicorn:
        app = build_http_app(build_server(all_operations(), planning=True), token=TOKEN, state_env=anvil_env,
                             state_cwd=anvil_env["ANVIL_ROOT"])
        running.append(ThreadedUvicorn(app).__enter__())
        return running[-1]

    yield start
    for server in running:
        server.__exit__()


def test_a_tool_call_runs_on_the_store_the_gate_opened_and_answers_as_a_call_that_opened_its_own(
        served: Callable[[], ThreadedUvicorn], opens: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    server = served()
    calls = [("list_tasks", {}), ("get_next_task", {"actor": "agent-1"}), ("get_board", {}),
             ("claim_next_task", {"actor": "agent-1", "dry_run": True})]
    shared = []
    for name, arguments in calls:
        before = len(opens)
        shared.append((modern_call(server.url, name, arguments), len(opens) - before))
    assert shared[0][1] == 1  # a plain read: the gate's open alone
    monkeypatch.setattr(access, "MAX_HELD", 0)  # the gate keeps nothing: every call opens its own, as before
    for (name, arguments), (answer, opened) in zip(calls, shared, strict=True):
        before = len(opens)
        alone = modern_call(server.url, name, arguments)
        assert answer.json()["result"]["isError"] is False, name
        assert len(opens) - before == opened + 1, name
        assert (alone.status_code, untimed(alone.content)) == (answer.status_code, untimed(answer.content))


def test_a_write_runs_on_the_gates_store_and_the_next_request_reads_afresh(
        served: Callable[[], ThreadedUvicorn], opens: list[str], anvil_env: dict[str, str]) -> None:
    server = served()
    claimed = modern_call(server.url, "claim_next_task", {"actor": "agent-1"}).json()["result"]
    assert claimed["isError"] is False and claimed["structuredContent"]["claim"] is not None
    task_id = claimed["structuredContent"]["claim"]["task_id"]
    before = len(opens)
    status = modern_call(server.url, "get_task", {"task_id": task_id}).json()["result"]["structuredContent"]
    assert len(opens) - before == 1 and status["status"] == "claimed"


def test_a_token_revoked_between_two_requests_is_refused_on_the_second(
        served: Callable[[], ThreadedUvicorn], anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    token = invoke("add_token", {"name": "agent-1", "role": "agent"}, env=anvil_env, cwd=root)["token"]
    server = served()
    assert modern_call(server.url, "get_project_status", {}, token).status_code == 200
    invoke("revoke_token", {"name": "agent-1", "actor": "lead"}, env=anvil_env, cwd=root)
    refused = modern_call(server.url, "get_project_status", {}, token)
    assert refused.status_code == 401 and token not in refused.text


def test_a_held_store_goes_to_one_owner_and_only_to_a_call_selecting_the_same_state(
        anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    gate = Gatekeeper(env=anvil_env, cwd=root)
    held = gate.admit(None, hold=True).held
    assert held is not None and gate.admit(None).held is None  # kept only when asked
    store = held.take(anvil_env, "/somewhere/else")  # ANVIL_ROOT decides: the directory does not matter
    assert store is not None and held.take(anvil_env, root) is None
    held.release()  # the taker owns it now: releasing does not close it
    assert store.conn.execute("SELECT 1").fetchone()[0] == 1
    store.close()

    other = gate.admit(None, hold=True).held
    assert other is not None
    assert other.take({**anvil_env, "ANVIL_ROOT": str(root) + "-other"}, root) is None  # another state: not given
    assert other.take(anvil_env, root) is None  # and closed, not handed to anyone later


def test_a_gate_holds_at_most_max_held_stores_and_none_for_a_refused_request(
        anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    monkeypatch.setattr(access, "MAX_HELD", 2)
    gate = Gatekeeper(TOKEN, env=anvil_env, cwd=root)
    assert gate.admit("wrong", hold=True).held is None
    first, second, third = (gate.admit(TOKEN, hold=True) for _ in range(3))
    assert all(a.admitted for a in (first, second, third))
    assert first.held is not None and second.held is not None and third.held is None
    first.held.release()
    fourth = gate.admit(TOKEN, hold=True).held
    assert fourth is not None
    for held in (second.held, fourth):
        held.release()


def test_the_call_selects_its_state_as_before_when_its_environment_differs(anvil_env: dict[str, str]) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    location = resolve_state(anvil_env, root)
    held = HeldState(Store.open(location), location_inputs(anvil_env, root))
    elsewhere = {**anvil_env, "ANVIL_HOME": anvil_env["ANVIL_HOME"] + "-elsewhere"}
    with pytest.raises(NotFound) as caught:  # that project is not initialized: the call says so itself
        invoke("list_tasks", {}, env=elsewhere, cwd=root, state=held)
    assert caught.value.code == "not_initialized"
    assert held.take(anvil_env, root) is None  # offered once, refused, closed


def test_only_schemas_that_declare_a_header_are_given_to_the_sdks_header_check() -> None:
    declared = {"type": "object", "properties": {"region": {"type": "string", HEADER_ANNOTATION: "Region"}}}
    plain = {"type": "object", "properties": {"region": {"type": "string"}}}
    assert header_checked_schemas({"a": declared, "b": plain}) == {"a": declared}
    server = build_server(all_operations(), planning=True)
    assert server.get_tool_input_schema is not None
    assert all(server.get_tool_input_schema(op.name) is None for op in all_operations())


def test_a_stray_mcp_param_header_changes_nothing(served: Callable[[], ThreadedUvicorn]) -> None:
    server = served()
    plain = modern_call(server.url, "get_project_status", {})
    stray = modern_call(server.url, "get_project_status", {}, extra_headers={"Mcp-Param-Actor": "someone"})
    assert (stray.status_code, stray.content) == (plain.status_code, plain.content)


@pytest.mark.anyio
async def test_the_sdks_tracing_runs_only_while_a_tracer_provider_is_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    from anvil.mcp.server import TracingWhenConfigured, tracing_configured

    traced: list[Any] = []

    async def inner(ctx: Any, call_next: Any) -> Any:
        traced.append(ctx)
        return await call_next(ctx)

    async def handler(ctx: Any) -> str:
        return f"answered {ctx}"

    wrapped = TracingWhenConfigured(inner)
    assert not tracing_configured()
    assert await wrapped("one", handler) == "answered one" and traced == []
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    assert tracing_configured()
    assert await wrapped("two", handler) == "answered two" and traced == ["two"]
    server = build_server(all_operations())
    assert [type(m) for m in server.middleware] == [TracingWhenConfigured]


@pytest.mark.parametrize(("method", "path", "named", "kept"), [
    ("POST", "/mcp", None, True),  # handshake era: the body says what it is
    ("POST", "/mcp", b"tools/call", True),
    ("POST", "/mcp", b"resources/read", True),
    ("POST", "/mcp", b"tools/list", False),
    ("GET", "/mcp", None, False),
    ("GET", "/sse", None, False),  # a legacy event stream lives for the whole session
    ("POST", "/messages/", None, False),  # its call runs in the stream's session, not in this request
])
def test_only_a_request_that_may_run_an_operation_keeps_its_admissions_store(
        method: str, path: str, named: bytes | None, kept: bool) -> None:
    from anvil.mcp.http_app import _runs_an_operation

    headers = [(b"content-type", b"application/json")] + ([(b"mcp-method", named)] if named else [])
    assert _runs_an_operation({"type": "http", "method": method, "path": path, "headers": headers}) is kept
