"""Writing results and errors: one JSON document on stdout, or people-facing text."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from anvil.engine.errors import AnvilError


def dump_json(document: Any) -> str:
    """The exact ``--json`` text: sorted keys, so every path prints the same bytes."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def emit_json(document: Any) -> None:
    sys.stdout.write(dump_json(document))
    sys.stdout.flush()


def emit_error(error: AnvilError, as_json: bool) -> int:
    """Report ``error`` (JSON envelope on stdout, or one line on stderr); returns its exit code."""
    if as_json:
        emit_json(error.to_wire())
    else:
        sys.stderr.write(f"anvil: error: {error.message} [{error.code}]\n")
        sys.stderr.flush()
    return error.exit_code


def run_call(op: dict[str, Any], args: dict[str, Any], *, route: Any, as_json: bool, env: Mapping[str, str],
             cwd: str, fast: bool = False) -> tuple[int, dict[str, Any] | None]:
    """Invoke ``op`` on the routed backend; print JSON or return the output for rendering."""
    from anvil.cli.backend import backend_for
    from anvil.engine.errors import unexpected

    try:
        result = backend_for(route, env, cwd, fast=fast).invoke(op, args)
    except AnvilError as error:
        return emit_error(error, as_json), None
    except Exception as exc:  # a bug: one line for the user, the details only with ANVIL_DEBUG
        if env.get("ANVIL_DEBUG"):
            import traceback

            traceback.print_exc()
        return emit_error(unexpected(exc), as_json), None
    if as_json:
        emit_json(result)
    return result_exit_code(op, result), result


def result_exit_code(op: dict[str, Any], result: dict[str, Any]) -> int:
    """0, or the operation's failure exit code when its output reports a failure (see the registry)."""
    if not op.get("failure"):
        return 0
    field, code = op["failure"]
    negate = field.startswith("!")
    value = bool(result.get(field.lstrip("!")))
    return code if value != negate else 0
