"""``anvil`` entry point: the fast path for well-formed direct ``--json`` calls, else Typer."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
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
    code = main()
    sys.stdout.flush()
    raise SystemExit(code)
