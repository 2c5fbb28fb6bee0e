"""``anvil`` entry point and the CLI's one error boundary.

A well-formed call takes the fast path (no Typer, no pydantic), whether it prints JSON or text;
help and anything the fast parser does not understand completely go through the Typer app, which
gives every usage error. ``anvil --version`` answers before anything else is imported.
Whatever happens below, :func:`main` is the only place that turns a failure into output (through
:func:`anvil.ops.boundary.run_guarded`): an :class:`AnvilError` becomes its one-line message (or
the JSON error document with ``--json``) and its exit code; a bug becomes the one internal-error
message (the traceback only with ``ANVIL_DEBUG=1``); a reader that closed the pipe early ends the
run quietly.

``anvil serve`` is the MCP server's own command line: it is handed, untouched, to
:func:`anvil.mcp.frontend.main` (the server's boundary), so it behaves exactly like
``python -m anvil.mcp``.
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
        from anvil.mcp.frontend import main as serve_main

        return serve_main(args[1:], "anvil serve")
    from anvil.ops.boundary import run_guarded

    env = dict(os.environ)
    as_json = "--json" in args

    def report(error: AnvilError) -> int:
        from anvil.cli.output import report_error

        return report_error(error, as_json, args)

    return run_guarded(lambda: _dispatch(args, env), report, env)


GIT_SHORTCUTS = ("claim", "claim-next")
CLIENT_COMMANDS = ("proof", "attest", "keys")
"""Commands that run on the caller's machine around operations (see :mod:`anvil.cli.client`), and
``verify-task`` (:mod:`anvil.cli.verifier`) and ``land`` (:mod:`anvil.cli.lander`)."""


def expand_git_shortcuts(args: list[str]) -> list[str]:
    """``--branch``, ``--worktree`` and ``--worktree=PATH`` on claim commands, as the flags of the inputs."""
    if args[:1] and args[0] in GIT_SHORTCUTS:
        out: list[str] = []
        for token in args:
            if token == "--branch":
                out += ["--git-mode", "branch"]
            elif token == "--worktree":
                out += ["--git-mode", "worktree"]
            elif token.startswith("--worktree="):
                out += ["--git-mode", "worktree", "--worktree-path", token.partition("=")[2]]
            else:
                out.append(token)
        return out
    return args


def _dispatch(args: list[str], env: Mapping[str, str]) -> int:
    if args[:1] == ["db"]:
        from anvil.cli.dbcommand import main as db_main

        return db_main(args[1:], env)
    if args[:1] and args[0] in CLIENT_COMMANDS:
        from anvil.cli.client import run_client_command

        return run_client_command(args, env)
    if args[:1] == ["verify-task"]:
        from anvil.cli.verifier import run_verify

        return run_verify(args[1:], env)
    if args[:1] == ["land"]:
        from anvil.cli.lander import run_land

        return run_land(args[1:], env)
    args = expand_git_shortcuts(args)
    options = args[:args.index("--")] if "--" in args else args
    wants_help = "--help" in options or "-h" in options
    if wants_help or not args:
        from anvil.cli.helptext import help_for

        text = help_for(options)
        if text is not None:
            (sys.stdout if wants_help else sys.stderr).write(text)
            return 0 if wants_help else 2
    else:
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
            from anvil.cli.output import run_call, show

            code, result, paste = run_call(call.op, call.args, route=call.route, as_json=call.as_json, env=env,
                                    cwd=current_directory(), fast=True)
            if call.as_json:
                from anvil.ops.contract import QUIET_EMPTY_EXIT

                empty = call.quiet and call.op.quiet_field and result.get(call.op.quiet_field) is None
                return QUIET_EMPTY_EXIT if empty else code
            return show(call.op, result, call.args, code, env, quiet=call.quiet, paste=paste)
        if len(args) == 1 and args[0] in _groups():  # a group without its command: its help, as a usage error
            from anvil.cli.helptext import help_for

            sys.stderr.write(help_for(args) or "")
            return 2
    from anvil.cli.app import run_app

    return run_app(args, env)


def _groups() -> set[str]:
    from anvil.ops.contract import load_specs

    return {spec.cli_path[0] for spec in load_specs() if len(spec.cli_path) > 1}


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
