"""The generated command and tool reference is current with the registry."""

from __future__ import annotations


def test_the_docs_reference_is_current() -> None:
    from pathlib import Path

    from anvil.ops.docs import render_reference

    path = Path(__file__).resolve().parents[2] / "docs" / "reference.md"
    assert path.read_text(encoding="utf-8") == render_reference(), \
        "docs/reference.md is stale: run `python -m anvil.ops.docs`"
