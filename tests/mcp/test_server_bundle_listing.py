"""The bundle tools are listed only once the project has a bundle: the call that creates the first one
announces the change with ``notifications/tools/list_changed``, a tool not yet listed can still be called
by name, and ``ANVIL_MCP_BUNDLES`` lists them from the start."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client

from anvil.mcp.server import FIRST_BUNDLE_TOOL, build_server, is_bundle_tool
from anvil.ops.invoke import invoke
from anvil.ops.lookup import has_bundles
from anvil.ops.registry import all_operations
from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.projects import build_project, use_project
from tests.mcp.support import ServerProcess, free_port, wait_for_port

pytestmark = pytest.mark.anyio
BUNDLE_TOOLS = frozenset(op.name for op in all_operations() if is_bundle_tool(op))
NEW_BUNDLE = {"bundle_id": "B1", "task_ids": ["T001", "T002"], "coordinator": "agent-1", "actor": "lead"}


class Notifications:
    """A client message handler keeping the notifications the server sends."""

    def __init__(self) -> None:
        self.received: list[Any] = []

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ServerNotification):  # type: ignore[arg-type]
            self.received.append(message)
        await anyio.lowlevel.checkpoint()

    def tools_changed(self) -> int:
        return sum(isinstance(note, types.ToolListChangedNotification) for note in self.received)


async def names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.fixture
def ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The "ready" sample (tasks, no bundle), selected by this process for in-process servers."""
    return use_project(build_project(tmp_path, "ready"), monkeypatch)


def test_the_bundle_tools_are_every_bundle_operation_but_the_one_that_creates_a_bundle() -> None:
    assert len(BUNDLE_TOOLS) == 10 and FIRST_BUNDLE_TOOL not in BUNDLE_TOOLS
    assert {"claim_bundle", "list_bundles", "get_bundle", "submit_bundle_progress"} <= BUNDLE_TOOLS


def test_has_bundles_reads_the_project_and_an_uninitialized_directory_has_none(
        ready: dict[str, str], tmp_path: Path) -> None:
    assert not has_bundles()
    invoke("create_bundle", NEW_BUNDLE, env=ready, cwd=ready["ANVIL_ROOT"])
    assert has_bundles()
    bare = tmp_path / "bare"
    bare.mkdir()
    assert not has_bundles(env={"ANVIL_HOME": str(tmp_path / "other-home"), "ANVIL_ROOT": str(bare)}, cwd=str(bare))


async def test_the_first_bundle_lists_the_bundle_tools_and_announces_it_in_process(ready: dict[str, str]) -> None:
    notes = Notifications()
    server = build_server(all_operations(), planning=True, bundles=False)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=30, message_handler=notes) as client:
            tools = client.server_capabilities.tools
            assert tools is not None and tools.list_changed
            before = await names(client)
            assert FIRST_BUNDLE_TOOL in before and not before & BUNDLE_TOOLS
            unlisted = await client.call_tool("list_bundles", {})  # by name, before it is listed
            assert not unlisted.is_error and (unlisted.structured_content or {}).get("bundles", []) == []
            assert notes.tools_changed() == 0
            created = await client.call_tool(FIRST_BUNDLE_TOOL, NEW_BUNDLE)
            assert not created.is_error
            assert notes.tools_changed() == 1
            assert BUNDLE_TOOLS <= await names(client)
            second = await client.call_tool(FIRST_BUNDLE_TOOL, {**NEW_BUNDLE, "bundle_id": "B2", "task_ids": ["T003"]})
            assert not second.is_error and notes.tools_changed() == 1  # only the first bundle changes the list


async def test_a_failed_create_bundle_announces_nothing_and_lists_nothing_new(ready: dict[str, str]) -> None:
    notes = Notifications()
    with anyio.fail_after(60):
        async with Client(build_server(all_operations(), planning=True, bundles=False), mode="legacy",
                          read_timeout_seconds=30, message_handler=notes) as client:
            failed = await client.call_tool(FIRST_BUNDLE_TOOL, {**NEW_BUNDLE, "task_ids": ["T999"]})
            assert failed.is_error and notes.tools_changed() == 0
            assert not await names(client) & BUNDLE_TOOLS


async def test_anvil_mcp_bundles_lists_the_bundle_tools_before_any_bundle(
        ready: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_MCP_BUNDLES", "1")
    with anyio.fail_after(60):
        async with Client(build_server(all_operations()), mode="legacy", read_timeout_seconds=30) as client:
            assert BUNDLE_TOOLS <= await names(client)


async def test_a_project_that_already_has_a_bundle_lists_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_project(build_project(tmp_path, "bundle_claimed"), monkeypatch)
    with anyio.fail_after(60):
        async with Client(build_server(all_operations()), mode="legacy", read_timeout_seconds=30) as client:
            assert BUNDLE_TOOLS <= await names(client)


async def test_a_stdio_server_process_announces_the_first_bundle(tmp_path: Path) -> None:
    env = anvil_subprocess_env({**build_project(tmp_path, "ready"), "ANVIL_MCP_PLANNING": "1"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp"], env=env, cwd=env["ANVIL_ROOT"])
    notes = Notifications()
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", read_timeout_seconds=60, message_handler=notes) as client:
            assert not await names(client) & BUNDLE_TOOLS
            assert not (await client.call_tool(FIRST_BUNDLE_TOOL, NEW_BUNDLE)).is_error
            assert notes.tools_changed() == 1 and BUNDLE_TOOLS <= await names(client)


@pytest.fixture
def lead_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The "ready" sample over real HTTP, and a lead's per-agent token."""
    env = anvil_subprocess_env(build_project(tmp_path, "ready"))
    root = env["ANVIL_ROOT"]
    token = invoke("add_token", {"name": "lead", "role": "lead"}, env=env, cwd=root)["token"]
    port = free_port()
    log = tmp_path / "server.log"
    process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=env, cwd=root, stdout=log)
    server = ServerProcess(process, port, log)
    try:
        wait_for_port(port, process=process)
        yield server.url, token
    finally:
        assert token not in server.stop()


async def test_over_http_the_bundle_tools_appear_on_the_next_list_after_the_first_bundle(
        lead_server: tuple[str, str]) -> None:
    url, token = lead_server
    with anyio.fail_after(120):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="auto",
                              read_timeout_seconds=30) as client:
                before = await names(client)
                # create_bundle is a planning tool: listed in planning mode only, called by name with a lead token.
                assert FIRST_BUNDLE_TOOL not in before and not before & BUNDLE_TOOLS
                assert not (await client.call_tool(FIRST_BUNDLE_TOOL, {**NEW_BUNDLE, "actor": None})).is_error
                assert BUNDLE_TOOLS <= await names(client)
