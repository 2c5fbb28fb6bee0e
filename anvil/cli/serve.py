"""``anvil serve``: the MCP server's own command line (:mod:`anvil.mcp.frontend`), listed in the CLI.

:func:`anvil.cli.main.main` hands every argument after ``serve`` to
:func:`anvil.mcp.frontend.main` before Typer is even loaded, so ``anvil serve`` and ``python -m
anvil.mcp`` accept the same options, print the same help and fail the same way. The Typer command
registered here puts ``serve`` in ``anvil --help`` and delegates the same way if it is ever reached.
"""

from __future__ import annotations

import typer


def register_serve(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""

    @app.command(name="serve", add_help_option=False,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                 help="Run anvil's MCP server: stdio by default, Streamable HTTP with --http (see "
                      "`anvil serve --help`).")
    def serve(ctx: typer.Context) -> int:
        from anvil.mcp.frontend import main

        return main(list(ctx.args), "anvil serve")
