"""Writing results and errors: one JSON document on stdout, or people-facing text."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from anvil.engine.errors import AnvilError, InternalError
from anvil.ops.contract import QUIET_EMPTY_EXIT, OpSpec


def dump_json(document: Any) -> str:
    """The exact ``--json`` text: sorted keys, so every path prints the same bytes."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def emit_json(document: Any) -> None:
    sys.stdout.write(dump_json(document))
    sys.stdout.flush()


def emit(document: Any, as_json: bool, text: Callable[[Any], list[str]]) -> None:
    """``document`` on stdout: the one JSON document with ``as_json``, else its lines for people (``text``)."""
    if as_json:
        emit_json(document)
    else:
        sys.stdout.write("\n".join(text(document)) + "\n")


def report_error(error: AnvilError, as_json: bool, argv: Sequence[str] = ()) -> int:
    """Report ``error`` (JSON envelope on stdout, or one line on stderr); returns its exit code.

    Called only by the CLI's error boundary (:func:`anvil.cli.main.main`). An error about one
    input (``details["field"]``) names the command's flag for it on the line.
    """
    if as_json:
        document = error.to_wire()
        details = document["error"].get("details")
        if isinstance(details, dict) and _command_lists(details.get("next_commands")):
            cd, commands = pasteable(details["next_commands"], details, argv)
            document["error"]["details"] = {**details, "cd": cd, "next_commands": commands}
        emit_json(document)
    else:
        sys.stderr.write(error_line(error, argv) + "\n")
        sys.stderr.flush()
    return error.exit_code


def error_line(error: AnvilError, argv: Sequence[str] = ()) -> str:
    """The one line a person reads: the message, the flag of the input it is about, the code, and for
    an error naming the command that fixes it (``details["next_command"]``) on a routed call, that
    command with the same route flags."""
    details = error.details if isinstance(error.details, dict) else {}
    field = details.get("field")
    if isinstance(field, str):
        flag = flag_for(argv, field)
        if flag and flag not in error.message:
            return f"anvil: error: {error.message} ({flag}) [{error.code}]"
    fix = details.get("next_command")
    routing = route_flags(argv)
    if isinstance(fix, list) and all(isinstance(word, str) for word in fix) and routing:
        import shlex

        cut = fix.index("--") if "--" in fix else len(fix)  # what follows -- is the command a proof runs
        return f"anvil: error: {error.message} (run: {shlex.join([*fix[:cut], *routing, *fix[cut:]])}) [{error.code}]"
    commands = details.get("next_commands")
    if isinstance(commands, list) and _command_lists(commands):
        import shlex

        cd, adapted = pasteable(commands, details, argv)
        lines = [f"cd {shlex.quote(cd)}", *(shlex.join(c) for c in adapted)]
        return error.line() + "\n" + "\n".join(f"  {line}" for line in lines)
    return error.line()


def _command_lists(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(c, list) and all(isinstance(w, str) for w in c) for c in value)


def pasteable(commands: list[list[str]], details: Mapping[str, Any], argv: Sequence[str]
              ) -> tuple[str, list[list[str]]]:
    """An error's ``next_commands`` as they work pasted after the call ``argv`` made: the directory
    they run in (the claim's tree, else this one), and each command with the call's route flags and
    without ``--actor`` when the call named nobody (ANVIL_ACTOR or a token said who, and says it
    again for the pasted command)."""
    import os

    routing = route_flags(argv)
    options = list(argv[:list(argv).index("--")] if "--" in argv else argv)
    named = any(word == "--actor" or word.startswith("--actor=") for word in options)
    where = str(details["cd"]) if isinstance(details.get("cd"), str) else os.getcwd()
    out = []
    for command in commands:
        if command[:1] == ["anvil"]:
            cut = command.index("--") if "--" in command else len(command)
            head = command[:cut]
            if not named and "--actor" in head:
                at = head.index("--actor")
                head = head[:at] + head[at + 2:]
            command = [*head, *routing, *command[cut:]]
        out.append(command)
    return where, out


def route_flags(argv: Sequence[str]) -> list[str]:
    """The ``--mcp [TARGET]`` and ``--mcp-token-env NAME`` flags of a command line (before any ``--``)."""
    words = list(argv[:list(argv).index("--")] if "--" in argv else argv)
    out: list[str] = []
    for word, following in zip(words, [*words[1:], None], strict=True):
        if word.startswith(("--mcp=", "--mcp-token-env=")) or word in ("--mcp", "--mcp-token-env"):
            out.append(word)
            if word in ("--mcp", "--mcp-token-env") and following is not None and (
                    word == "--mcp-token-env" or not following.startswith("-")):
                out.append(following)
    return out


