"""The Typer app: the one definition of the command line, generated from the operation contract.

Each operation becomes one command at its CLI path; its input fields become arguments and options
from the same :class:`~anvil.ops.contract.ParamSpec` the fast path reads, so both parsers agree on
every flag; the flags every command shares come from :mod:`anvil.ops.cliflags`. The commands that run
on the caller's machine (serve, db, proof, attest, keys, mcp-config, install, verify-task, land)
are Typer commands of their modules, registered here. Help is Typer's Rich help, commands grouped
in panels; usage errors go through :mod:`anvil.cli.errormap`; shell completion completes commands,
ids from the project and the choices of an input.

Building every command costs more than a whole direct call, so :func:`build_app` builds only the
group or command the command line names; the others are listed by name and summary.
Nothing here prints an error: failures are raised as :class:`~anvil.engine.errors.AnvilError` to
the CLI's one error boundary (:mod:`anvil.cli.main`).
"""

from __future__ import annotations

import inspect
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import redirect_stdout
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from anvil import __version__
from anvil.cli.errormap import BareGroup, run_command
from anvil.cli.output import show
from anvil.cli.routing import resolve_route
from anvil.engine.errors import Interrupted, UsageError
from anvil.engine.storage.paths import current_directory
from anvil.ops import cliflags as flags
from anvil.ops.contract import OpSpec, ParamSpec, load_specs

SUMMARY = "anvil: the system of record for teams of AI coding agents."
GROUP_HELP = {
    "bundle": "Plan, claim, review and deliver execution bundles (milestones of tasks).",
    "prd": "Parse, assess and review the PRD.",
    "review": "Review planned tasks.",
    "token": "Issue, list and revoke per-agent bearer tokens for the HTTP server.",
    "trust": "The trust list: Ed25519 keys whose signatures name who asserted a proof (never verified).",
    "proof": "Prove a verification command: run it in the claim's tree, write a bound artifact.",
    "keys": "Ed25519 signing keys for proofs and attestations.",
    "db": "Where the project's state lives (copy it into PostgreSQL).",
}
SETUP, PLANNING, WORK, BUNDLES = "Set up and look around", "PRD and planning", "Work on tasks", "Execution bundles"
PANELS = {"anvil.ops.handlers.project": SETUP, "anvil.ops.handlers.planning": PLANNING,
          "anvil.ops.handlers.bundles": BUNDLES}
"""The panel of each handler module's commands in ``anvil --help`` (any other: Work on tasks)."""
CLIENT_COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("anvil.cli.serve", SETUP), "mcp-config": ("anvil.cli.mcp_config", SETUP),
    "install": ("anvil.cli.install", SETUP), "db": ("anvil.cli.dbcommand", SETUP),
    "proof": ("anvil.cli.client", WORK), "attest": ("anvil.cli.client", WORK), "keys": ("anvil.cli.client", WORK),
    "verify-task": ("anvil.cli.verifier", WORK), "land": ("anvil.cli.lander", WORK),
}
"""Commands that are not operations: the module whose ``register(app, group, panel)`` adds them, and their panel."""
WORKFLOW = (
    ("export ANVIL_ACTOR=lead", "who you are (or --actor NAME)"),
    ("anvil init", "once per project"),
    ("anvil prd parse --file docs/prd.md", "docs/prd-format.md"),
    ("anvil prd review && anvil prd review --approve", "review, approve"),
    ("anvil plan && anvil score && anvil review tasks", "tasks become ready"),
    ("export ANVIL_ACTOR=agent-1", "an agent takes work"),
    ("anvil next", "the best task now"),
    ("anvil claim T001 --worktree", "note the generation; in git: a worktree"),
    ("git commit -am 'T001: ...'", "in git: the branch head is handed in"),
    ("anvil proof run T001 --generation 1 -- CMD", "prove each verification command"),
    ("anvil submit T001 --proof FILE --generation 1", "hand in the proofs for review"),
    ("ANVIL_ACTOR=runner-1 anvil verify-task T001", "someone else re-proves that commit"),
    ("ANVIL_ACTOR=lead anvil apply T001 --approve", "or --reject --reason"),
)
ENVIRONMENT = (
    ("ANVIL_ACTOR", "who acts when --actor is not given"),
    ("ANVIL_ROOT", "the project root (default: the git main worktree around the working directory)"),
    ("ANVIL_STATE_LAYOUT", "'local' keeps state in <project>/.anvil/"),
    ("ANVIL_MCP_TARGET", "run every command through MCP (stdio or a URL) unless --mcp says otherwise"),
    ("NO_COLOR", "plain text on a terminal too"),
)
METAVARS = {"actor": "NAME", "reviewer": "NAME", "claimed_by": "NAME", "expected_files": "PATH",
            "files_changed": "PATH", "proposed_files": "PATH", "file": "PATH", "commands_run": "COMMAND",
            "idempotency_key": "KEY", "cursor": "CURSOR", "lease_duration_seconds": "SECONDS",
            "extend_seconds": "SECONDS", "wait_seconds": "SECONDS", "notes": "TEXT", "reason": "TEXT",
            "detail": "TEXT", "description": "TEXT", "output_excerpt": "TEXT", "pr_url": "URL",
            "commit_sha": "SHA", "limit": "N", "generation": "N", "expected_revision": "N", "name": "TEXT"}
