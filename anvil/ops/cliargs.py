"""The inverse of CLI parsing: the ``anvil`` argument list that produces a given input.

The loopback suite and the generated docs use it, so "this CLI call and this MCP tool call
receive the same input" is checked for every documented example.
"""

from __future__ import annotations

from typing import Any


def cli_argv_for(op: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """``[*cli_path, positionals..., --flags...]`` for the spec entry ``op`` and ``arguments``.

    Raises:
        ValueError: an argument is not an input of ``op``.
    """
    params = {p["name"]: p for p in op["params"]}
    unknown = set(arguments) - set(params)
    if unknown:
        raise ValueError(f"{op['name']}: not inputs: {sorted(unknown)}")
    argv = list(op["cli_path"])
    flags: list[str] = []
    for param in op["params"]:
        name = param["name"]
        if name not in arguments:
            continue
        value = arguments[name]
        if param["positional"]:
            argv.extend(str(v) for v in value) if param["kind"] == "list" else argv.append(str(value))
        elif param["kind"] == "bool":
            if value is None:
                continue
            if value and param.get("default") is not True:
                flags.append(param["flag"])
            elif not value and param.get("default") is not False:
                flags.append(param.get("off_flag", param["flag"]))
        elif param["kind"] == "list":
            for item in value or []:
                flags += [param["flag"], str(item)]
        elif param["kind"] == "pairs":
            for source, target in value or []:
                flags += [param["flag"], f"{source}:{target}"]
        elif value is not None:
            flags += [param["flag"], str(value)]
    return argv + flags
