"""Parsing a shipped skill's command lines with the CLI's own parsers (nothing runs): the check that a
renamed flag or a value the CLI refuses fails the build (``tests/ops/test_skillgen.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def check_parses(argv: Sequence[str]) -> str:
    """Parse ``anvil ARGV`` with the parser the CLI runs it with; returns what it runs (a tool name,
    or the command's words for a CLI-only command).

    Raises:
        AnvilError: the CLI refuses the command line (``usage`` / ``invalid_input``).
        ValueError: the line names no command.
    """
    args = list(argv)
    head = args[0] if args else ""
    from anvil.cli.app import CLIENT_COMMANDS, build_app

    if head in CLIENT_COMMANDS:
        typer_parse(build_app({}, args[:1]), args)
        return " ".join(args[:2] if head in ("proof", "keys", "db") else args[:1])
    from anvil.cli.fast import check_flag_pairs, parse_fast
    from anvil.ops.cliflags import expand_git_shortcuts

    args = expand_git_shortcuts(args)
    check_flag_pairs(args)
    call = parse_fast(args, {"ANVIL_ACTOR": "someone"})
    typer_parse(build_app({}, args[:1]), args)  # the Typer app takes every command line the fast parser takes, and more
    if call is None:
        raise ValueError(f"the fast parser does not take 'anvil {' '.join(argv)}'")
    return call.op.name


def typer_parse(app: Any, args: list[str]) -> None:
    """Parse ``args`` with the Typer app down to its command (nothing runs).

    Raises:
        UsageError: ``usage`` when the app refuses the command line.
    """
    import typer
    from typer._click import exceptions as click_exceptions

    from anvil.engine.errors import UsageError

    command: Any = typer.main.get_command(app)
    words = list(args)
    name = "anvil"
    try:
        while True:
            context = command.make_context(name, list(words), resilient_parsing=False)
            if not hasattr(command, "resolve_command"):
                return
            protected = vars(context).get("_protected_args") or vars(context).get("protected_args") or []
            name, command, words = command.resolve_command(context, [*protected, *context.args])
    except click_exceptions.UsageError as exc:
        raise UsageError(f"{exc.format_message()} (in 'anvil {' '.join(args)}')", code="usage") from None