PATH_LISTS = frozenset({"expected_files", "files_changed", "proposed_files"})
PY_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool}
ID_KINDS = {"task_id": "task", "task_ids": "task", "feature_id": "feature", "bundle_id": "bundle"}
CLI_ONLY = {"get_board": (("--watch", "On a terminal, stay on screen and redraw on every change (woken by the write "
                                      "that makes it, not by polling); piped, print once. Ctrl-C stops."),)}
"""Flags the command line reads before parsing (not inputs of the operation), shown in the command's help."""


def escaped(text: str) -> str:
    """``text`` for Rich markup (``--worktree[=PATH]`` stays as typed)."""
    return text.replace("[", r"\[")


# --- help: Typer's Rich help, with the extra panels of a command ----------------------------------------


def print_panels(panels: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
    """Print titled two-column panels after Typer's own (examples, environment, exit codes)."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    console = rich_utils._get_rich_console()
    for title, rows in panels:
        if title == "":
            for left, _ in rows:
                console.print(Text(" " + left))
            continue
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)  # a command line stays whole, so it pastes
        table.add_column()
        for left, right in rows:
            table.add_row(Text(left), Text(right))
        console.print(Panel(table, title=title, title_align="left", border_style="dim"))


def with_panels(base: type[Any], panels: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> type:
    """``base`` (a Typer command or group class) printing ``panels`` after its help, and reporting Ctrl-C
    as the boundary's ``interrupted`` (Typer itself would turn it into a plain exit 130)."""

    def format_help(self: Any, ctx: Any, formatter: Any) -> None:
        base.format_help(self, ctx, formatter)
        print_panels(panels)

    def invoke(self: Any, ctx: Any) -> Any:
        try:
            return base.invoke(self, ctx)
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None

    def parse_args(self: Any, ctx: Any, args: list[str]) -> Any:
        if not args and getattr(self, "no_args_is_help", False) and not ctx.resilient_parsing:
            raise BareGroup(ctx)
        return base.parse_args(self, ctx, args)

    return type(base.__name__, (base,), {"format_help": format_help, "invoke": invoke, "parse_args": parse_args})


def pasteable(words: Sequence[str], width: int) -> list[str]:
    """A command line in lines of at most ``width``, broken only between words, each line but the last
    ending in a shell backslash, so the whole still pastes as one command."""
    lines: list[str] = []
    line = ""
    for word in (shlex.quote(w) for w in words):
        if line and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def for_people(text: str, specs: Sequence[OpSpec]) -> str:
    """``text`` with MCP tool names replaced by the commands that run them (``get_task`` -> ``anvil show``)."""
    names = {spec.name: "anvil " + " ".join(spec.cli_path) for spec in specs}
    return re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda m: names.get(m.group(0), m.group(0)), text)


def _root_panels() -> list[tuple[str, Sequence[tuple[str, str]]]]:
    from anvil.engine.error_codes import EXIT_CODES

    codes = [(str(code.exit_code), code.title) for code in EXIT_CODES]
    return [("A first run", WORKFLOW), ("Environment", ENVIRONMENT),
            ("Exit codes (docs/errors.md lists every error code)", codes)]


