"""The MCP server's default runner: a tool call's arguments are validated once (by ``calls.prepare``)."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.engine.errors import AnvilError
from anvil.mcp.calls import ToolCalls
from anvil.mcp.server import run_operation
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario


def test_a_prepared_call_runs_without_validating_its_arguments_again(anvil_env: dict[str, str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = anvil_env["ANVIL_ROOT"]
    build_scenario("ready", anvil_env, root)
    prepared = ToolCalls.of(all_operations()).prepare("list_tasks", {"status": "ready"})
    assert not isinstance(prepared, AnvilError)
    op, arguments = prepared
    validated: list[Any] = []
    original = op.input_model.model_validate

    def counting(value: Any, *args: Any, **kwargs: Any) -> Any:
        validated.append(value)
        return original(value, *args, **kwargs)

    monkeypatch.setattr(op.input_model, "model_validate", counting)
    once = run_operation(op.name, arguments, env=anvil_env, cwd=root)
    assert validated == []
    assert invoke(op.name, {"status": "ready"}, env=anvil_env, cwd=root) == once  # the same call, validated here
    assert len(validated) == 1
