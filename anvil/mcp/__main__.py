"""``python -m anvil.mcp``: run the anvil MCP server (see :mod:`anvil.mcp.frontend`)."""

from __future__ import annotations

from anvil.mcp.frontend import main
from anvil.ops.boundary import exit_process

if __name__ == "__main__":
    exit_process(main())
