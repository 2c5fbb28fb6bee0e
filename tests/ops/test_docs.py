"""The generated command and tool reference is current with the registry."""

from __future__ import annotations


def test_the_docs_reference_is_current() -> None:
    from pathlib import Path

    from anvil.ops.docs import render_reference

    path = Path(__file__).resolve().parents[2] / "docs" / "reference.md"
    assert path.read_text(encoding="utf-8") == render_reference(), \
        "docs/reference.md is stale: run `python -m anvil.ops.docs`"


def test_item_15_every_count_of_tools_in_the_docs_is_the_registrys_and_the_servers() -> None:
    """Issue 24 item 15: the README and seed-differences said 42 and 17 while the server listed 47 and 22.
    Every count is now written between markers that `python -m anvil.ops.docs` fills from the registry;
    the files are current, the counts are what the server lists, and no other number of tools is written."""
    import re

    import anyio
    from mcp import Client

    from anvil.mcp.server import build_server
    from anvil.ops.docs import COUNT, COUNTED_DOCS, tool_counts, with_counts
    from anvil.ops.registry import all_operations

    async def listed(planning: bool) -> int:
        async with Client(build_server(all_operations(), planning=planning, bundles=True), mode="legacy") as client:
            return len((await client.list_tools()).tools)

    counts = tool_counts()
    assert (counts["tools"], counts["execution_tools"]) == (anyio.run(listed, True), anyio.run(listed, False))
    assert counts["planning_tools"] == counts["tools"] - counts["execution_tools"]
    for path in COUNTED_DOCS:
        text = path.read_text(encoding="utf-8")
        assert text == with_counts(text), f"{path.name} is stale: run `python -m anvil.ops.docs`"
        assert COUNT.search(text), path.name
        bare = COUNT.sub("", text)
        assert not re.findall(r"\b\d+ (?:MCP )?(?:execution |planning )?tools\b", bare), path.name


def test_the_shipped_copy_of_each_page_is_current() -> None:
    from pathlib import Path

    from anvil.ops.docs import SHIPPED_DOCS

    root = Path(__file__).resolve().parents[2]
    for source, shipped in SHIPPED_DOCS.items():
        assert (root / "anvil" / "docs" / shipped).read_bytes() == (root / "docs" / source).read_bytes(), \
            f"anvil/docs/{shipped} is stale: run `python -m anvil.ops.docs`"
