"""The CLI's stdio transport: spawns this install's server with the caller's environment, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import TargetUnavailable
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
from tests.conftest import anvil_subprocess_env


def test_stdio_spawns_the_server_with_the_callers_full_environment(anvil_env: dict[str, str],
                                                                  tmp_path: Path) -> None:
    env = anvil_subprocess_env(anvil_env)
    env["ANVIL_HOME"] = str(tmp_path / "another-home")  # only the env argument knows this one
    output = call_tool(McpTarget("stdio"), "get_project_status", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert output["initialized"] is False
    assert output["state_dir"].startswith(str(tmp_path / "another-home"))


def test_stdio_exposes_planning_tools_to_the_cli(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    env.pop("ANVIL_MCP_PLANNING", None)
    output = call_tool(McpTarget("stdio"), "describe_surface", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert isinstance(output, dict) and output


def test_stdio_that_cannot_start_is_target_unavailable(anvil_env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(TargetUnavailable) as caught:
        call_tool(McpTarget("stdio"), "get_project_status", {}, env=anvil_subprocess_env(anvil_env),
                  cwd=str(tmp_path / "missing"))
    assert caught.value.exit_code == 7


def test_stdio_gives_up_at_the_deadline(anvil_env: dict[str, str]) -> None:
    with pytest.raises(TargetUnavailable) as caught:
        call_tool(McpTarget("stdio"), "get_project_status", {}, env=anvil_subprocess_env(anvil_env),
                  cwd=anvil_env["ANVIL_ROOT"], timeout=0.05)
    assert caught.value.code == "target_timeout"
