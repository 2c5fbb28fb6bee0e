"""``anvil serve``: run the MCP server (stdio, or Streamable HTTP with ``--http``)."""

from __future__ import annotations

import typer

from anvil.cli.output import emit_error
from anvil.engine.errors import AnvilError


def serve(
    http: bool = typer.Option(False, "--http", help="Serve Streamable HTTP at /mcp instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (non-loopback needs --token-env)."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port to bind."),
    token_env: str | None = typer.Option(None, "--token-env", metavar="NAME",
                                         help="Name of the environment variable holding the bearer token."),
    allowed_host: list[str] | None = typer.Option(None, "--allowed-host", help="Extra Host header to accept "
                                                  "(repeatable), e.g. anvil.example.com."),
    allowed_origin: list[str] | None = typer.Option(None, "--allowed-origin", help="Extra Origin to accept "
                                                    "(repeatable)."),
    planning: bool = typer.Option(False, "--planning", help="List the planning tools too (as ANVIL_MCP_PLANNING=1)."),
) -> int:
    """Run anvil's MCP server (stdio by default, or Streamable HTTP with --http)."""
    from anvil.mcp import serve as mcp_serve

    try:
        if http:
            mcp_serve.serve_http(host, port, token_env, allowed_hosts=list(allowed_host or []),
                                 allowed_origins=list(allowed_origin or []), planning=planning or None)
        else:
            mcp_serve.serve_stdio(planning=planning or None)
    except AnvilError as error:
        return emit_error(error, False)
    return 0
