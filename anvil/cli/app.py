"""The Typer app, generated from the operation contract.

Each operation becomes one command at its CLI path; its input fields become arguments and
options from the same :class:`~anvil.ops.contract.ParamSpec` the fast path reads, so both parsers
agree on every flag. Every command also takes ``--json``, ``--mcp [TARGET]`` and
``--mcp-token-env NAME``. Nothing here prints an error: failures are raised as
:class:`~anvil.engine.errors.AnvilError` to the CLI's one error boundary (:mod:`anvil.cli.main`).
"""

from __future__ import annotations

import errno
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import typer
from typer._click import exceptions as click_exceptions

from anvil import __version__
from anvil.cli.output import run_call, show
from anvil.cli.routing import resolve_route
from anvil.engine.errors import UsageError
from anvil.engine.storage.paths import current_directory
from anvil.ops.contract import QUIET_EMPTY_EXIT, OpSpec, ParamSpec
from anvil.ops.registry import Operation, all_operations
from anvil.ops.specgen import op_spec
from anvil.ops.validation import validate_input

GROUP_HELP = {
    "bundle": "Plan, claim, review and deliver execution bundles (milestones of tasks).",
    "prd": "Parse, assess and review the PRD.",
    "review": "Review planned tasks.",
    "token": "Issue, list and revoke per-agent bearer tokens for the HTTP server.",
    "trust": "The trust list: Ed25519 keys whose signatures name who asserted a proof (never verified).",
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


QUIET_PARAM = inspect.Parameter("quiet_", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                default=typer.Option(False, "--quiet", "-q", help="Print only the id; exit 3 when "
                                                                                   "there is none."))


def _typer_parameter(param: ParamSpec) -> inspect.Parameter:
    help_text = param.help + (f" One of: {', '.join(param.choices)}." if param.choices else "")
    if param.is_list:
        annotation: Any = list[str] | None
        default: Any = ... if param.positional and param.required else None
    else:
        optional = param.nullable or param.name == "actor" or (param.kind == "bool" and param.required)
        annotation = PY_TYPES[param.kind] | None if optional else PY_TYPES[param.kind]
        # Checked after parsing, so the message can name the flag or both flags of a pair.
        default = None if optional and (param.name == "actor" or param.required) else (
            ... if param.required else param.default)
    if param.positional:
        info = typer.Argument(default, help=help_text, show_default=False, metavar=param.name.upper())
    elif param.kind == "bool":
        decl = param.flag + (f"/{param.off_flag}" if param.off_flag else "")
        info = typer.Option(default, decl, help=help_text)
    else:
        metavar = "SOURCE:TARGET" if param.kind == "pairs" else None
        info = typer.Option(default, param.flag, help=help_text, metavar=metavar,
                            show_default=default not in (None, "", []))
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=info)


def cli_names(spec: OpSpec) -> dict[str, str]:
    """How the CLI names each input in messages: its flag, or its argument's name."""
    return {p.name: p.name.upper() if p.positional else p.flag for p in spec.params}


def _collect_input(op: Operation, spec: OpSpec, values: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    raw: dict[str, Any] = {}
    for param in spec.params:
        value = values.get(param.name)
        if param.is_list:
            value = list(value or []) or (None if param.default is None and not param.required else [])
            if param.kind == "pairs":
                pairs = []
                for item in value or []:
                    source, sep, target = item.partition(":")
                    if not sep or not source or not target or ":" in target:
                        raise UsageError(f"{param.flag} takes SOURCE:TARGET pairs", code="invalid_input")
                    pairs.append([source, target])
                value = pairs or value
        if param.name == "actor" and value is None:
            value = env.get("ANVIL_ACTOR", "").strip() or None
            if value is None and param.required:
                raise UsageError("missing actor: pass --actor NAME or set ANVIL_ACTOR", code="missing_actor")
        if param.kind == "bool" and param.required and value is None:
            pair = f"{param.flag} or {param.off_flag}" if param.off_flag else param.flag
            raise UsageError(f"{' '.join(op.cli_path)} needs a decision: pass {pair}", code="invalid_input")
        raw[param.name] = value
    return validate_input(op, raw, names=cli_names(spec))


def make_command(op: Operation, env: Mapping[str, str]) -> Callable[..., int]:
    spec = op_spec(op)

    def command(**values: Any) -> int:
        as_json = bool(values.pop("json_"))
        quiet = bool(values.pop("quiet_", False))
        route = resolve_route(values.pop("mcp_"), values.pop("mcp_token_env_"), env)
        args = _collect_input(op, spec, values, env)
        code, result, paste = run_call(spec, args, route=route, as_json=as_json, env=env, cwd=current_directory())
        if as_json:
            empty = quiet and op.quiet_field and result.get(op.quiet_field) is None
            return QUIET_EMPTY_EXIT if empty else code
        return show(spec, result, args, code, env, quiet=quiet, paste=paste)

    extra = [QUIET_PARAM] if op.quiet_field else []
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_typer_parameter(p) for p in spec.params] + COMMON_PARAMS + extra)
    command.__name__ = op.name
    return command


