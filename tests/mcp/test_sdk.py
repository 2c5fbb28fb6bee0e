"""Cheap loading of the MCP SDK for the server process."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import anvil_subprocess_env

DEFERRED_PROBE = """
import sys
from anvil.mcp._sdk import load_server_sdk
load_server_sdk()
skipped = "mcp.client.client" not in sys.modules and "mcp.server.mcpserver" not in sys.modules
from mcp import Client
from mcp.server import MCPServer
import mcp
print(skipped, Client.__name__, MCPServer.__name__, mcp.types.Tool.__name__)
"""


def test_the_server_skips_the_sdk_package_initializers_yet_they_still_work_on_demand(
        anvil_env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-c", DEFERRED_PROBE], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["True", "Client", "MCPServer", "Tool"], proc.stderr