# --- completion -------------------------------------------------------------------------------------------


def completer(kind: str) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        try:  # a hint while typing: never an error on the terminal
            from anvil.ops.lookup import complete_ids

            return list(complete_ids(kind, incomplete).values)  # type: ignore[arg-type]
        except Exception:
            return []

    return complete


def _complete_choices(choices: Sequence[str]) -> Callable[[str], list[str]]:
    return lambda incomplete: [c for c in choices if c.startswith(incomplete)]


# --- operations as commands -------------------------------------------------------------------------------


def option(flag: flags.Flag, panel: str | None = flags.PANEL, **extra: Any) -> Any:
    """One flag of :mod:`anvil.ops.cliflags` as a Typer option (the default of a command's parameter)."""
    settings: dict[str, Any] = {"help": flag.help, "rich_help_panel": panel, "metavar": flag.metavar or "", **extra}
    return typer.Option(False if flag.metavar is None else None, *flag.names, **settings)


def keyword(name: str, info: Any, annotation: Any = str | None) -> inspect.Parameter:
    """A keyword parameter of a Typer command declared from data (``info``: its ``typer.Option`` or ``Argument``)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=info)


def shared_option(flag: flags.Flag, panel: str | None = flags.PANEL, **extra: Any) -> inspect.Parameter:
    """One flag of :mod:`anvil.ops.cliflags` as a keyword parameter of a generated Typer command."""
    return keyword(flag.param, option(flag, panel, **extra), bool if flag.metavar is None else str | None)


def with_signature(command: Callable[..., int], params: Sequence[inspect.Parameter]) -> Callable[..., int]:
    """``command(**values)`` with the parameters Typer reads its command line from."""
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return command


def _metavar(param: ParamSpec) -> str | None:
    if param.kind == "pairs":
        return "SOURCE:TARGET"
    if param.choices:
        joined = "|".join(param.choices)
        return joined if len(joined) <= 32 else "VALUE"
    return METAVARS.get(param.name, {"int": "N", "float": "NUMBER"}.get(param.item or param.kind, "TEXT"))


def _typer_parameter(param: ParamSpec) -> inspect.Parameter:
    notes = [param.help.rstrip(".") + "." if param.help else ""]
    if param.choices:
        notes.append(f"One of: {', '.join(param.choices)}.")
    if param.is_list and not param.positional:
        notes.append("Repeatable" + ("; a comma separates paths too (--file a.py,b.py)." if param.name in PATH_LISTS
                                     else "."))
    help_text = escaped(" ".join(n for n in notes if n))
    if param.is_list:
        annotation: Any = list[str] | None
        default: Any = ... if param.positional and param.required else None
    else:
        optional = param.nullable or param.name == "actor" or (param.kind == "bool" and param.required)
        annotation = PY_TYPES[param.kind] | None if optional else PY_TYPES[param.kind]
        # Checked after parsing, so the message can name the flag or both flags of a pair.
        default = None if optional and (param.name == "actor" or param.required) else (
            ... if param.required else param.default)
    kind = ID_KINDS.get(param.name)
    completion: dict[str, Any] = {"autocompletion": completer(kind)} if kind else (
        {"autocompletion": _complete_choices(param.choices)} if param.choices else {})
    panel = flags.PANEL if param.reserved else None
    if param.positional:
        info = typer.Argument(default, help=help_text, show_default=False, metavar=param.name.upper(), **completion)
    elif param.kind == "bool":
        decl = param.flag + (f"/{param.off_flag}" if param.off_flag else "")
        info = typer.Option(default, decl, help=help_text, rich_help_panel=panel, metavar="")
    else:
        info = typer.Option(default, param.flag, help=help_text, metavar=_metavar(param), rich_help_panel=panel,
                            show_default=default not in (None, "", []), **completion)
    return keyword(param.name, info, annotation)


def cli_names(spec: OpSpec) -> dict[str, str]:
    """How the CLI names each input in messages: its flag, or its argument's name."""
    return {p.name: p.name.upper() if p.positional else p.flag for p in spec.params}


