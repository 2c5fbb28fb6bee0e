"""anvil's MCP layer: the server generated from the operation registry, and the CLI's MCP client.

Nothing here imports the MCP SDK at package import time: :mod:`anvil.mcp.client` and
:mod:`anvil.mcp.target` are standard library only (the CLI's hot path), and the server modules load
the SDK when a server is actually built.
"""
