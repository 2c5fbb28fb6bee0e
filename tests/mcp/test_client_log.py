"""Logging: each tool call is logged (operation, actor, outcome) to the server log and, at the level
the client asked for, to the client; never an argument value."""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from anvil.mcp.server import build_server
from anvil.ops.registry import all_operations
from tests.mcp.projects import build_project, use_project

pytestmark = pytest.mark.anyio
SECRET = "sk-live-4f9a7c2e-do-not-log"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def claimed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """T001 claimed by agent-1."""
    return build_project(tmp_path_factory.mktemp("client-log"), "claimed")


@pytest.fixture
def project(claimed: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return use_project(claimed, monkeypatch)


@asynccontextmanager
async def connect(era: str, received: list[types.LoggingMessageNotificationParams],
                  **options: Any) -> AsyncIterator[Client]:
    async def collect(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(30):
        async with Client(build_server(all_operations()), mode=era, read_timeout_seconds=30,
                          logging_callback=collect, **options) as client:
            yield client


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    with warnings.catch_warnings():  # the SDK flags the handshake-era logging capability as deprecated
        warnings.simplefilter("ignore")
        await client.set_logging_level(level)


async def test_nothing_is_sent_until_the_client_sets_a_level_then_calls_are_logged(project: dict[str, str]) -> None:
    received: list[types.LoggingMessageNotificationParams] = []
    async with connect("legacy", received) as client:
        await client.call_tool("get_task", {"task_id": "T001"})
        assert received == []
        await set_level(client, "info")
        await client.call_tool("get_task", {"task_id": "T001"})
        await client.call_tool("renew_claim", {"task_id": "T002", "actor": "agent-9"})
    assert [(m.level, m.logger) for m in received] == [("info", "anvil"), ("warning", "anvil")]
    ok, refused = (m.data for m in received)
    assert {k: ok[k] for k in ("operation", "actor", "outcome")} == {"operation": "get_task", "actor": None,
                                                                     "outcome": "ok"}
    assert {k: refused[k] for k in ("operation", "actor", "outcome")} == {"operation": "renew_claim",
                                                                          "actor": "agent-9",
                                                                          "outcome": "no_active_claim"}
    assert set(ok) == {"operation", "actor", "outcome", "duration_ms"}


async def test_a_higher_level_drops_successful_calls(project: dict[str, str]) -> None:
    received: list[types.LoggingMessageNotificationParams] = []
    async with connect("legacy", received) as client:
        await set_level(client, "warning")
        await client.call_tool("get_task", {"task_id": "T001"})
        await client.call_tool("get_task", {"task_id": "T999"})
    assert [(m.level, m.data["outcome"]) for m in received] == [("warning", "task_not_found")]


async def test_a_2026_client_asks_per_request_and_gets_what_it_asked_for(project: dict[str, str]) -> None:
    quiet: list[types.LoggingMessageNotificationParams] = []
    chatty: list[types.LoggingMessageNotificationParams] = []
    async with connect("auto", quiet) as client:
        await client.call_tool("get_task", {"task_id": "T001"})
    async with connect("auto", chatty, log_level="debug") as client:
        await client.call_tool("get_task", {"task_id": "T001"})
    assert quiet == []
    assert [(m.level, m.data["operation"]) for m in chatty] == [("info", "get_task")]


async def test_no_argument_value_reaches_either_log(project: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    received: list[types.LoggingMessageNotificationParams] = []
    caplog.set_level(logging.INFO, logger="anvil.mcp.calls")
    async with connect("legacy", received) as client:
        await set_level(client, "debug")
        result = await client.call_tool("submit_progress", {"task_id": "T001", "actor": "agent-1", "notes": SECRET,
                                                            "idempotency_key": SECRET, "detail": SECRET})
    assert result.is_error is False
    assert received and received[0].data["outcome"] == "ok" and received[0].data["actor"] == "agent-1"
    assert SECRET not in repr([m.model_dump() for m in received])
    lines = [record.getMessage() for record in caplog.records if record.name == "anvil.mcp.calls"]
    assert lines and lines[0].startswith("tool submit_progress actor='agent-1' outcome=ok")
    assert SECRET not in caplog.text


async def test_item_14_log_messages_reach_a_streamable_http_client_that_asks(project: dict[str, str],
                                                                              serve_app: Any) -> None:
    """Issue 24 item 14: over stateless Streamable HTTP the SDK client (default negotiation, 2026-07-28)
    that asks for a level gets each call's log line; one that does not ask gets plain JSON replies."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from anvil.mcp.http_app import build_http_app

    served = serve_app(build_http_app(build_server(all_operations())))
    asked: list[types.LoggingMessageNotificationParams] = []
    quiet: list[types.LoggingMessageNotificationParams] = []
    for received, options in ((asked, {"log_level": "info"}), (quiet, {})):
        async def collect(params: types.LoggingMessageNotificationParams, into: list[Any] = received) -> None:
            into.append(params)

        with anyio.fail_after(30):
            async with httpx2.AsyncClient(timeout=30) as http, Client(
                    streamable_http_client(served.url, http_client=http), read_timeout_seconds=30,
                    logging_callback=collect, **options) as client:
                ok = await client.call_tool("get_task", {"task_id": "T001"})
                refused = await client.call_tool("get_task", {"task_id": "T999"})
        assert ok.is_error is False and refused.is_error is True
    assert [(m.level, m.data["operation"], m.data["outcome"]) for m in asked] == [
        ("info", "get_task", "ok"), ("warning", "get_task", "task_not_found")]
    assert quiet == []


def test_item_14_a_request_that_asks_for_no_log_still_gets_a_json_reply(project: dict[str, str],
                                                                       serve_app: Any) -> None:
    import httpx2

    from anvil.mcp.http_app import build_http_app

    served = serve_app(build_http_app(build_server(all_operations())))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_task"}
    for extra, kind in (({}, "application/json"), ({"io.modelcontextprotocol/logLevel": "info"},
                                                   "text/event-stream")):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "get_task", "arguments": {"task_id": "T001"}, "_meta": {**meta, **extra}}}
        response = httpx2.post(served.url, json=body, headers=headers, timeout=30)
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind), response.text
        assert '"T001"' in response.text
