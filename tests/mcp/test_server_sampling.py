"""plan_tasks borrows the MCP client's own model (sampling) to draft tasks a PRD lacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from anvil.mcp.http_app import build_http_app
from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from tests.mcp.support import ThreadedUvicorn

pytestmark = pytest.mark.anyio

FEATURES_ONLY = """# Project: Notes

## Summary

A note-taking CLI for a solo developer who wants plain files.

## Requirements

- R001: A user can add a note from the command line.

## Features

### F001: Adding notes

Append a note with a timestamp to the notes file.

**Requirements:** R001
"""

DRAFTED = """Here are the tasks.

```markdown
## Tasks

### T001: Append notes to the file

**Feature:** F001
**Priority:** high
**Type:** feature
**Likely files:** notes/cli.py
**Dependencies:** none
**Acceptance criteria:**
- `notes add hello` appends a line ending in hello.
**Verification:**
- `python -m pytest -q tests/test_cli.py`
```
"""


@pytest.fixture
def features_only(anvil_env: dict[str, str]) -> dict[str, str]:
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "prd.md").write_text(FEATURES_ONLY, encoding="utf-8")
    for name, args in (("init_project", {}), ("parse_prd", {"file": "prd.md"}), ("review_prd", {"actor": "lead"}),
                       ("review_prd", {"actor": "lead", "approve": True})):
        invoke(name, args, env=anvil_env, cwd=str(root))
    return anvil_env


async def plan_with(sampling: Any, mode: str = "legacy") -> dict[str, Any]:
    server = build_server(all_operations(), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode=mode, read_timeout_seconds=60, sampling_callback=sampling) as client:
            result = await client.call_tool("plan_tasks", {})
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def drafting(prompts: list[str]) -> Any:
    """A sampling callback that records each prompt and answers with the drafted tasks."""
    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        assert isinstance(content, types.TextContent)
        prompts.append(content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=DRAFTED), model="m")

    return sample


def error_code(result: Any) -> str:
    assert result.is_error is True, result.structured_content
    return str(json.loads(result.content[0].text)["error"]["code"])


async def test_a_client_that_samples_drafts_the_missing_tasks(features_only: dict[str, str]) -> None:
    prompts: list[str] = []
    planned = await plan_with(drafting(prompts))
    assert (planned["llm_generated"], planned["task_count"], planned["added"]) == (True, 1, ["T001"])
    assert "## Tasks" in prompts[0] and "F001" in prompts[0]
    status = invoke("get_project_status", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])
    assert status["prd_status"] == "draft", "drafted tasks change the PRD, so it needs approval again"
    source = invoke("find_decisions", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])
    assert source["prd_id"] == "default"


async def test_item_1_a_client_on_the_default_negotiated_revision_is_asked_to_sample(
        features_only: dict[str, str]) -> None:
    """Issue 24 item 1: the SDK client's default negotiation (2026-07-28, where a server sends no
    request of its own) is asked through an input_required result, and its retry plans the draft."""
    prompts: list[str] = []
    planned = await plan_with(drafting(prompts), mode="auto")
    assert (planned["llm_generated"], planned["llm_provider"], planned["added"]) == (True, "mcp_sampling", ["T001"])
    assert len(prompts) == 1 and "F001" in prompts[0]


async def test_item_1_a_default_client_over_http_is_asked_to_sample(features_only: dict[str, str]) -> None:
    """Issue 24 item 1: over Streamable HTTP (stateless, so no server-to-client request can land) the
    default client is asked in the result and drafts the tasks."""
    prompts: list[str] = []
    app = build_http_app(build_server(all_operations(), planning=True))
    with ThreadedUvicorn(app) as served, anyio.fail_after(60):
        async with Client(served.url, read_timeout_seconds=60, sampling_callback=drafting(prompts)) as client:
            result = await client.call_tool("plan_tasks", {"use_llm": True})
    assert result.is_error is False, result.content
    assert result.structured_content is not None and result.structured_content["added"] == ["T001"]
    assert len(prompts) == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_item_1_a_client_that_cannot_sample_is_refused_and_nothing_changes(
        features_only: dict[str, str], mode: str) -> None:
    """Issue 24 item 1: without the sampling capability, use_llm cannot draft: the call is refused
    (no_tasks), as the reference refuses when its backstop has no provider, instead of planning 0 tasks."""
    before = invoke("verify_state", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])["event_count"]
    server = build_server(all_operations(), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode=mode, read_timeout_seconds=60) as client:
            result = await client.call_tool("plan_tasks", {"use_llm": True})
    assert error_code(result) == "no_tasks"
    assert "sampling" in json.loads(result.content[0].text)["error"]["message"]  # type: ignore[union-attr]
    after = invoke("verify_state", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])["event_count"]
    assert after == before


async def test_item_1_a_sampling_client_whose_model_declines_is_refused(features_only: dict[str, str]) -> None:
    """Issue 24 item 1: a model that gives no text is a failed backstop (llm_tasks_unusable), not 0 tasks.
    (A 2026-07-28 client that declines never calls again: its SDK raises the error to its caller.)"""
    async def decline(context: Any, params: types.CreateMessageRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-1, message="the user declined")

    server = build_server(all_operations(), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=60, sampling_callback=decline) as client:
            result = await client.call_tool("plan_tasks", {})
    assert error_code(result) == "llm_tasks_unusable"
