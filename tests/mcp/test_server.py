"""The MCP server generated from the registry, driven by the SDK's own client.

In-process tests use fake operations and a fake ``invoke`` over both protocol eras (the handshake
era through an in-memory stream, the 2026-07-28 era through the SDK's direct dispatcher). The
server processes are tested in ``test_serve.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.lowlevel.server import Server

from anvil import __version__
from anvil.engine.errors import InternalError, NotFound, Refused, from_wire
from anvil.mcp.schema import input_schema, output_schema
from anvil.mcp.server import build_server, planning_enabled
from tests.mcp.support import FAKE_OPERATIONS, FakeInvoke

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "auto"]  # "auto" reaches the in-process server in the 2026-07-28 era


@asynccontextmanager
async def connect(server: Server[Any], era: str, **options: Any) -> AsyncIterator[Client]:
    with anyio.fail_after(20):
        async with Client(server, mode=era, read_timeout_seconds=20, **options) as client:
            yield client


def error_document(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error is True
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    document: dict[str, Any] = json.loads(block.text)
    return document


@pytest.mark.parametrize("era", ERAS)
async def test_the_server_reports_anvil_as_its_name_and_version(era: str, fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("anvil", __version__)


@pytest.mark.parametrize("era", ERAS)
async def test_only_execution_tools_are_listed_by_default(era: str, fake_invoke: FakeInvoke,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANVIL_MCP_PLANNING", raising=False)
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == ["echo", "wipe"]


@pytest.mark.parametrize("value", ["1", "true", " YES ", "On"])
async def test_planning_env_lists_every_tool(value: str, fake_invoke: FakeInvoke,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_MCP_PLANNING", value)
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == ["echo", "plan_things", "wipe"]


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "maybe"])
def test_other_planning_env_values_keep_planning_tools_hidden(value: str) -> None:
    assert planning_enabled({"ANVIL_MCP_PLANNING": value}) is False


async def test_the_planning_argument_overrides_the_environment(fake_invoke: FakeInvoke,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_MCP_PLANNING", "1")
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke, planning=False), "legacy") as client:
        assert "plan_things" not in [tool.name for tool in (await client.list_tools()).tools]


async def test_each_tool_carries_its_schemas_and_effect_annotations(fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke, planning=True), "legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for op in FAKE_OPERATIONS:
        tool = tools[op.name]
        assert tool.description == op.description
        assert tool.input_schema == input_schema(op)
        assert tool.output_schema == output_schema(op)
    echo, plan, wipe = tools["echo"].annotations, tools["plan_things"].annotations, tools["wipe"].annotations
    assert echo is not None and plan is not None and wipe is not None
    assert (echo.read_only_hint, echo.idempotent_hint, echo.destructive_hint) == (True, None, None)
    assert (plan.read_only_hint, plan.destructive_hint) == (None, False), "readOnlyHint false is the default"
    assert (wipe.read_only_hint, wipe.destructive_hint) == (None, True)


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_returns_compact_structured_output_with_a_short_text_copy(era: str,
                                                                              fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        result = await client.call_tool("echo", {"text": "ab", "times": 2})
        as_json = await client.call_tool("echo", {"text": "ab", "times": 2}, meta={"anvil/text": "json"})
        full = await client.call_tool("echo", {"text": "ab", "times": 2}, meta={"anvil/result": "full"})
    assert result.is_error is False
    assert result.structured_content == {"text": "abab"}, "nulls are left out"
    block = result.content[0]
    assert isinstance(block, types.TextContent) and block.text == "text: abab."
    assert as_json.structured_content == {"text": "abab"} and as_json.content[0].text == '{"text":"abab"}'  # type: ignore[union-attr]
    assert full.structured_content == {"text": "abab", "sampled": None}
    assert full.content[0].text == '{"text":"abab","sampled":null}'  # type: ignore[union-attr]


async def test_a_server_told_to_send_json_text_or_full_results_does_so_for_every_call(
        fake_invoke: FakeInvoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_MCP_TEXT", "json")
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        texted = await client.call_tool("echo", {"text": "ab"})
        human = await client.call_tool("echo", {"text": "ab"}, meta={"anvil/text": "human"})
    assert texted.content[0].text == '{"text":"ab"}' and human.content[0].text == "text: ab."  # type: ignore[union-attr]
    monkeypatch.setenv("ANVIL_MCP_RESULT", "full")
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        full = await client.call_tool("echo", {"text": "ab"})
    assert full.structured_content == {"text": "ab", "sampled": None}


async def test_invoke_receives_validated_input_with_defaults_in_a_worker_thread(fake_invoke: FakeInvoke) -> None:
    loop_thread = threading.get_ident()
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        await client.call_tool("echo", {"text": "x"})
    assert fake_invoke.calls == [("echo", {"cwd": None, "text": "x", "times": 1}, None)]
    assert fake_invoke.threads[0] != loop_thread


async def test_the_event_loop_keeps_serving_while_a_call_runs(fake_invoke: FakeInvoke) -> None:
    release = threading.Event()
    fake_invoke.behaviour["echo"] = lambda args, sampler: {"text": "done"} if release.wait(10) else {"text": "late"}
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        outcome: dict[str, Any] = {}

        async def call() -> None:
            outcome["result"] = await client.call_tool("echo", {"text": "x"})

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            with anyio.fail_after(5):
                listed = await client.list_tools()  # answered while the call is still blocked
            assert listed.tools and "result" not in outcome
            release.set()
    assert outcome["result"].structured_content == {"text": "done"}


@pytest.mark.parametrize("era", ERAS)
async def test_invalid_arguments_name_the_fields_but_never_echo_values(era: str, fake_invoke: FakeInvoke) -> None:
    secret = "S3CRET-VALUE-" + "x" * 60
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        result = await client.call_tool("echo", {"text": secret, "times": "many", "surprise": secret})
    document = error_document(result)
    error = document["error"]
    assert (error["code"], error["exit_code"]) == ("invalid_input", 2)
    assert "text" in error["message"] and "times" in error["message"] and "surprise" in error["message"]
    assert secret not in json.dumps(document)
    assert fake_invoke.calls == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_hidden_tool_fails_exactly_like_an_unknown_tool(era: str, fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        hidden = await client.call_tool("plan_things", {"title": "t"})
        unknown = await client.call_tool("no_such_tool", {"title": "t"})
    hidden_doc, unknown_doc = error_document(hidden), error_document(unknown)
    assert hidden_doc["error"]["code"] == unknown_doc["error"]["code"] == "unknown_tool"
    assert hidden_doc["error"]["message"].replace("plan_things", "X") == \
        unknown_doc["error"]["message"].replace("no_such_tool", "X")
    assert fake_invoke.calls == []


@pytest.mark.parametrize("era", ERAS)
async def test_an_anvil_error_travels_as_a_document_that_rebuilds_the_same_error(
        era: str, fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        result = await client.call_tool("wipe", {"confirm": True})
    assert result.structured_content is None  # TypeScript clients would validate it against the output schema
    rebuilt = from_wire(error_document(result))
    assert isinstance(rebuilt, Refused)
    assert (rebuilt.code, rebuilt.message, rebuilt.details, rebuilt.exit_code) == \
        ("wipe_refused", "wiping is refused here", {"why": "test"}, 5)


@pytest.mark.parametrize("era", ERAS)
async def test_an_unexpected_exception_becomes_an_internal_error_without_details(
        era: str, fake_invoke: FakeInvoke, capsys: pytest.CaptureFixture[str]) -> None:
    def explode(args: dict[str, Any], sampler: Any) -> dict[str, Any]:
        raise RuntimeError("boom: secret internals /etc/passwd")

    fake_invoke.behaviour["echo"] = explode
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        result = await client.call_tool("echo", {"text": "x"})
    text = json.dumps(error_document(result))
    rebuilt = from_wire(error_document(result))
    assert isinstance(rebuilt, InternalError) and rebuilt.exit_code == 1
    assert "boom" not in text and "Traceback" not in text and "passwd" not in text


async def test_an_output_that_breaks_the_output_model_is_an_internal_error(fake_invoke: FakeInvoke) -> None:
    fake_invoke.behaviour["echo"] = lambda args, sampler: {"text": 42, "extra": "no"}
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        result = await client.call_tool("echo", {"text": "x"})
    assert isinstance(from_wire(error_document(result)), InternalError)


async def test_a_not_found_error_keeps_its_exit_code(fake_invoke: FakeInvoke) -> None:
    def missing(args: dict[str, Any], sampler: Any) -> dict[str, Any]:
        raise NotFound("no such task", code="task_not_found")

    fake_invoke.behaviour["echo"] = missing
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy") as client:
        rebuilt = from_wire(error_document(await client.call_tool("echo", {"text": "x"})))
    assert isinstance(rebuilt, NotFound) and (rebuilt.code, rebuilt.exit_code) == ("task_not_found", 6)


async def test_a_client_that_can_sample_lends_its_model_to_the_operation(fake_invoke: FakeInvoke) -> None:
    prompts: list[tuple[str, int]] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        message = params.messages[0].content
        assert isinstance(message, types.TextContent)
        prompts.append((message.text, params.max_tokens))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="a summary"), model="m")

    fake_invoke.behaviour["echo"] = lambda args, sampler: {"text": args["text"], "sampled": sampler("Summarize", 64)}
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), "legacy", sampling_callback=sample) as client:
        result = await client.call_tool("echo", {"text": "x"})
    assert result.structured_content == {"text": "x", "sampled": "a summary"}
    assert prompts == [("Summarize", 64)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_sampling_gets_no_sampler(era: str, fake_invoke: FakeInvoke) -> None:
    async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
        await client.call_tool("echo", {"text": "x"})
    assert fake_invoke.calls[0][2] is None


def test_two_operations_with_one_name_are_refused(fake_invoke: FakeInvoke) -> None:
    with pytest.raises(ValueError):
        build_server([FAKE_OPERATIONS[0], FAKE_OPERATIONS[0]], fake_invoke)


async def test_a_bug_while_reporting_an_error_is_still_one_internal_error_and_one_log_line(
        fake_invoke: FakeInvoke, caplog: pytest.LogCaptureFixture) -> None:
    def unreportable(args: dict[str, Any], sampler: Any) -> dict[str, Any]:
        raise Refused("refused with details nobody can encode", code="wipe_refused", details={"when": object()})

    fake_invoke.behaviour["echo"] = unreportable
    for era in ERAS:
        caplog.clear()
        async with connect(build_server(FAKE_OPERATIONS, fake_invoke), era) as client:
            result = await client.call_tool("echo", {"text": "x"})
        document = error_document(result)
        assert document["error"]["code"] == "internal" and document["error"]["exit_code"] == 1
        assert "encode" not in json.dumps(document) and "Traceback" not in json.dumps(document)
        records = [r for r in caplog.records if r.name == "anvil.mcp.server"]
        assert [r.getMessage() for r in records] == ["tool 'echo' failed unexpectedly"], era


async def test_a_waiting_call_blocks_neither_the_server_nor_other_calls_and_wakes_on_the_write(
        anvil_env: dict[str, str]) -> None:
    import functools
    from pathlib import Path

    from anvil.engine.storage.paths import resolve_state
    from anvil.ops.invoke import invoke
    from anvil.ops.registry import all_operations
    from anvil.ops.scenarios import build_scenario

    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    for task, agent in (("T001", "agent-1"), ("T002", "agent-2")):
        invoke("claim_task", {"task_id": task, "actor": agent}, env=anvil_env, cwd=root)
    waiters = resolve_state(anvil_env, root).state_dir / "waiters"
    server = build_server(all_operations(), functools.partial(invoke, env=anvil_env, cwd=root))
    answers: dict[str, Any] = {}

    async def wait_for_a_task(client: Client) -> None:
        answers["next"] = await client.call_tool("get_next_task", {"wait_seconds": 120})

    async with connect(server, "legacy") as client, anyio.create_task_group() as group:
        group.start_soon(wait_for_a_task, client)
        with anyio.fail_after(60):
            while not (waiters.is_dir() and any(p.suffix == ".fifo" for p in Path(waiters).iterdir())):
                await anyio.sleep(0.02)  # bounded: until the call sleeps on its pipe
            status = await client.call_tool("get_project_status", {})  # answered while the other call waits
            assert status.is_error is False and "next" not in answers
            await client.call_tool("release_task", {"task_id": "T002", "actor": "agent-2"})
            while "next" not in answers:
                await anyio.sleep(0.02)
    assert answers["next"].structured_content["task"]["id"] == "T002"


async def test_wait_seconds_is_capped_under_the_clients_timeout(fake_invoke: FakeInvoke) -> None:
    from anvil.mcp.schema import shared_conventions
    from anvil.ops.registry import get_operation

    schema = input_schema(get_operation("get_next_task"))
    assert schema["properties"]["wait_seconds"]["maximum"] == 300
    assert "wait_seconds: when nothing is claimable, block up to this many seconds (at most 300" in \
        shared_conventions()
