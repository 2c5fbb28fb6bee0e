"""The error boundary of an entry point: every failure becomes one report and one exit code.

anvil has two process entry points, the CLI (:func:`anvil.cli.main.main`) and the MCP server's
command line (``python -m anvil.mcp``, :func:`anvil.cli.serve.server_main`). Each wraps
everything it does in :func:`run_guarded` exactly once, with its own way of reporting an
:class:`~anvil.engine.errors.AnvilError` (the CLI: a line on stderr or the JSON document with
``--json``; the server: a line on stderr). Nothing below an entry point prints an error. A tool
call inside a running server has its own boundary, ``call_tool`` in :mod:`anvil.mcp.server`.

Standard library and engine only: the direct CLI path imports this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import NoReturn

from anvil.engine.errors import AnvilError, Interrupted, unexpected
from anvil.engine.storage.paths import current_directory

EXIT_BROKEN_PIPE = 141  # what a shell reports for a writer killed by SIGPIPE
DEBUG_ENV = "ANVIL_DEBUG"

Report = Callable[[AnvilError], int]
"""Shows an error the entry point's way and returns the exit code (usually ``error.exit_code``)."""


def run_guarded(body: Callable[[], int], report: Report, env: Mapping[str, str]) -> int:
    """Run ``body`` and return its exit code, turning any failure into ``report`` and its exit code.

    An :class:`AnvilError` is reported as it is; Ctrl-C as ``interrupted`` (exit 130); a reader
    that closed the pipe early ends the run quietly (exit 141); any other exception is a bug,
    reported as the one internal-error message (its traceback goes to stderr only with
    ``ANVIL_DEBUG`` set in ``env``).

    Args:
        body: everything the entry point does; returns the exit code.
        report: shows an error and returns the exit code.
        env: the environment (read for ``ANVIL_DEBUG``).

    Returns:
        The exit code.
    """
    try:
        current_directory()  # a removed working directory is the caller's to fix, not a bug
        return body()
    except BrokenPipeError:
        return quiet_broken_pipe()
    except AnvilError as error:
        return _report(report, error)
    except KeyboardInterrupt:
        return _report(report, Interrupted("interrupted"))
    except Exception as exc:  # a bug: one line for the user, the details only with ANVIL_DEBUG
        if env.get(DEBUG_ENV):
            import traceback

            traceback.print_exc()
        return _report(report, unexpected(exc))


def _report(report: Report, error: AnvilError) -> int:
    try:
        return report(error)
    except BrokenPipeError:
        return quiet_broken_pipe()


def quiet_broken_pipe() -> int:
    """The reader went away: stop writing, and keep the interpreter from complaining at exit.

    Returns:
        :data:`EXIT_BROKEN_PIPE`.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_BROKEN_PIPE


def exit_process(code: int) -> NoReturn:
    """Flush stdout and leave the process with ``code`` (141 when the reader already went away).

    Raises:
        SystemExit: always.
    """
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = quiet_broken_pipe()
    raise SystemExit(code)