def _epilog(op: Operation) -> str:
    import shlex

    from anvil.ops.cliargs import cli_argv_for

    lines = [f"MCP tool: {op.name} ({op.surface}, {op.effect}).", "Examples:"]
    for example in op.examples:
        if example.error is None:
            command = " ".join(shlex.quote(a) for a in cli_argv_for(op_spec(op), example.input))
            lines.append(f"  anvil {command}   # {example.title}")
    return "\n\n".join(lines)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"anvil {__version__}")
        raise typer.Exit()


def build_app(env: Mapping[str, str]) -> typer.Typer:
    """The whole CLI, derived from the registry."""
    from anvil.cli.install import register_install
    from anvil.cli.mcp_config import register_mcp_config
    from anvil.cli.serve import register_client_commands, register_serve

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
        groups[parent].command(name=op.cli_path[-1], help=op.cli_help or op.description, epilog=_epilog(op),
                               short_help=op.description.split(". ")[0])(make_command(op, env))
    register_serve(app)
    register_mcp_config(app)
    register_install(app)
    register_client_commands(app)
    return app


def bare_mcp_means_stdio(args: list[str]) -> list[str]:
    """``--mcp`` with no value (last, or before another option) is ``--mcp stdio``."""
    out = list(args)
    for i, token in enumerate(out):
        if token == "--mcp" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out[i] = "--mcp=stdio"
    return out


KIND_WORDS = {"int": "must be a whole number", "float": "must be a number", "bool": "must be true or false"}


def _bad_value(exc: Any, args: list[str]) -> str:
    """``--limit must be a whole number``: the flag (or argument) and the rule, never the value given."""
    from anvil.cli.fast import find_operation

    found = find_operation(args)
    name = getattr(getattr(exc, "param", None), "name", None)
    for param in found[0].params if found else ():
        if param.name == name:
            shown = param.name.upper() if param.positional else param.flag
            return f"{shown} {KIND_WORDS.get(param.item or param.kind, 'is not valid')}"
    return str(exc.format_message())


def run_app(args: list[str], env: Mapping[str, str]) -> int:
    """Run the Typer app on ``args`` and return the exit code.

    Raises:
        AnvilError: the command failed, or the command line is not valid (``usage`` /
            ``invalid_input``, exit 2).
    """
    command = typer.main.get_command(build_app(env))
    args = bare_mcp_means_stdio(args)
    try:
        result = command.main(args=args, prog_name="anvil", standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError:
        from anvil.cli.helptext import help_for

        typer.echo(help_for(args) or help_for([]), err=True, nl=False)
        return 2
    except click_exceptions.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "anvil"
        # A value of the wrong type reads like any other invalid value; a malformed command line is "usage".
        if isinstance(exc, click_exceptions.BadParameter):
            raise UsageError(f"invalid input: {_bad_value(exc, args)} (see '{where} --help')",
                             code="invalid_input") from None
        raise UsageError(f"{exc.format_message()} (see '{where} --help')", code="usage") from None
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except typer.Abort:
        raise KeyboardInterrupt from None
    except SystemExit as exc:
        # Typer ends the process with 1 when stdout is a closed pipe; the boundary reports that as 141.
        cause = exc.__context__
        if isinstance(cause, OSError) and cause.errno == errno.EPIPE:
            raise BrokenPipeError(errno.EPIPE, "broken pipe") from None
        raise
    return result if isinstance(result, int) else 0
