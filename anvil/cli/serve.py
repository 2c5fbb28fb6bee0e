"""``anvil serve`` and ``python -m anvil.mcp``: the MCP server's command line, one Typer command.

Both entry points run this definition (``anvil/mcp/__main__.py`` hands its arguments to
:func:`server_main`), through the command line's one error map, so they accept the same options,
print the same help and fail the same way. What the options start is
:func:`anvil.mcp.frontend.serve`; a plain stdio start skips the parsing (:func:`plain_stdio`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from anvil import __version__
from anvil.mcp.frontend import ENVIRONMENT, ServeOptions, guarded, serve, tool_rows, tools_title

SUMMARY = "Run anvil's MCP server: stdio by default, Streamable HTTP with --http."
HTTP = "HTTP server (need --http or --sse)"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"anvil {__version__}")
        raise typer.Exit()


def _panels() -> list[tuple[str, Sequence[tuple[str, str]]]]:
    from anvil.mcp.http_app import MAX_BODY_BYTES

    notes = [(f"Request bodies are limited to {MAX_BODY_BYTES // 1024} KiB.", "")]
    return [(tools_title(), tool_rows()), ("Environment", ENVIRONMENT), ("", notes)]


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str | None) -> None:
    """Add ``serve`` to ``app``."""
    from typer.core import TyperCommand

    from anvil.cli.app import with_panels
    from anvil.mcp.http_app import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH
    from anvil.mcp.http_limits import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_KEEP_ALIVE_TIMEOUT,
        DEFAULT_MAX_CLIENT_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS,
    )

    cls = with_panels(TyperCommand, _panels())

    @app.command(name="serve", rich_help_panel=panel, help="Serve anvil's operations as MCP tools over stdio "
                 "(default) or Streamable HTTP.", short_help=SUMMARY, cls=cls,
                 context_settings={"help_option_names": ["-h", "--help"]})
    def serve_command(
        planning: bool = typer.Option(False, "--planning", help="List the planning tools too (same as "
                                                                "ANVIL_MCP_PLANNING=1)."),
        stdio: bool = typer.Option(False, "--stdio", help="Serve stdio (the default; for a container whose default "
                                                          "command serves HTTP)."),
        http: bool = typer.Option(False, "--http", help=f"Serve Streamable HTTP at http://HOST:PORT{MCP_PATH} "
                                  "(stateless, JSON replies) and the read-only team board at http://HOST:PORT/board."),
        sse: bool = typer.Option(False, "--sse", help="Serve HTTP and also the legacy SSE transport at /sse "
                                                      "(stateful)."),
        host: str | None = typer.Option(None, "--host", metavar="H", rich_help_panel=HTTP,
                                        help=f"Address to bind (default {DEFAULT_HOST}; others need a token)."),
        port: int | None = typer.Option(None, "--port", metavar="N", min=0, max=65535, rich_help_panel=HTTP,
                                        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)."),
        token_env: str | None = typer.Option(None, "--token-env", metavar="NAME", rich_help_panel=HTTP,
                                             help="Environment variable holding a shared bearer token (until "
                                                  "per-agent tokens)."),
        allowed_host: list[str] | None = typer.Option(None, "--allowed-host", metavar="H", rich_help_panel=HTTP,
                                                      help="Extra accepted Host header (repeatable)."),
        allowed_origin: list[str] | None = typer.Option(None, "--allowed-origin", metavar="O", rich_help_panel=HTTP,
                                                        help="Extra accepted Origin header (repeatable)."),
        header_timeout: str | None = typer.Option(None, "--header-timeout", metavar="S", rich_help_panel=HTTP,
                                                  help="Seconds a client has to send request headers (default "
                                                       f"{DEFAULT_HEADER_TIMEOUT:g})."),
        body_timeout: str | None = typer.Option(None, "--body-timeout", metavar="S", rich_help_panel=HTTP,
                                                help="Seconds a client has to send a request body (default "
                                                     f"{DEFAULT_BODY_TIMEOUT:g})."),
        keep_alive_timeout: str | None = typer.Option(None, "--keep-alive-timeout", metavar="S", rich_help_panel=HTTP,
                                                      help="Seconds an idle connection stays open (default "
                                                           f"{DEFAULT_KEEP_ALIVE_TIMEOUT:g})."),
        max_connections: str | None = typer.Option(None, "--max-connections", metavar="N", rich_help_panel=HTTP,
                                                   help="Connections served at once; more get 503 (default "
                                                        f"{DEFAULT_MAX_CONNECTIONS})."),
        max_client_connections: str | None = typer.Option(
            None, "--max-client-connections", metavar="N", rich_help_panel=HTTP,
            help=f"Connections from one client address; more get 503 (default {DEFAULT_MAX_CLIENT_CONNECTIONS})."),
        version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> int:
        return serve(ServeOptions(
            planning=planning, http=http, stdio=stdio, sse=sse, host=host, port=port, token_env=token_env,
            allowed_host=tuple(allowed_host or ()), allowed_origin=tuple(allowed_origin or ()),
            header_timeout=header_timeout, body_timeout=body_timeout, keep_alive_timeout=keep_alive_timeout,
            max_connections=max_connections, max_client_connections=max_client_connections))


def command() -> Any:
    """The ``serve`` command alone, as a click command."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app, lambda name, panel: app, None)
    return typer.main.get_command(app)


def parse(argv: Sequence[str]) -> dict[str, Any]:
    """The options ``argv`` gives the server, as the command receives them (nothing runs).

    Raises:
        AnvilError: the command line is not valid.
    """
    from typer._click import exceptions as click_exceptions

    from anvil.cli.errormap import mapped

    try:
        return dict(command().make_context("anvil serve", list(argv)).params)
    except click_exceptions.UsageError as exc:
        raise mapped(exc) from None


def server_main(argv: Sequence[str] | None = None, prog: str = "python -m anvil.mcp") -> int:
    """``python -m anvil.mcp ARGS``: the ``serve`` command's definition, in the server's error boundary."""
    args = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        from anvil.cli.app import help_on_stderr
        from anvil.cli.errormap import run_command

        return run_command(command(), args, prog, help_on_stderr)

    return guarded(body)