def flag_for(argv: Sequence[str], field: str) -> str | None:
    """How the command in ``argv`` takes the input ``field`` (``--reason``, or ``TASK_ID``)."""
    from anvil.cli.fast import find_operation

    found = find_operation(argv)
    if found is None:
        return None
    for param in found[0].params:
        if param.name == field:
            return param.name.upper() if param.positional else param.flag
    return None


def run_call(op: OpSpec, args: dict[str, Any], *, route: Any, as_json: bool, env: Mapping[str, str],
             cwd: str, fast: bool = False) -> tuple[int, dict[str, Any], Any]:
    """Invoke ``op`` on the routed backend; print the JSON document, or return the output for rendering.

    The commands the result names for pasting (a claim's continuation, the packet's next commands)
    are made to work on this call's route first (:mod:`anvil.cli.hints`), ``--json`` or not; the
    third value says how (:class:`anvil.cli.hints.Paste`, for the hints :func:`show` prints).

    Raises:
        AnvilError: the call failed (reported by the CLI's error boundary).
    """
    from anvil.cli.backend import backend_for

    if op.local_files:
        from anvil.cli.localfiles import read_local_files

        args = read_local_files(op, args, cwd, env)
    if op.base64_files:
        from anvil.cli.artifactfiles import read_base64_files

        args = read_base64_files(op, args, cwd)
    backend = backend_for(route, env, cwd, fast=fast)
    # The caller's git side (gitflow.GIT_OPERATIONS). A stdio server runs on this machine and reads a
    # submission's commit (and cleans up after a release) itself, so those stay one call over stdio
    # (one server process).
    local = op.name in ("submit_completion_evidence", "release_task") and (route is None or route.kind != "stdio")
    if op.name in ("claim_task", "claim_next_task") or local:
        from anvil.ops.contract import spec_named
        from anvil.ops.gitflow import with_git

        result = with_git(op, args, lambda name, call: backend.invoke(spec_named(name), call), cwd)
    elif route is None and not sys.stderr.closed and sys.stderr.isatty():
        from anvil.cli.progress import Bar
        from anvil.engine.progress import reporting

        bar = Bar()
        try:
            with reporting(bar):
                result = backend.invoke(op, args)
        finally:
            bar.close()
    else:
        result = backend.invoke(op, args)
    from anvil.cli.hints import Paste, adapt_result, call_directory, token_actor

    reported = getattr(backend, "token_actor", None)  # who the server's token check said the caller is
    paste = Paste(route, call_directory(cwd, args.get("cwd")), token_actor(result, reported))
    result = adapt_result(op.name, result, paste)
    if as_json:
        emit_json(result)
    return result_exit_code(op, result), result, paste


def show(op: OpSpec, args: dict[str, Any], *, route: Any, as_json: bool, quiet: bool, env: Mapping[str, str],
         cwd: str, fast: bool = False) -> int:
    """Run ``op`` (:func:`run_call`) and print its result for people unless ``--json`` printed it; returns
    the exit code. ``-q`` (``quiet``) prints only the id of the operation's quiet field, and exits 3 when
    that field is null (with ``--json`` too).

    Raises:
        AnvilError: the call failed (reported by the CLI's error boundary).
        InternalError: the result could not be displayed (the call itself succeeded).
    """
    code, result, paste = run_call(op, args, route=route, as_json=as_json, env=env, cwd=cwd, fast=fast)
    if quiet and op.quiet_field:
        found = result.get(op.quiet_field)
        if found is None:
            return QUIET_EMPTY_EXIT
        if not as_json:
            sys.stdout.write(f"{found.get('task_id', found.get('id', '')) if isinstance(found, dict) else found}\n")
        return code
    if as_json:
        return code
    from anvil.cli.render import View, render
    from anvil.cli.tables import screen_for

    try:
        lines = render(op.name, result, View(screen_for(sys.stdout, env), args, env, paste))
    except Exception as exc:  # the call succeeded; only showing it failed
        if env.get("ANVIL_DEBUG"):
            import traceback

            traceback.print_exc()
        raise InternalError(f"the result could not be displayed ({type(exc).__name__}); rerun with --json",
                            code="render_failed") from exc
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return code


def result_exit_code(op: OpSpec, result: dict[str, Any]) -> int:
    """0, or the operation's failure exit code when its output reports a failure (see the registry)."""
    if op.failure is None:
        return 0
    field, code = op.failure
    negate = field.startswith("!")
    value = bool(result.get(field.lstrip("!")))
    return code if value != negate else 0
