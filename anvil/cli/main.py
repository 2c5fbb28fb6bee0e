"""``anvil`` entry point and the CLI's one error boundary.

The command line is one Typer app (:mod:`anvil.cli.app`): every command, its help, its usage errors
and shell completion. A well-formed operation call takes the fast path (:mod:`anvil.cli.fast`: no
Typer, no pydantic), whether it prints JSON or text; anything it does not understand completely,
help included, goes to the Typer app. ``anvil --version`` answers before anything else is imported,
and a plain ``anvil serve`` (stdio) starts the server without loading the command line.
Whatever happens below, :func:`main` is the only place that turns a failure into output (through
:func:`anvil.ops.boundary.run_guarded`): an :class:`AnvilError` becomes its one-line message (or
the JSON error document with ``--json``) and its exit code; a bug becomes the one internal-error
message (the traceback only with ``ANVIL_DEBUG=1``); a reader that closed the pipe early ends the
run quietly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anvil.engine.errors import AnvilError

VERSION_FLAGS = (["--version"], ["-V"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in VERSION_FLAGS:
        from anvil import __version__

        sys.stdout.write(f"anvil {__version__}\n")
        return 0
    if args[:1] == ["serve"]:
        from anvil.mcp.frontend import guarded, plain_stdio, serve

        plain = plain_stdio(args[1:])
        if plain is not None:
            return guarded(lambda: serve(plain))
    from anvil.ops.boundary import run_guarded

    env = dict(os.environ)
    as_json = "--json" in args and args[:1] != ["serve"]  # the server prints no JSON, not even its errors

    def report(error: AnvilError) -> int:
        from anvil.cli.output import report_error

        return report_error(error, as_json, args)

    return run_guarded(lambda: _dispatch(args, env), report, env)


def _dispatch(args: list[str], env: Mapping[str, str]) -> int:
    from anvil.ops.cliflags import expand_git_shortcuts

    args = expand_git_shortcuts(args)
    options = args[:args.index("--")] if "--" in args else args
    if args and "--help" not in options and "-h" not in options:
        from anvil.cli.fast import check_flag_pairs, parse_fast

        watching = options[:1] == ["board"] and "--watch" in options
        if watching:  # a CLI-only flag: the board stays on a terminal and redraws on every change
            args = [a for a in args if a != "--watch"]
        from anvil.engine.storage.paths import current_directory

        check_flag_pairs(args)
        call = parse_fast(args, env)
        if call is not None and watching and not call.as_json and sys.stdout.isatty():
            from anvil.cli.boardview import watch

            return watch(call, env, current_directory())
        if call is not None:
            from anvil.cli.output import show

            return show(call.op, call.args, route=call.route, as_json=call.as_json, quiet=call.quiet, env=env,
                        cwd=current_directory(), fast=True)
    from anvil.cli.app import run_app

    return run_app(args, env)


def entry() -> None:
    """Console-script entry: exit with :func:`main`'s code."""
    code = main()
    if sys.argv[1:] in VERSION_FLAGS:
        try:  # the version answers without loading anything else, even the boundary
            sys.stdout.flush()
        except BrokenPipeError:
            code = 141
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(code)
    from anvil.ops.boundary import exit_process

    exit_process(code)
