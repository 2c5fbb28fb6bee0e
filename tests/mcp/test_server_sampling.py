"""plan_tasks borrows the MCP client's own model (sampling) to draft tasks a PRD lacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from anvil.mcp.server import build_server
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations

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


async def plan_with(sampling: Any) -> dict[str, Any]:
    server = build_server(all_operations(), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=60, sampling_callback=sampling) as client:
            result = await client.call_tool("plan_tasks", {})
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_a_client_that_samples_drafts_the_missing_tasks(features_only: dict[str, str]) -> None:
    prompts: list[str] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        assert isinstance(content, types.TextContent)
        prompts.append(content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=DRAFTED), model="m")

    planned = await plan_with(sample)
    assert (planned["llm_generated"], planned["task_count"], planned["added"]) == (True, 1, ["T001"])
    assert "## Tasks" in prompts[0] and "F001" in prompts[0]
    status = invoke("get_project_status", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])
    assert status["prd_status"] == "draft", "drafted tasks change the PRD, so it needs approval again"
    source = invoke("find_decisions", {}, env=features_only, cwd=features_only["ANVIL_ROOT"])
    assert source["prd_id"] == "default"


async def test_a_client_without_sampling_gets_no_tasks_and_nothing_changes(features_only: dict[str, str]) -> None:
    server = build_server(all_operations(), planning=True)
    with anyio.fail_after(60):
        async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
            result = await client.call_tool("plan_tasks", {})
    planned = result.structured_content
    assert isinstance(planned, dict)
    assert (planned["llm_generated"], planned["task_count"]) == (False, 0)
