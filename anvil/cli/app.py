"""The Typer app, generated from the operation registry.

Each operation becomes one command at its CLI path; its input fields become arguments and
options through the same parameter spec the fast path reads (``anvil.ops.specgen.op_spec``), so
both parsers agree on every flag. Every command also takes ``--json``, ``--mcp [TARGET]`` and
``--mcp-token-env NAME``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import typer
from typer._click import exceptions as click_exceptions

from anvil import __version__
from anvil.cli.output import emit_error, run_call
from anvil.cli.routing import resolve_route
from anvil.engine.errors import AnvilError, UsageError
from anvil.ops.registry import Operation, all_operations
from anvil.ops.specgen import op_spec
from anvil.ops.validation import validate_input

GROUP_HELP = {
    "prd": "Parse, assess and review the PRD.",
    "review": "Review planned tasks.",
}
PY_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool}

COMMON_PARAMS = [
    inspect.Parameter("json_", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                      default=typer.Option(False, "--json", help="Print exactly one JSON document on stdout.")),
    inspect.Parameter("mcp_", inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                      default=typer.Option(None, "--mcp", metavar="[TARGET]",
                                           help="Run through MCP: bare or 'stdio' spawns the local server; an "
                                                "http(s):// URL or sse:<url> calls a deployed one.")),
    inspect.Parameter("mcp_token_env_", inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                      default=typer.Option(None, "--mcp-token-env", metavar="NAME",
                                           help="Name of the environment variable holding the bearer token.")),
]


EXIT_EMPTY = 3
QUIET_PARAM = inspect.Parameter("quiet_", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                default=typer.Option(False, "--quiet", "-q", help="Print only the id; exit 3 when "
                                                                                   "there is none."))


def _typer_parameter(param: dict[str, Any]) -> inspect.Parameter:
    kind = param["kind"]
    help_text = param["help"] + (f" One of: {', '.join(param['choices'])}." if "choices" in param else "")
    if kind in ("list", "pairs"):
        annotation: Any = list[str] | None
        default: Any = ... if param["positional"] and param["required"] else None
    else:
        annotation = PY_TYPES[kind] | None if param["nullable"] or param["name"] == "actor" else PY_TYPES[kind]
        default = ... if param["required"] and param["name"] != "actor" else param.get("default")
        if param["name"] == "actor":
            default = None
    if param["positional"]:
        info = typer.Argument(default, help=help_text, show_default=False)
    elif kind == "bool":
        decl = param["flag"] + (f"/{param['off_flag']}" if "off_flag" in param else "")
        info = typer.Option(default, decl, help=help_text)
    else:
        metavar = "SOURCE:TARGET" if kind == "pairs" else None
        info = typer.Option(default, param["flag"], help=help_text, metavar=metavar,
                            show_default=default not in (None, "", []))
    return inspect.Parameter(param["name"], inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=info)


def _collect_input(op: Operation, spec: dict[str, Any], values: Mapping[str, Any],
                   env: Mapping[str, str]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for param in spec["params"]:
        value = values.get(param["name"])
        if param["kind"] in ("list", "pairs"):
            value = list(value or []) or (None if param.get("default", []) is None else [])
            if param["kind"] == "pairs":
                pairs = []
                for item in value or []:
                    source, sep, target = item.partition(":")
                    if not sep or not source or not target or ":" in target:
                        raise UsageError(f"{param['flag']} takes SOURCE:TARGET pairs", code="invalid_input")
                    pairs.append([source, target])
                value = pairs or value
        if param["name"] == "actor" and value is None:
            value = env.get("ANVIL_ACTOR", "").strip() or None
            if value is None and param["required"]:
                raise UsageError("missing actor: pass --actor NAME or set ANVIL_ACTOR", code="missing_actor")
        raw[param["name"]] = value
    return validate_input(op, raw)


def make_command(op: Operation, env: Mapping[str, str], render: Callable[[Operation, dict[str, Any]], None]
                 ) -> Callable[..., int]:
    spec = op_spec(op)

    def command(**values: Any) -> int:
        as_json = bool(values.pop("json_"))
        quiet = bool(values.pop("quiet_", False))
        try:
            route = resolve_route(values.pop("mcp_"), values.pop("mcp_token_env_"), env)
            args = _collect_input(op, spec, values, env)
        except AnvilError as error:
            return emit_error(error, as_json)
        code, result = run_call(spec, args, route=route, as_json=as_json, env=env, cwd=os.getcwd())
        if result is None:
            return code
        if quiet and op.quiet_field:
            found = result.get(op.quiet_field)
            if not as_json and found is not None:
                typer.echo(found.get("task_id", found.get("id", "")) if isinstance(found, dict) else found)
            return EXIT_EMPTY if found is None else code
        if not as_json:
            try:
                render(op, result)
            except Exception as exc:  # the call succeeded; only showing it failed
                from anvil.engine.errors import InternalError

                return emit_error(InternalError(f"the result could not be displayed ({type(exc).__name__}); "
                                                "rerun with --json", code="render_failed"), False)
        return code

    extra = [QUIET_PARAM] if op.quiet_field else []
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_typer_parameter(p) for p in spec["params"]] + COMMON_PARAMS + extra)
    command.__name__ = op.name
    return command


def _epilog(op: Operation, spec: dict[str, Any]) -> str:
    import shlex

    from anvil.ops.cliargs import cli_argv_for

    lines = [f"MCP tool: {op.name} ({op.surface}, {op.effect}).", "Examples:"]
    for example in op.examples:
        if example.error is None:
            command = " ".join(shlex.quote(a) for a in cli_argv_for(spec, example.input))
            lines.append(f"  anvil {command}   # {example.title}")
    return "\n\n".join(lines)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"anvil {__version__}")
        raise typer.Exit()


def build_app(env: Mapping[str, str]) -> typer.Typer:
    """The whole CLI, derived from the registry."""
    from anvil.cli.render import render_result
    from anvil.cli.serve import serve

    app = typer.Typer(name="anvil", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                      help="anvil: the system of record for teams of AI coding agents.")

    @app.callback()
    def root(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
        """anvil: the system of record for teams of AI coding agents."""

    groups: dict[tuple[str, ...], typer.Typer] = {(): app}
    for op in all_operations():
        parent: tuple[str, ...] = ()
        for name in op.cli_path[:-1]:
            path = (*parent, name)
            if path not in groups:
                groups[path] = typer.Typer(no_args_is_help=True, help=GROUP_HELP.get(name, ""))
                groups[parent].add_typer(groups[path], name=name)
            parent = path
        groups[parent].command(name=op.cli_path[-1], help=op.cli_help or op.description,
                               epilog=_epilog(op, op_spec(op)),
                               short_help=op.description.split(". ")[0])(make_command(op, env, render_result))
    app.command(name="serve", help="Run anvil's MCP server (stdio by default, or Streamable HTTP with --http).")(serve)
    return app


def bare_mcp_means_stdio(args: list[str]) -> list[str]:
    """``--mcp`` with no value (last, or before another option) is ``--mcp stdio``."""
    out = list(args)
    for i, token in enumerate(out):
        if token == "--mcp" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out[i] = "--mcp=stdio"
    return out


def run_app(args: list[str], env: Mapping[str, str]) -> int:
    """Run the Typer app on ``args`` and turn every outcome into an exit code."""
    command = typer.main.get_command(build_app(env))
    as_json = "--json" in args
    args = bare_mcp_means_stdio(args)
    try:
        result = command.main(args=args, prog_name="anvil", standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else "", err=True)
        return 2
    except click_exceptions.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "anvil"
        # A value of the wrong type reads like any other invalid value; a malformed command line is "usage".
        code = "invalid_input" if isinstance(exc, click_exceptions.BadParameter) else "usage"
        return emit_error(UsageError(f"{exc.format_message()} (see '{where} --help')", code=code), as_json)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt, EOFError):
        return emit_error(AnvilError("interrupted", code="interrupted"), as_json)
    except AnvilError as error:
        return emit_error(error, as_json)
    return result if isinstance(result, int) else 0
