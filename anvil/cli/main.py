"""``anvil`` entry point and the CLI's one error boundary.

A well-formed direct ``--json`` call takes the fast path (no Typer, no pydantic); anything else
goes through the Typer app. Whatever happens below, :func:`main` is the only place that turns a
failure into output: an :class:`AnvilError` becomes its one-line message (or the JSON error
document with ``--json``) and its exit code; a bug becomes the one internal-error message (the
traceback only with ``ANVIL_DEBUG=1``); a reader that closed the pipe early ends the run quietly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from anvil.engine.errors import AnvilError, Interrupted, unexpected

EXIT_BROKEN_PIPE = 141  # what a shell reports for a writer killed by SIGPIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    as_json = "--json" in args
    try:
        return _dispatch(args, env)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except AnvilError as error:
        return _report(error, as_json)
    except KeyboardInterrupt:
        return _report(Interrupted("interrupted"), as_json)
    except Exception as exc:  # a bug: one line for the user, the details only with ANVIL_DEBUG
        if env.get("ANVIL_DEBUG"):
            import traceback

            traceback.print_exc()
        return _report(unexpected(exc), as_json)


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


def _report(error: AnvilError, as_json: bool) -> int:
    from anvil.cli.output import report_error

    try:
        return report_error(error, as_json)
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _quiet_broken_pipe() -> int:
    """The reader went away: stop writing, and keep the interpreter from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def entry() -> None:
    """Console-script entry: exit with :func:`main`'s code."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _quiet_broken_pipe()
    raise SystemExit(code)
