"""The command line's one error map: every usage error Typer (click) raises becomes one AnvilError.

Like httpx's ``map_httpcore_exceptions``, a table read top to bottom, most specific type first (a
missing argument is a kind of bad parameter, which is a kind of usage error), so each message is
worded in one place. :func:`run_command` runs any Typer command line through it: the ``anvil``
app and ``python -m anvil.mcp`` alike.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer._click import exceptions as click_exceptions

from anvil.engine.errors import UsageError

ClickUsageError = click_exceptions.UsageError


class BareGroup(ClickUsageError):
    """A group called without its command (raised before Typer would print its help on stdout)."""

    def __init__(self, ctx: Any) -> None:
        super().__init__("missing command", ctx=ctx)


def shown_name(param: Any) -> str:
    """How the user typed (or would type) the parameter: ``TASK_ID`` or ``--limit``."""
    opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")] or list(getattr(param, "opts", ()))
    if getattr(param, "param_type_name", "") == "argument" or not opts:
        return str(getattr(param, "metavar", None) or getattr(param, "name", "") or "value").upper()
    return str(opts[0])


def _annotation(param: Any) -> Any:
    """The Python type a parameter converts to (``float | None`` and ``list[int]`` read as their item)."""
    import typing

    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    while typing.get_args(annotation):
        annotation = next((a for a in typing.get_args(annotation) if a is not type(None)), None)
    return annotation


def choices(param: Any) -> list[str] | None:
    """The values an enumerated parameter takes, else None."""
    import enum

    kind = _annotation(param)
    return [str(m.value) for m in kind] if isinstance(kind, type) and issubclass(kind, enum.Enum) else None


def allowed(param: Any) -> str:
    """What the parameter takes, in words: ``must be one of: a, b``, ``must be a whole number from 0 to 9``."""
    if (listed := choices(param)) is not None:
        return "must be one of: " + ", ".join(listed)
    words = {int: "a whole number", float: "a number", bool: "true or false"}.get(_annotation(param))
    if words is None:
        return "is not valid"
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    span = f" from {low:g} to {high:g}" if low is not None and high is not None else (
        f" of at least {low:g}" if low is not None else f" of at most {high:g}" if high is not None else "")
    return f"must be {words}{span}"


def _missing(exc: Any) -> str:
    if exc.param is None:
        return str(exc.format_message())
    listed = choices(exc.param)
    return f"{shown_name(exc.param)} is required" + (f" (one of: {', '.join(listed)})" if listed else "")


def _bad_value(exc: Any) -> str:
    # worded as the operations' own validation words it ("invalid input: --limit must be at least 1")
    return f"invalid input: {shown_name(exc.param)} {allowed(exc.param)}" if exc.param is not None \
        else f"invalid input: {exc.format_message()}"


def _as_click_says(exc: Any) -> str:
    return str(exc.format_message())


ERROR_MAP: Sequence[tuple[type[ClickUsageError], Callable[[str], UsageError], Callable[[Any], str]]] = (
    (click_exceptions.MissingParameter, lambda message: UsageError(message, code="missing_input"), _missing),
    # click's own wording, with its suggestion ("Did you mean --json?")
    (click_exceptions.NoSuchOption, lambda message: UsageError(message, code="usage"), _as_click_says),
    (click_exceptions.BadParameter, lambda message: UsageError(message, code="invalid_input"), _bad_value),
    (ClickUsageError, lambda message: UsageError(message, code="usage"), _as_click_says),
)
"""Click's usage errors, most specific first: (type, the anvil error it becomes, how its message is worded)."""


def mapped(exc: ClickUsageError) -> UsageError:
    """``exc`` as the AnvilError the command line reports, pointing at the help of the command it is about."""
    where = exc.ctx.command_path if exc.ctx else "anvil"
    for kind, error, words in ERROR_MAP:
        if isinstance(exc, kind):
            return error(f"{words(exc)} (see '{where} --help')")
    raise AssertionError("ERROR_MAP ends with click's UsageError, which every click usage error is")


def run_command(command: Any, args: list[str], prog: str, on_bare_group: Callable[[Any], int]) -> int:
    """Run a click command (a Typer app's) on ``args`` through the error map; returns the exit code.

    ``on_bare_group`` answers a group called without its command (it is handed the click context).

    Raises:
        AnvilError: a usage error (exit 2), or whatever the command raised.
        KeyboardInterrupt: the command was aborted.
        BrokenPipeError: stdout was closed under the help.
    """
    try:
        result = command.main(args=args, prog_name=prog, standalone_mode=False)
    except BareGroup as exc:
        return on_bare_group(exc.ctx)
    except ClickUsageError as exc:
        raise mapped(exc) from None
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
