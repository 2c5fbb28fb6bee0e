"""Tool schemas stay compact: what an agent pays for on every turn is measured, not guessed."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from anvil.mcp.server import build_server
from anvil.ops.registry import all_operations, get_operation

pytestmark = pytest.mark.anyio
MAX_TOTAL_BYTES = 20_000
"""What the default tools/list (the execution surface) plus the server instructions may cost a client,
output schemas included, as the SDK client receives it, in a project without bundles, local tools
included (issue 20 item 6). Measured: 24,789 B over stdio (23,940 over HTTP) before the instructions
were cut from 7,320 to 2,480 B; now 19,725 over stdio, 18,876 over HTTP. tests/mcp/test_budgets.py
measures every role's list against a real server."""
LOCAL_TOOLS_BYTES = 850
"""What the local-only tools of a stdio server's list may cost: prove_command (issue 20 item 5), the one
tool that runs a command, on the caller's machine only."""


async def listed_with_instructions(planning: bool, bundles: bool = False) -> tuple[list[dict], str]:  # type: ignore[type-arg]
    """The tools/list an SDK client receives (``bundles``: as in a project that has a bundle) and the
    server instructions."""
    server = build_server(all_operations(), planning=planning, bundles=bundles, has_bundles=lambda: False)
    with anyio.fail_after(20):
        async with Client(server, mode="legacy", read_timeout_seconds=20) as client:
            result = await client.list_tools()
            instructions = client.instructions or ""
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools], instructions


async def listed(planning: bool, bundles: bool = False) -> list[dict]:  # type: ignore[type-arg]
    return (await listed_with_instructions(planning, bundles))[0]


async def test_the_default_tools_list_stays_under_its_byte_budget() -> None:
    tools, instructions = await listed_with_instructions(planning=False)
    sizes = {tool["name"]: len(json.dumps(tool, separators=(",", ":"))) for tool in tools}
    told = len(instructions.encode())
    total = sum(sizes.values()) + told
    print(f"\ndefault tools/list: {len(tools)} tools and {told} bytes of instructions, {total} bytes")
    for name, size in sorted(sizes.items(), key=lambda item: -item[1]):
        print(f"  {size:6d}  {name}")
    local = sum(size for name, size in sizes.items() if get_operation(name).local_only)
    remote = {name: len(json.dumps({**tool, "description": get_operation(name).remote_description},
                                   separators=(",", ":"))) - size
              for name, size, tool in ((t["name"], sizes[t["name"]], t) for t in tools)
              if get_operation(name).remote_description}
    http_total = total - local + sum(remote.values())
    print(f"an HTTP server's default tools/list: {http_total} bytes")
    assert http_total <= MAX_TOTAL_BYTES and local <= LOCAL_TOOLS_BYTES, (total, local, http_total)
    assert total <= MAX_TOTAL_BYTES, total


async def test_a_project_with_a_bundle_lists_the_bundle_tools_too() -> None:
    from anvil.mcp.server import is_bundle_tool

    bundle_tools = {op.name for op in all_operations() if is_bundle_tool(op) and op.surface == "execution"}
    without = {tool["name"] for tool in await listed(planning=False)}
    with_bundle = {tool["name"] for tool in await listed(planning=False, bundles=True)}
    assert not without & bundle_tools and with_bundle == without | bundle_tools and len(bundle_tools) == 10


async def test_every_listed_tool_has_output_schema_and_a_short_purposeful_description() -> None:
    for tool in await listed(planning=True):
        assert tool["outputSchema"]["type"] == "object"
        assert tool["inputSchema"]["type"] == "object"
        assert 20 <= len(tool["description"]) <= 240


def test_shared_outputs_are_bare_types_that_keep_null_and_leave_no_unused_definitions() -> None:
    from anvil.mcp.schema import output_schema
    from anvil.ops.registry import get_operation

    offered = output_schema(get_operation("get_next_task"))["properties"]
    assert offered["task"] == {"type": ["object", "null"]} and offered["governor"] == {"type": "object"}
    claimed = output_schema(get_operation("claim_bundle"))
    assert claimed["properties"]["bundle"] == {"type": "object"} and claimed["properties"]["claim"] == {
        "type": "object"}
    assert "$defs" not in claimed and "$defs" not in output_schema(get_operation("get_bundle"))


def test_fields_on_every_write_are_described_once_instead_of_in_each_output_schema() -> None:
    from anvil.mcp.schema import ENVELOPE_OUTPUTS, output_schema, shared_conventions

    writers = [op for op in all_operations() if op.effect != "read"]
    assert writers
    for op in writers:
        assert ENVELOPE_OUTPUTS <= set(op.output_model.model_fields), op.name  # every result still carries them
        assert not ENVELOPE_OUTPUTS & set(output_schema(op)["properties"]), op.name
    described = shared_conventions()
    assert all(f"- {name}: on every result of a tool that writes" in described for name in ENVELOPE_OUTPUTS)
