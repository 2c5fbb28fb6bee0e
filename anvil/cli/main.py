"""``anvil`` entry point and the CLI's one error boundary.

A well-formed direct ``--json`` call takes the fast path (no Typer, no pydantic); anything else
goes through the Typer app. Whatever happens below, :func:`main` is the only place that turns a
failure into output (through :func:`anvil.ops.boundary.run_guarded`): an :class:`AnvilError`
becomes its one-line message (or the JSON error document with ``--json``) and its exit code; a
bug becomes the one internal-error message (the traceback only with ``ANVIL_DEBUG=1``); a reader
that closed the pipe early ends the run quietly.

``anvil serve`` is the MCP server's own command line: it is handed, untouched, to
:func:`anvil.mcp.frontend.main` (the server's boundary), so it behaves exactly like
``python -m anvil.mcp``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from anvil.engine.errors import AnvilError
from anvil.ops.boundary import exit_process, run_guarded


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        from anvil.mcp.frontend import main as serve_main

        return serve_main(args[1:], "anvil serve")
    env = dict(os.environ)
    as_json = "--json" in args

    def report(error: AnvilError) -> int:
        from anvil.cli.output import report_error

        return report_error(error, as_json)

    return run_guarded(lambda: _dispatch(args, env), report, env)


def _dispatch(args: list[str], env: Mapping[str, str]) -> int:
    if "--json" in args and "--help" not in args and "-h" not in args:
        from anvil.cli.fast import parse_fast

        call = parse_fast(args, env)
        if call is not None:
            from anvil.cli.output import run_call

            code, _ = run_call(call.op, call.args, route=call.route, as_json=True, env=env, cwd=os.getcwd(),
                               fast=True)
            return code
    from anvil.cli.app import run_app

    return run_app(args, env)


def entry() -> None:
    """Console-script entry: exit with :func:`main`'s code."""
    exit_process(main())
