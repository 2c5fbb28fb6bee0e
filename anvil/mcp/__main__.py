"""``python -m anvil.mcp``: run the anvil MCP server.

An entry point, above the layers: its command line is the ``anvil serve`` command's definition
(:mod:`anvil.cli.serve`); a plain stdio start, as MCP hosts make it, serves without loading it.
"""

from __future__ import annotations

import sys

from anvil.ops.boundary import exit_process

if __name__ == "__main__":
    from anvil.mcp.frontend import guarded, plain_stdio, serve

    plain = plain_stdio(sys.argv[1:])
    if plain is not None:
        options = plain
        exit_process(guarded(lambda: serve(options)))
    from anvil.cli.serve import server_main

    exit_process(server_main(sys.argv[1:]))
