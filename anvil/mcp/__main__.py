"""``python -m anvil.mcp``: run the anvil MCP server (see :mod:`anvil.mcp.frontend`)."""

from __future__ import annotations

import sys

from anvil.mcp.frontend import main

if __name__ == "__main__":
    sys.exit(main())
