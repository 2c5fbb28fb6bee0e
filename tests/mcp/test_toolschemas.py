"""The tool schemas a server reads from ``tool_schemas.json`` are the ones the models give, and anything
the file does not describe exactly gets its schemas made live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anvil.mcp import toolschemas
from anvil.mcp.schema import input_schema, output_schema
from anvil.mcp.server import tool_for
from anvil.ops.registry import Operation, all_operations, get_operation
from tests.conftest import anvil_subprocess_env


def test_the_stored_file_is_what_the_models_give() -> None:
    stored = toolschemas.SCHEMAS_PATH.read_text(encoding="utf-8")
    assert stored == toolschemas.render(), f"tool_schemas.json is stale: run `{toolschemas.REGENERATE}`"


def test_every_tool_is_built_from_its_stored_entry_and_matches_the_live_schemas() -> None:
    entries = json.loads(toolschemas.SCHEMAS_PATH.read_text(encoding="utf-8"))["tools"]
    for op in all_operations():
        assert entries[op.name]["models"] == toolschemas.model_key(op)
        tool = tool_for(op)
        assert tool.input_schema == input_schema(op), op.name
        assert tool.output_schema == output_schema(op), op.name


def test_a_schema_handed_out_is_a_copy_the_caller_may_change() -> None:
    op = get_operation("get_project_status")
    first, _ = toolschemas.tool_schemas(op)
    first["properties"] = {}
    again, _ = toolschemas.tool_schemas(op)
    assert again == input_schema(op) and again["properties"]


def test_an_operation_with_other_models_gets_live_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    real = get_operation("get_project_status")
    other = get_operation("get_project_summary")
    # Same name, other models (a test's own operation, or one changed since the file was written).
    renamed = Operation(**{**{f: getattr(other, f) for f in other.__dataclass_fields__}, "name": real.name})
    inputs, outputs = toolschemas.tool_schemas(renamed)
    assert (inputs, outputs) == (input_schema(other), output_schema(other))
    assert outputs != output_schema(real)


def test_a_file_of_another_version_or_unreadable_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    op = get_operation("get_project_status")
    document = json.loads(toolschemas.SCHEMAS_PATH.read_text(encoding="utf-8"))
    document["tools"][op.name]["input"] = {"type": "object", "title": "planted"}
    for text in (json.dumps({**document, "anvil_version": "0.0.0-other"}), "{not json", json.dumps([1])):
        planted = tmp_path / "tool_schemas.json"
        planted.write_text(text, encoding="utf-8")
        monkeypatch.setattr(toolschemas, "SCHEMAS_PATH", planted)
        toolschemas._stored.cache_clear()
        try:
            assert toolschemas.tool_schemas(op)[0] == input_schema(op)
        finally:
            toolschemas._stored.cache_clear()
    planted.write_text(json.dumps(document), encoding="utf-8")  # this version's file: its entry is what is served
    toolschemas._stored.cache_clear()
    try:
        assert toolschemas.tool_schemas(op)[0] == {"type": "object", "title": "planted"}
    finally:
        toolschemas._stored.cache_clear()


def test_a_stdio_server_builds_no_tool_schema_and_no_model_it_does_not_call(tmp_path: Path) -> None:
    """What the stdio server spawned for one call pays: no JSON schema generated, only the called
    operation's models built (pydantic's defer_build on the operation models)."""
    probe = (
        "import pydantic.main, sys\n"
        "made = []\n"
        "real = pydantic.main.BaseModel.model_json_schema.__func__\n"
        "def counted(cls, *a, **k):\n"
        "    made.append(cls)\n"
        "    return real(cls, *a, **k)\n"
        "pydantic.main.BaseModel.model_json_schema = classmethod(counted)\n"
        "from anvil.mcp.serve import _build\n"
        "server = _build(True)\n"
        "from anvil.ops.registry import all_operations\n"
        "built = [op.name for op in all_operations() if op.input_model.__pydantic_complete__]\n"
        "print(len(made), len(built))\n"
    )
    env = anvil_subprocess_env({**os.environ, "ANVIL_HOME": str(tmp_path)})
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120,
                         check=True, cwd=str(Path(__file__).resolve().parents[2]))
    schemas_made, models_built = (int(n) for n in out.stdout.split())
    assert schemas_made == 0
    assert models_built == 0
