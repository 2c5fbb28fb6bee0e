"""The CLI's MCP client entry (``call_tool``): the same call over each transport, without the SDK."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from anvil.engine.errors import UsageError
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import (
    TOKEN,
    ServerProcess,
)

# --- the same call over each transport ----------------------------------------------------------


@pytest.fixture(params=["stdio", "http"])
def real_target(request: pytest.FixtureRequest, http_server_process: Callable[..., ServerProcess]) -> McpTarget:
    if request.param == "stdio":
        return McpTarget("stdio")
    return McpTarget("http", http_server_process().url, "MCP_TEST_TOKEN")


def test_every_transport_returns_the_real_operation_output(real_target: McpTarget, anvil_env: dict[str, str]) -> None:
    env = {**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN}
    output = call_tool(real_target, "get_project_status", {}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert output["initialized"] is False and output["state_dir"].startswith(anvil_env["ANVIL_HOME"])


def test_every_transport_rebuilds_the_servers_usage_error(real_target: McpTarget, anvil_env: dict[str, str]) -> None:
    env = {**anvil_subprocess_env(anvil_env), "MCP_TEST_TOKEN": TOKEN}
    with pytest.raises(UsageError) as caught:
        call_tool(real_target, "get_project_status", {"prd_id": 7, "nope": True}, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert caught.value.code == "invalid_input" and caught.value.exit_code == 2


# --- the client stays light -----------------------------------------------------------------------


def test_the_client_module_does_not_import_the_sdk(anvil_env: dict[str, str]) -> None:
    probe = ("import sys, anvil.mcp.client, anvil.mcp.http_client, anvil.mcp.stdio_client, anvil.mcp.target, "
             "anvil.mcp.channels\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'pydantic', 'httpx2')))")
    proc = subprocess.run([sys.executable, "-c", probe], env=anvil_subprocess_env(anvil_env), capture_output=True,
                          text=True, timeout=30)
    assert proc.stdout.strip() == "[]", proc.stderr
