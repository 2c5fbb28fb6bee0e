"""Every tool's input and output schema, generated once into ``tool_schemas.json`` instead of at each start.

A server builds each tool's schemas from the operation's pydantic models (:mod:`anvil.mcp.schema`),
which is a fifth of what a stdio server spawned for one CLI call spends before it answers. The
schemas depend only on the code, so ``python -m anvil.mcp.toolschemas`` writes them next to this
module (regenerate it with ``surface.json``: ``python -m anvil.ops.specgen && python -m
anvil.mcp.toolschemas``) and a server reads them from there. ``tests/mcp/test_toolschemas.py`` fails
while the file differs from what the models give.

An entry is used only for the operation whose input and output models it was made from (their
qualified names are kept with it) and only by the anvil version that wrote the file; anything else
(an operation added since, a test's own operation, another version) gets its schemas made live.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from anvil import __version__
from anvil.ops.registry import Operation

SCHEMAS_PATH = Path(__file__).with_name("tool_schemas.json")
REGENERATE = "python -m anvil.mcp.toolschemas"


def model_key(op: Operation) -> str:
    """Which models an entry was made from: ``module.Input module.Output``."""
    return (f"{op.input_model.__module__}.{op.input_model.__qualname__} "
            f"{op.output_model.__module__}.{op.output_model.__qualname__}")


@cache
def _stored() -> dict[str, Any]:
    """The file's entries by operation name; empty when it is missing, unreadable or another version's."""
    try:
        document = json.loads(SCHEMAS_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("anvil_version") != __version__:
        return {}
    tools = document.get("tools")
    return tools if isinstance(tools, dict) else {}


def tool_schemas(op: Operation) -> tuple[dict[str, Any], dict[str, Any]]:
    """``op``'s (input schema, output schema) as :func:`anvil.mcp.schema.input_schema` and
    :func:`~anvil.mcp.schema.output_schema` give them, as fresh objects the caller may change."""
    entry = _stored().get(op.name)
    if isinstance(entry, dict) and entry.get("models") == model_key(op):
        # A JSON round trip copies a schema in a fraction of deepcopy's time.
        return json.loads(json.dumps(entry["input"])), json.loads(json.dumps(entry["output"]))
    from anvil.mcp.schema import input_schema, output_schema

    return input_schema(op), output_schema(op)


def render() -> str:
    """The file's text for the registered operations (made live from their models)."""
    from anvil.mcp.schema import input_schema, output_schema
    from anvil.ops.registry import all_operations

    tools = {op.name: {"models": model_key(op), "input": input_schema(op), "output": output_schema(op)}
             for op in all_operations()}
    document = {"anvil_version": __version__, "regenerate": REGENERATE, "tools": tools}
    # Key order kept as the models give it: a tool list then reads byte for byte as one made live.
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main() -> None:
    SCHEMAS_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMAS_PATH}")


if __name__ == "__main__":
    main()
