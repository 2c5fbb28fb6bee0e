"""Prompts for the agent loop, built from a real project's state with the packet embedded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from anvil.mcp.server import build_server
from anvil.ops.registry import all_operations
from tests.mcp.projects import build_project, use_project

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def submitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return build_project(tmp_path_factory.mktemp("prompts"), "submitted")


@pytest.fixture
def project(submitted: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return use_project(submitted, monkeypatch)


@asynccontextmanager
async def connect(era: str = "legacy") -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with Client(build_server(all_operations()), mode=era, read_timeout_seconds=30) as client:
            yield client


def embedded(message: types.PromptMessage) -> types.TextResourceContents:
    assert isinstance(message.content, types.EmbeddedResource)
    resource = message.content.resource
    assert isinstance(resource, types.TextResourceContents)
    return resource


def text_of(message: types.PromptMessage) -> str:
    assert isinstance(message.content, types.TextContent)
    return message.content.text


async def test_both_prompts_are_listed_with_descriptions_and_arguments(project: dict[str, str]) -> None:
    async with connect() as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"work_next_task", "review_submission"}
    assert all(p.description for p in prompts.values())
    assert {(a.name, a.required) for a in prompts["review_submission"].arguments or []} == {("task_id", True)}
    assert {a.name for a in prompts["work_next_task"].arguments or []} == {"actor", "task_id"}


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_work_next_task_picks_the_offered_task_and_embeds_its_packet(era: str, project: dict[str, str]) -> None:
    from anvil.ops.invoke import invoke

    offered = invoke("get_next_task", {"actor": "agent-2"})["task"]["id"]
    packet = invoke("generate_work_packet", {"task_id": offered})["content"]
    async with connect(era) as client:
        prompt = await client.get_prompt("work_next_task", {"actor": "agent-2"})
    instructions, attachment = prompt.messages
    assert offered in text_of(instructions) and 'actor "agent-2"' in text_of(instructions)
    for tool in ("claim_task", "renew_claim", "submit_completion_evidence"):
        assert tool in text_of(instructions)
    resource = embedded(attachment)
    assert (str(resource.uri), resource.mime_type) == (f"anvil://tasks/{offered}/packet", "text/markdown")
    assert resource.text == packet


async def test_work_next_task_takes_a_named_task(project: dict[str, str]) -> None:
    async with connect() as client:
        prompt = await client.get_prompt("work_next_task", {"task_id": "t003"})
    assert str(embedded(prompt.messages[1]).uri) == "anvil://tasks/T003/packet"
    assert "your agent name as actor" in text_of(prompt.messages[0])


async def test_work_next_task_says_so_when_nothing_is_ready(anvil_env: dict[str, str]) -> None:
    from anvil.ops.scenarios import build_scenario

    build_scenario("initialized", anvil_env, anvil_env["ANVIL_ROOT"])
    async with connect() as client:
        prompt = await client.get_prompt("work_next_task", {})
    (message,) = prompt.messages
    assert "no task to work on" in text_of(message) and "get_next_task" in text_of(message)


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_review_submission_embeds_the_packet_and_the_evidence(era: str, project: dict[str, str]) -> None:
    async with connect(era) as client:
        prompt = await client.get_prompt("review_submission", {"task_id": "T001"})
    instructions, packet, record = prompt.messages
    assert "apply_review_decision" in text_of(instructions) and "Note:" not in text_of(instructions)
    assert str(embedded(packet).uri) == "anvil://tasks/T001/packet"
    task = json.loads(embedded(record).text)
    assert task["id"] == "T001" and task["history"]["evidence"][0]["actor"] == "agent-1"


async def test_review_submission_notes_a_task_that_is_not_in_review(project: dict[str, str]) -> None:
    async with connect() as client:
        prompt = await client.get_prompt("review_submission", {"task_id": "T002"})
    assert "Note: only a task in needs_review" in text_of(prompt.messages[0])


async def test_review_submission_without_a_task_or_with_an_unknown_one_is_an_error(project: dict[str, str]) -> None:
    async with connect() as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("review_submission", {})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("review_submission", {"task_id": "T999"})
        with pytest.raises(MCPError) as no_prompt:
            await client.get_prompt("write_my_code", {})
    assert missing.value.code == -32602 and "task_id" in missing.value.message
    assert unknown.value.code == -32002 and unknown.value.data["error"]["code"] == "task_not_found"
    assert no_prompt.value.code == -32602


async def test_item_9_every_tool_a_prompt_names_is_listed_on_the_default_surface(project: dict[str, str]) -> None:
    """Issue 24 item 9: a reviewer over stdio (no planning surface) reads the review prompt and can call
    every tool it names: apply_review_decision is on the default surface, and the review goes through."""
    import re

    from anvil.ops.registry import all_operations as operations

    every_tool = {op.name for op in operations()}
    async with connect() as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        named: set[str] = set()
        for name, arguments in (("review_submission", {"task_id": "T001"}), ("work_next_task", {})):
            prompt = await client.get_prompt(name, arguments)
            for message in prompt.messages:
                if isinstance(message.content, types.TextContent):
                    named |= set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", message.content.text)) & every_tool
        assert "apply_review_decision" in named and named <= listed, named - listed
        decided = await client.call_tool("apply_review_decision", {"task_id": "T001", "approve": False,
                                                                   "actor": "lead", "reason": "redo", "dry_run": True})
    assert decided.is_error is False and decided.structured_content["decision"] == "rejected"  # type: ignore[index]
