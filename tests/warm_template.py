"""Imported once, by the template process of :mod:`tests.warm` (never by a test): anvil's CLI, its
registry and its MCP server, with the SDK loaded the way the server process loads it; the PostgreSQL
driver; and pytest, which the test modules whose functions run in forked children import."""

from __future__ import annotations

import gc
import importlib

from anvil.mcp._sdk import load_server_sdk

load_server_sdk(("uvicorn", "mcp.server.streamable_http"))
for module in ("anvil.cli.app", "anvil.cli.main", "anvil.mcp.frontend", "anvil.mcp.http_app", "anvil.mcp.serve",
               "anvil.mcp.server", "anvil.mcp.client", "anvil.ops.registry", "pytest"):
    importlib.import_module(module)  # after the SDK, as in a server process
importlib.import_module("anvil.ops.registry").all_operations()  # every handler module imported
try:  # the tests' extras install it; without it the PostgreSQL tests skip
    importlib.import_module("psycopg")
except ImportError:
    pass

gc.collect()
gc.freeze()  # what the template built is never collected in a child (no copy-on-write traversal of it)
