"""``anvil serve`` and ``python -m anvil.mcp``: the MCP server's command line, one Typer command.

Both entry points run this definition (``anvil/mcp/__main__.py`` hands its arguments to
:func:`server_main`), through the command line's one error map, so they accept the same options,
print the same help and fail the same way. What the options start is
:func:`anvil.mcp.frontend.serve`; a plain stdio start skips the parsing (:func:`plain_stdio`).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from anvil.mcp.frontend import ENVIRONMENT, ServeOptions, guarded, serve, tool_rows, tools_title

SUMMARY = "Run anvil's MCP server: stdio by default, Streamable HTTP with --http."
HTTP = "HTTP server (need --http or --sse)"


def _panels() -> list[tuple[str, Sequence[tuple[str, str]]]]:
    from anvil.mcp.http_app import MAX_BODY_BYTES

    notes = [(f"Request bodies are limited to {MAX_BODY_BYTES // 1024} KiB.", "")]
    return [(tools_title(), tool_rows()), ("Environment", ENVIRONMENT), ("", notes)]


def register(app: typer.Typer, group: Callable[[str, str | None], typer.Typer], panel: str | None) -> None:
    """Add ``serve`` to ``app``: its switches, then the HTTP server's options (a panel of their own)."""
    from typer.core import TyperCommand

    from anvil.cli.app import keyword, version_option, with_panels, with_signature
    from anvil.mcp import http_limits as limits
    from anvil.mcp.http_app import DEFAULT_HOST, DEFAULT_PORT, MCP_PATH

    def switch(name: str, words: str) -> inspect.Parameter:
        return keyword(name, typer.Option(False, f"--{name}", help=words), bool)

    def http(name: str, kind: Any, metavar: str, words: str, **extra: Any) -> inspect.Parameter:
        return keyword(name, typer.Option(None, "--" + name.replace("_", "-"), metavar=metavar, rich_help_panel=HTTP,
                                          help=words, **extra), kind)

    params = [
        switch("planning", "List the planning tools too (same as ANVIL_MCP_PLANNING=1)."),
        switch("stdio", "Serve stdio (the default; for a container whose default command serves HTTP)."),
        switch("http", f"Serve Streamable HTTP at http://HOST:PORT{MCP_PATH} (stateless, JSON replies) and the "
                       "read-only team board at http://HOST:PORT/board."),
        switch("sse", "Serve HTTP and also the legacy SSE transport at /sse (stateful)."),
        http("host", str | None, "H", f"Address to bind (default {DEFAULT_HOST}; others need a token)."),
        http("port", int | None, "N", f"TCP port (default {DEFAULT_PORT}; 0 picks a free one).", min=0, max=65535),
        http("token_env", str | None, "NAME", "Environment variable holding a shared bearer token (until per-agent "
                                              "tokens)."),
        http("allowed_host", list[str] | None, "H", "Extra accepted Host header (repeatable)."),
        http("allowed_origin", list[str] | None, "O", "Extra accepted Origin header (repeatable)."),
        http("header_timeout", str | None, "S", "Seconds a client has to send request headers (default "
                                                f"{limits.DEFAULT_HEADER_TIMEOUT:g})."),
        http("body_timeout", str | None, "S", "Seconds a client has to send a request body (default "
                                              f"{limits.DEFAULT_BODY_TIMEOUT:g})."),
        http("keep_alive_timeout", str | None, "S", "Seconds an idle connection stays open (default "
                                                    f"{limits.DEFAULT_KEEP_ALIVE_TIMEOUT:g})."),
        http("max_connections", str | None, "N", "Connections served at once; more get 503 (default "
                                                 f"{limits.DEFAULT_MAX_CONNECTIONS})."),
        http("max_client_connections", str | None, "N", "Connections from one client address; more get 503 "
                                                        f"(default {limits.DEFAULT_MAX_CLIENT_CONNECTIONS})."),
        keyword("version", version_option(), bool)]

    def serve_command(**values: Any) -> int:
        values.pop("version")  # answered (and exited) by its callback when given
        given: dict[str, Any] = {name: tuple(value or ()) if name.startswith("allowed_") else value
                                 for name, value in values.items()}
        return serve(ServeOptions(**given))

    app.command(name="serve", rich_help_panel=panel, help="Serve anvil's operations as MCP tools over stdio "
                "(default) or Streamable HTTP.", short_help=SUMMARY, cls=with_panels(TyperCommand, _panels()),
                context_settings={"help_option_names": ["-h", "--help"]})(with_signature(serve_command, params))


def command() -> Any:
    """The ``serve`` command alone, as a click command."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app, lambda name, panel: app, None)
    from anvil.cli.app import hide_switch_types  # here: anvil.cli.app imports this module

    built = typer.main.get_command(app)
    hide_switch_types(built)
    return built


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
