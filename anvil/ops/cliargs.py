"""The inverse of CLI parsing: the ``anvil`` argument list that produces a given input.

The loopback suite and the generated docs use it, so "this CLI call and this MCP tool call
receive the same input" is checked for every documented example.
"""

from __future__ import annotations

from typing import Any

from anvil.ops.contract import OpSpec


def cli_argv_for(op: OpSpec, arguments: dict[str, Any]) -> list[str]:
    """``[*cli_path, positionals..., --flags...]`` for the operation ``op`` and ``arguments``.

    Raises:
        ValueError: an argument is not an input of ``op``.
    """
    names = {p.name for p in op.params}
    unknown = set(arguments) - names
    if unknown:
        raise ValueError(f"{op.name}: not inputs: {sorted(unknown)}")
    argv = list(op.cli_path)
    flags: list[str] = []
    for param in op.params:
        if param.name not in arguments:
            continue
        value = arguments[param.name]
        if param.positional:
            argv.extend(str(v) for v in value) if param.kind == "list" else argv.append(str(value))
        elif param.kind == "bool":
            if value is None:
                continue
            if value and param.default is not True:
                flags.append(param.flag)
            elif not value and param.default is not False:
                flags.append(param.off_flag or param.flag)
        elif param.kind == "list":
            for item in value or []:
                flags += [param.flag, str(item)]
        elif param.kind == "pairs":
            for source, target in value or []:
                flags += [param.flag, f"{source}:{target}"]
        elif value is not None:
            flags += [param.flag, str(value)]
    return argv + flags
