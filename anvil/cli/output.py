"""Writing results and errors: one JSON document on stdout, or people-facing text."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from anvil.engine.errors import AnvilError
from anvil.ops.contract import OpSpec


def dump_json(document: Any) -> str:
    """The exact ``--json`` text: sorted keys, so every path prints the same bytes."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def emit_json(document: Any) -> None:
    sys.stdout.write(dump_json(document))
    sys.stdout.flush()


def report_error(error: AnvilError, as_json: bool) -> int:
    """Report ``error`` (JSON envelope on stdout, or one line on stderr); returns its exit code.

    Called only by the CLI's error boundary (:func:`anvil.cli.main.main`).
    """
    if as_json:
        emit_json(error.to_wire())
    else:
        sys.stderr.write(error.line() + "\n")
        sys.stderr.flush()
    return error.exit_code


def run_call(op: OpSpec, args: dict[str, Any], *, route: Any, as_json: bool, env: Mapping[str, str],
             cwd: str, fast: bool = False) -> tuple[int, dict[str, Any]]:
    """Invoke ``op`` on the routed backend; print the JSON document, or return the output for rendering.

    Raises:
        AnvilError: the call failed (reported by the CLI's error boundary).
    """
    from anvil.cli.backend import backend_for

    if op.local_files:
        from anvil.cli.localfiles import read_local_files

        args = read_local_files(op, args, cwd)
    result = backend_for(route, env, cwd, fast=fast).invoke(op, args)
    if as_json:
        emit_json(result)
    return result_exit_code(op, result), result


def result_exit_code(op: OpSpec, result: dict[str, Any]) -> int:
    """0, or the operation's failure exit code when its output reports a failure (see the registry)."""
    if op.failure is None:
        return 0
    field, code = op.failure
    negate = field.startswith("!")
    value = bool(result.get(field.lstrip("!")))
    return code if value != negate else 0