def _collect_input(spec: OpSpec, values: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    from anvil.cli.fast import convert
    from anvil.ops.registry import get_operation as operation
    from anvil.ops.validation import validate_input

    raw: dict[str, Any] = {}
    for param in spec.params:
        value = values.get(param.name)
        if param.is_list:
            value = list(value or []) or (None if param.default is None and not param.required else [])
            if param.kind == "pairs":
                try:
                    value = [convert(param, item) for item in value or []] or value
                except ValueError:
                    raise UsageError(f"{param.flag} takes SOURCE:TARGET pairs", code="invalid_input") from None
        if param.name == "actor" and value is None:
            value = env.get("ANVIL_ACTOR", "").strip() or None
            if value is None and param.required:
                raise UsageError("missing actor: pass --actor NAME or set ANVIL_ACTOR", code="missing_actor")
        if param.kind == "bool" and param.required and value is None:
            pair = f"{param.flag} or {param.off_flag}" if param.off_flag else param.flag
            raise UsageError(f"{' '.join(spec.cli_path)} needs a decision: pass {pair}", code="invalid_input")
        raw[param.name] = value
    return validate_input(operation(spec.name), raw, names=cli_names(spec))


def make_command(spec: OpSpec, env: Mapping[str, str]) -> Callable[..., int]:
    def command(**values: Any) -> int:
        as_json = bool(values.pop(flags.JSON.param))
        quiet = bool(values.pop(flags.QUIET.param, False))
        route = resolve_route(values.pop(flags.MCP.param), values.pop(flags.MCP_TOKEN_ENV.param), env)
        return show(spec, _collect_input(spec, values, env), route=route, as_json=as_json, quiet=quiet, env=env,
                    cwd=current_directory())

    extra = [shared_option(flags.QUIET, None)] if spec.quiet_field else []
    command.__name__ = spec.name
    return with_signature(command, [_typer_parameter(p) for p in spec.params] + extra +
                          [shared_option(f) for f in flags.COMMON])


def _command_panels(spec: OpSpec) -> list[tuple[str, Sequence[tuple[str, str]]]]:
    from typer import rich_utils

    from anvil.ops.cliargs import cli_argv_for
    from anvil.ops.registry import get_operation as operation

    op = operation(spec.name)
    width = min(rich_utils._get_rich_console().width, 100)
    panels: list[tuple[str, Sequence[tuple[str, str]]]] = []
    if spec.cli_path[0] in flags.CLAIM_COMMANDS:
        panels.append(("Git shortcuts", [(f"{f.names[0]}{f.metavar or ''}", f.help) for f in flags.GIT_SHORTCUTS]))
    if spec.name in CLI_ONLY:
        panels.append(("Terminal", CLI_ONLY[spec.name]))
    examples: list[tuple[str, str]] = []
    for example in op.examples:
        if example.error is None:
            examples.append((f"# {example.title}", ""))
            examples += [(line, "") for line in pasteable(["anvil", *cli_argv_for(spec, example.input)], width - 4)]
    if examples:
        panels.append(("Examples", examples))
    panels.append(("", [(f"MCP tool: {spec.name} ({spec.surface}, {spec.effect}).", "")]))
    return panels


def _add_operation(parent: typer.Typer, spec: OpSpec, specs: Sequence[OpSpec], env: Mapping[str, str],
                   panel: str | None) -> None:
    from anvil.ops.registry import get_operation as operation

    op = operation(spec.name)
    help_text = for_people(op.cli_help or op.description, specs)
    if op.cli_help:
        help_text += "\n\n" + for_people(op.description, specs)
    parent.command(name=spec.cli_path[-1], help=escaped(help_text), rich_help_panel=panel,
                   short_help=escaped(for_people(_first_sentence(spec.description), specs)),
                   cls=with_panels(TyperCommand, _command_panels(spec)))(
        make_command(spec, env))


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".") + "."


def _listed(parent: typer.Typer, name: str, short_help: str, panel: str | None) -> None:
    """``name`` in the command list only (its definition is built when a command line names it)."""
    parent.command(name=name, short_help=escaped(short_help), help=escaped(short_help), rich_help_panel=panel,
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(_never_run)


def _never_run() -> int:  # pragma: no cover - build_app builds the real command whenever one is named
    raise AssertionError("a listed-only command ran")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"anvil {__version__}")
        raise typer.Exit()


