"""Resources: tasks, packets and the graph of a real project, listed in pages and read by URI."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from anvil.mcp.server import build_server
from anvil.ops.registry import all_operations
from tests.mcp.projects import build_project, use_project
from tests.mcp.support import FAKE_OPERATIONS, FakeInvoke

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "auto"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The sample project with T001 claimed by agent-1 and submitted for review."""
    return build_project(tmp_path_factory.mktemp("resources"), "submitted")


@pytest.fixture
def project(submitted: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return use_project(submitted, monkeypatch)


@asynccontextmanager
async def connect(era: str, **options: Any) -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with Client(build_server(all_operations(), **options), mode=era, read_timeout_seconds=30) as client:
            yield client


def task_ids() -> list[str]:
    from anvil.ops.invoke import invoke

    return [row["id"] for row in invoke("list_tasks", {"limit": 1000})["tasks"]]


@pytest.mark.parametrize("era", ERAS)
async def test_capabilities_declare_resources_prompts_and_completions_only_when_served(
        era: str, fake_invoke: FakeInvoke, project: dict[str, str]) -> None:
    async with Client(build_server(FAKE_OPERATIONS, fake_invoke), mode=era, read_timeout_seconds=20) as client:
        bare = client.server_capabilities
    async with connect(era) as client:
        full = client.server_capabilities
    assert bare.resources is None and bare.prompts is None and bare.completions is None
    assert bare.logging is not None and full.logging is not None
    assert full.resources is not None and full.prompts is not None and full.completions is not None
    assert full.resources.subscribe is False  # a stateless server has nothing to push


@pytest.mark.parametrize("era", ERAS)
async def test_resource_pages_name_the_graph_and_every_task_once_until_the_cursor_is_null(
        era: str, project: dict[str, str]) -> None:
    uris: list[str] = []
    pages = 0
    async with connect(era, resource_page_size=2) as client:
        cursor: str | None = None
        while True:
            page = await client.list_resources(cursor=cursor)
            pages += 1
            uris += [str(resource.uri) for resource in page.resources]
            assert all(resource.name and resource.mime_type for resource in page.resources)
            cursor = page.next_cursor
            if cursor is None:
                break
    ids = task_ids()
    assert uris == ["anvil://graph", *[f"anvil://tasks/{task_id}" for task_id in ids]]
    assert len(ids) > 4 and pages == math.ceil(len(ids) / 2)


async def test_templates_describe_task_packet_feature_graph_and_bundle(project: dict[str, str]) -> None:
    async with connect("legacy") as client:
        templates = (await client.list_resource_templates()).resource_templates
    assert {(t.uri_template, t.mime_type) for t in templates} == {
        ("anvil://tasks/{task_id}", "application/json"),
        ("anvil://tasks/{task_id}/packet", "text/markdown"),
        ("anvil://features/{feature_id}/graph", "application/json"),
        ("anvil://bundles/{bundle_id}", "application/json"),
        ("anvil://bundles/{bundle_id}/packet", "text/markdown")}


@pytest.mark.parametrize("era", ERAS)
async def test_reading_a_task_gives_its_record_with_the_submitted_evidence(era: str, project: dict[str, str]) -> None:
    async with connect(era) as client:
        result = await client.read_resource("anvil://tasks/T001")
    (content,) = result.contents
    assert isinstance(content, types.TextResourceContents) and content.mime_type == "application/json"
    task = json.loads(content.text)
    assert task["id"] == "T001" and task["status"] == "needs_review"
    assert task["history"]["evidence"][0]["commands_run"] == ["python -m unittest -q tests/test_store.py"]


async def test_reading_a_packet_gives_the_markdown_brief(project: dict[str, str]) -> None:
    async with connect("legacy") as client:
        result = await client.read_resource("anvil://tasks/T002/packet")
        title = json.loads((await client.read_resource("anvil://tasks/T002")).contents[0].text)["title"]
    (content,) = result.contents
    assert isinstance(content, types.TextResourceContents) and content.mime_type == "text/markdown"
    assert content.text.startswith(f"# T002: {title}\n") and "## Acceptance criteria" in content.text


async def test_the_graph_and_a_feature_graph_hold_the_matching_tasks(project: dict[str, str]) -> None:
    async with connect("auto") as client:
        whole = json.loads((await client.read_resource("anvil://graph")).contents[0].text)
        feature = json.loads((await client.read_resource("anvil://features/F001/graph")).contents[0].text)
    assert [node["id"] for node in whole["nodes"]] == task_ids()
    assert feature["nodes"] and all(node["feature_id"] == "F001" for node in feature["nodes"])
    assert len(feature["nodes"]) < len(whole["nodes"])


@pytest.mark.parametrize(("uri", "code"), [("anvil://tasks/T999", "task_not_found"),
                                           ("anvil://tasks/T999/packet", "task_not_found"),
                                           ("anvil://features/F999/graph", "feature_not_found")])
async def test_an_unknown_task_or_feature_is_resource_not_found_with_the_uri_and_code(
        uri: str, code: str, project: dict[str, str]) -> None:
    async with connect("legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.code == -32002
    assert caught.value.data["uri"] == uri and caught.value.data["error"]["code"] == code


@pytest.mark.parametrize("uri", ["anvil://elsewhere", "file:///etc/passwd", "anvil://tasks/T001/packet/x"])
async def test_a_uri_anvil_does_not_serve_is_resource_not_found(uri: str, project: dict[str, str]) -> None:
    async with connect("legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.code == -32002 and "anvil://tasks/{task_id}" in caught.value.message


async def test_a_forged_cursor_is_invalid_params(project: dict[str, str]) -> None:
    async with connect("legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.list_resources(cursor="page-2")
    assert caught.value.code == -32602


async def test_a_project_that_is_not_initialized_lists_no_resources(anvil_env: dict[str, str],
                                                                     tmp_path: Path) -> None:
    async with connect("legacy") as client:
        assert (await client.list_resources()).resources == []
        with pytest.raises(MCPError) as caught:
            await client.read_resource("anvil://graph")
    assert caught.value.data["error"]["code"] == "not_initialized"


# --- the real server processes: stdio and Streamable HTTP ---------------------------------------


async def exercise(client: Client) -> dict[str, Any]:
    """List, read, prompt and complete through ``client``; what came back, for comparison."""
    listed = await client.list_resources()
    packet = (await client.read_resource("anvil://tasks/T001/packet")).contents[0]
    prompt = await client.get_prompt("review_submission", {"task_id": "T001"})
    completion = await client.complete(types.PromptReference(name="review_submission"),
                                       {"name": "task_id", "value": "T00"})
    assert isinstance(packet, types.TextResourceContents)
    return {"uris": [str(r.uri) for r in listed.resources], "packet": packet.text,
            "prompt": [m.model_dump(mode="json") for m in prompt.messages], "ids": completion.completion.values}


async def test_stdio_and_http_servers_serve_the_same_resources_prompts_and_completions(
        project: dict[str, str], serve_app: Any) -> None:
    """The stdio server process in the handshake era, the HTTP app (bearer token required) in the
    2026-07-28 era; in-process tests cover both eras on each path, and the conformance and board tests
    run the HTTP server as a process."""
    import sys

    import httpx2
    from mcp import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    from anvil.mcp.http_app import build_http_app
    from tests.conftest import anvil_subprocess_env
    from tests.mcp.support import TOKEN

    async with connect("legacy") as client:
        expected = await exercise(client)
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "anvil.mcp"], env=anvil_subprocess_env(project),
                                  cwd=project["ANVIL_ROOT"])
    with anyio.fail_after(60):
        async with Client(stdio, mode="legacy", read_timeout_seconds=60) as client:
            assert await exercise(client) == expected
    app = build_http_app(build_server(all_operations()), token=TOKEN, state_env=project,
                         state_cwd=project["ANVIL_ROOT"])
    server = serve_app(app)
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
            async with Client(streamable_http_client(server.url, http_client=http), mode="auto",
                              read_timeout_seconds=30) as client:
                assert await exercise(client) == expected


async def test_a_bundle_reads_as_its_record_and_its_packet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_project(build_project(tmp_path, "bundle_claimed"), monkeypatch)
    async with connect("legacy") as client:
        record = (await client.read_resource("anvil://bundles/B1")).contents[0]
        packet = (await client.read_resource("anvil://bundles/B1/packet")).contents[0]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("anvil://bundles/B9")
    assert json.loads(record.text)["claim"]["claimed_by"] == "agent-1"  # type: ignore[union-attr]
    assert packet.mime_type == "text/markdown" and packet.text.startswith("# Bundle B1")  # type: ignore[union-attr]
    assert missing.value.code == -32002 and missing.value.data["error"]["code"] == "bundle_not_found"


async def test_a_state_error_sent_to_an_http_caller_names_no_database_but_a_local_caller_sees_it() -> None:
    from anvil.engine.errors import StateIncompatible
    from anvil.mcp.resources import rpc_error

    dsn = "postgresql://anvil_user@db.internal:5433/team_state"
    error = StateIncompatible(f"cannot connect to {dsn}", code="database_unavailable", details={"url": dsn})
    remote = rpc_error(error, "anvil://graph", remote=True)
    local = rpc_error(error, "anvil://graph")
    assert dsn not in remote.error.message and dsn not in json.dumps(remote.error.data)
    assert remote.error.data["error"]["code"] == "database_unavailable"
    assert remote.error.data["error"]["exit_code"] == 8
    assert dsn in local.error.message
