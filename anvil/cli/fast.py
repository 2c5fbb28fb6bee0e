"""The CLI fast path: an accelerator for well-formed operation calls, without Typer or pydantic.

The command line is defined once, by the Typer app (:mod:`anvil.cli.app`); this parser reads the
same definition (the operation contract and :mod:`anvil.ops.cliflags`) to take, in a few milliseconds,
the calls people and agents make all day (``anvil next``, ``anvil list``): importing Typer and
pydantic costs several times the whole direct call. It accepts only operation calls it understands
completely and whose values satisfy every constraint in the spec; anything else (help, a typo, a
bad value, a command that is not an operation) returns None and the Typer app handles it, so every
error message comes from one place. ``tests/cli/test_fast.py`` and ``test_fast_differential.py``
prove both parsers give identical input, and that it takes no client-side command.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from anvil.cli.routing import resolve_route
from anvil.engine.errors import UsageError
from anvil.mcp.target import McpTarget
from anvil.ops import cliflags as flags
from anvil.ops.contract import OpSpec, ParamSpec, load_specs
from anvil.ops.speccheck import completed

ROUTE_FLAGS = {name: flag for flag in flags.ROUTE for name in flag.names}


@dataclass(frozen=True, slots=True)
class FastCall:
    op: OpSpec
    args: dict[str, Any]
    route: McpTarget | None  # None: direct
    as_json: bool = True
    quiet: bool = False  # -q: print only the id of the operation's quiet field


def find_operation(argv: Sequence[str]) -> tuple[OpSpec, int] | None:
    """The operation whose CLI path starts ``argv``, and the path's length."""
    best: tuple[OpSpec, int] | None = None
    for op in load_specs():
        n = len(op.cli_path)
        if tuple(argv[:n]) == op.cli_path and (best is None or n > best[1]):
            best = (op, n)
    return best


def check_flag_pairs(argv: Sequence[str]) -> None:
    """Refuse a command line that gives both sides of an on/off flag pair (``--approve --reject``).

    Raises:
        UsageError: ``conflicting_flags``.
    """
    found = find_operation(argv)
    if found is None:
        return
    options = argv[:argv.index("--")] if "--" in argv else argv
    for param in found[0].params:
        if param.off_flag and param.flag in options and param.off_flag in options:
            raise UsageError(f"{param.flag} and {param.off_flag} contradict each other: pass one of them",
                             code="conflicting_flags")


def convert(param: ParamSpec, raw: str) -> Any:
    """``raw`` as the parameter's type, by rules no looser than pydantic's (ValueError otherwise).

    Numbers must be ASCII (Python's ``int``/``float`` also read other scripts' digits; pydantic
    does not) and finite.
    """
    kind = param.item if param.kind == "list" else param.kind
    if param.kind == "pairs":
        source, sep, target = raw.partition(":")
        if not sep or not source or not target or ":" in target:
            raise ValueError(raw)
        return [source, target]
    if kind in ("int", "float") and not raw.isascii():
        raise ValueError(raw)
    if kind == "int":
        return int(raw)
    if kind == "float":
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError(raw)
        return value
    return raw


def parse_fast(argv: Sequence[str], env: Mapping[str, str]) -> FastCall | None:
    """Parse a well-formed call (JSON or human output, any route), or return None to let Typer handle ``argv``."""
    found = find_operation(argv)
    if found is None:
        return None
    op, used = found
    params = op.params
    by_flag = {p.flag: p for p in params}
    by_off = {p.off_flag: p for p in params if p.off_flag}
    positionals = [p for p in params if p.positional]
    values: dict[str, Any] = {}
    routing: dict[str, str] = {}
    as_json = quiet = False
    rest = list(argv[used:])

    def take(param: ParamSpec, raw: str) -> bool:
        """Record ``raw`` as the value of ``param``; False when it does not convert or repeats a single value."""
        try:
            value = convert(param, raw)
        except ValueError:
            return False
        if param.is_list:
            values.setdefault(param.name, []).append(value)
        elif param.name in values:
            return False
        else:
            values[param.name] = value
        return True

    i = 0
    while i < len(rest):
        token = rest[i]
        name, eq, inline = token.partition("=")
        if token in flags.JSON.names:
            as_json = True
        elif token in flags.QUIET.names and op.quiet_field:
            quiet = True
        elif name in ROUTE_FLAGS:
            if name in routing:
                return None
            if eq:
                routing[name] = inline
            elif i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                i += 1
                routing[name] = rest[i]
            elif ROUTE_FLAGS[name].bare is not None:
                routing[name] = str(ROUTE_FLAGS[name].bare)  # a bare --mcp
            else:
                return None
        elif token.startswith("--"):
            param = by_flag.get(name)
            if param is None and name in by_off and not eq:
                values[by_off[name].name] = False
                i += 1
                continue
            if param is None or param.positional:
                return None
            if param.kind == "bool":
                if eq:
                    return None
                values[param.name] = True
            else:
                if not eq:
                    i += 1
                    if i >= len(rest):
                        return None
                    inline = rest[i]
                if not take(param, inline):
                    return None
        elif token.startswith("-") and token != "-":
            return None
        else:
            if not positionals or not take(positionals[0], token):
                return None
            if not positionals[0].is_list:
                positionals.pop(0)
        i += 1
    try:
        route = resolve_route(routing.get(flags.MCP.names[0]), routing.get(flags.MCP_TOKEN_ENV.names[0]), env)
    except UsageError:
        return None  # the Typer path reports it, so every usage error reads the same
    if op.needs_actor and "actor" not in values and env.get("ANVIL_ACTOR", "").strip():
        values["actor"] = env["ANVIL_ACTOR"].strip()
    args = completed(params, values)
    return None if args is None else FastCall(op, args, route, as_json, quiet)