def version_option() -> Any:
    """``--version`` (``-V``): print the version and exit, before anything else is parsed."""
    return typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")


def build_app(env: Mapping[str, str], words: Sequence[str] | None = None) -> typer.Typer:
    """The command line, derived from the registry: every command in full, or (given the command line's
    leading ``words``) the group or command they name in full and every other one only listed."""
    import importlib

    everything = words is None
    head = words[0] if words else None
    specs = load_specs()
    app = typer.Typer(name="anvil", no_args_is_help=True, pretty_exceptions_enable=False, help=SUMMARY,
                      cls=with_panels(TyperGroup, _root_panels() if head is None else ()))

    @app.callback()
    def root(version: bool = version_option()) -> None:
        """anvil: the system of record for teams of AI coding agents."""

    groups: dict[str, typer.Typer] = {}

    def group(name: str, panel: str | None) -> typer.Typer:
        if name not in groups:
            groups[name] = typer.Typer(no_args_is_help=True, help=escaped(GROUP_HELP[name]),
                                       cls=with_panels(TyperGroup, ()))
            app.add_typer(groups[name], name=name, rich_help_panel=panel)
        return groups[name]

    heads = {spec.cli_path[0] for spec in specs}
    listing = head is None or (head not in heads and head not in CLIENT_COMMANDS)  # the root's list, or a typo's
    listed: set[str] = set()
    for spec in specs:
        panel = PANELS.get(spec.handler.partition(":")[0], WORK)
        name = spec.cli_path[0]
        if everything or name == head:
            parent = group(name, panel) if len(spec.cli_path) > 1 else app
            _add_operation(parent, spec, specs, env, panel)
        elif name not in listed:
            listed.add(name)
            _listed(app, name, GROUP_HELP.get(name) or for_people(_first_sentence(spec.description), specs), panel)
    wanted = {module for name, (module, _) in CLIENT_COMMANDS.items() if everything or listing or name == head}
    for module in sorted(wanted):
        panel = next(panel for name, (where, panel) in CLIENT_COMMANDS.items() if where == module)
        importlib.import_module(module).register(app, group, panel)
    return app


def leading_words(args: Sequence[str]) -> list[str]:
    """The command words a command line starts with (``["prd", "parse"]``), before its first option."""
    words: list[str] = []
    for token in args:
        if token.startswith("-"):
            break
        words.append(token)
    return words


def _completion_words(env: Mapping[str, str]) -> list[str]:
    """The words of the command line a shell is completing (bash, zsh, fish and PowerShell hand them over
    in one of these variables)."""
    line = env.get("COMP_WORDS") or env.get("_TYPER_COMPLETE_ARGS") or ""
    try:
        return leading_words(shlex.split(line)[1:])
    except ValueError:
        return leading_words(line.split()[1:])


def help_on_stderr(ctx: Any) -> int:
    """A group called without its command: its help, on stderr, as a usage error."""
    with redirect_stdout(sys.stderr):
        ctx.get_help()
    return 2


def hide_switch_types(command: Any) -> None:
    """Leave the type column of every switch in ``command``'s tree empty: a switch takes no value, and
    Typer would print ``<bool>`` beside it (``--help`` and ``--install-completion`` included)."""
    from typer._click import Context

    for param in [*command.params, command.get_help_option(Context(command))]:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        hide_switch_types(sub)


def run_app(args: list[str], env: Mapping[str, str]) -> int:
    """Run the Typer app on ``args`` and return the exit code.

    Raises:
        AnvilError: the command failed, or the command line is not valid (``usage``,
            ``missing_input``, ``invalid_input``: exit 2).
    """
    import os

    completing = any(k.startswith("_ANVIL") and k.endswith("_COMPLETE") for k in os.environ)
    words = _completion_words(os.environ) if completing else leading_words(args)
    command = typer.main.get_command(build_app(env, words))
    hide_switch_types(command)
    try:
        return run_command(command, flags.bare_flags_valued(args), "anvil", help_on_stderr)
    except SystemExit as exc:  # completion answered the shell, or showed or installed its script
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
