"""The fast path and the Typer path agree on every command line, whatever it holds.

Hypothesis builds argument lists for every operation from the contract: valid values, values just
outside each bound, wrong types, edge numbers (``nan``, ``1e309``, ``-0``, ``1_000``, non-ASCII
digits), unicode and empty strings, repeated and unknown flags, ``--flag=value`` forms and MCP
routing flags. For each one the fast parser must either decline or produce exactly the input the
Typer path validates, and the exit code must not depend on ``--json``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import anvil.cli.app as app
import anvil.cli.output as output
from anvil.cli.fast import parse_fast
from anvil.cli.main import main
from anvil.ops.contract import OpSpec, ParamSpec, load_specs
from tests.conftest import LONG_TESTS, sized

SPECS = load_specs()
EDGE_NUMBERS = ["0", "-0", "1", "-1", "2", "3", "5", "6", "7", "365", "366", "900", "604800", "604801", "1.5", "0.5",
                "1e3", "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "1_000", " 5", "5 ", "+5", "0x10", "٣",
                "1.0", "", "9" * 30]
TEXT = st.one_of(
    st.sampled_from(["", " ", "a", "T001", "t001", "agent-1", "x" * 65, "x" * 101, "é", "\u200b", "-", "--",
                     "a:b", "a:b:c", ":b", "a:", "true", "false", "None"]),
    st.text(min_size=0, max_size=12),
)


def _value(param: ParamSpec) -> st.SearchStrategy[str]:
    kind = param.item if param.kind == "list" else param.kind
    options: list[st.SearchStrategy[str]] = [TEXT]
    if kind in ("int", "float"):
        bounds = [v for v in (param.ge, param.le, param.gt, param.lt) if v is not None]
        near = [str(type(b)(b) + d) for b in bounds for d in (-1, 0, 1)] if bounds else []
        options.append(st.sampled_from(EDGE_NUMBERS + near))
        options.append(st.integers(-10, 10**6).map(str))
        if kind == "float":
            options.append(st.floats(allow_nan=True, allow_infinity=True).map(repr))
    if param.choices:
        options.append(st.sampled_from([*param.choices, param.choices[0].upper(), param.choices[0] + " "]))
    if param.max_len is not None and kind == "str":
        options.append(st.sampled_from(["y" * param.max_len, "y" * (param.max_len + 1)]))
    return st.one_of(*options)


def _valid(param: ParamSpec) -> st.SearchStrategy[str]:
    """Values within every bound (the common case the fast path exists for)."""
    kind = param.item if param.kind == "list" else param.kind
    if param.choices:
        return st.sampled_from(param.choices)
    if kind in ("int", "float"):
        low = int(param.ge if param.ge is not None else (param.gt + 1 if param.gt is not None else 0))
        high = int(param.le if param.le is not None else (param.lt - 1 if param.lt is not None else low + 1000))
        return st.integers(low, max(low, high)).map(str)
    if param.kind == "pairs":
        return st.sampled_from(["T002:T001", "T003:T001"])
    return st.sampled_from(["T001", "agent-1", "some text", "src/x.py"])


def _any(param: ParamSpec) -> st.SearchStrategy[str]:
    return st.one_of(_valid(param), _valid(param), _value(param))


@st.composite
def command_lines(draw: st.DrawFn, spec: OpSpec) -> list[str]:
    argv = list(spec.cli_path)
    for param in spec.params:
        if not param.positional:
            continue
        count = draw(st.integers(0, 2)) if param.kind == "list" else draw(st.sampled_from([1, 1, 1, 0]))
        argv += [draw(_any(param)) for _ in range(count)]
    flags = [p for p in spec.params if not p.positional]
    for param in flags:
        if (param.required or param.name == "actor") and draw(st.integers(0, 3)):
            argv += [param.flag] if param.kind == "bool" else [param.flag, draw(_any(param))]
    for _ in range(draw(st.integers(0, 5))):
        choice = draw(st.integers(0, len(flags) + 3))
        if choice >= len(flags):
            argv += draw(st.sampled_from([["--bogus"], ["extra"], ["--mcp", "direct"], ["--mcp=off"], ["-q"],
                                          ["--mcp-token-env", "T"], ["--json"], ["--"]]))
            continue
        param = flags[choice]
        if param.kind == "bool":
            flag = draw(st.sampled_from([param.flag, param.off_flag or param.flag, param.flag + "=1"]))
            argv.append(flag)
        elif draw(st.booleans()):
            argv.append(f"{param.flag}={draw(_any(param))}")
        else:
            argv += [param.flag, draw(_any(param))]
    return argv


class Captured(BaseException):
    """Raised by the stubbed backend: the call got as far as running an operation (a BaseException, so
    no error boundary mistakes it for a failure)."""

    def __init__(self, args: dict[str, Any]) -> None:
        super().__init__("captured")
        self.args = args


_BUILT: dict[tuple[Any, ...], Any] = {}
_COMMANDS: dict[int, Any] = {}


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Replace the backend so nothing runs: the parsed input is captured instead.

    The Typer app is built once per environment (building it is most of a Typer call's cost; the
    tests share one project environment, ``module_anvil_env``, and pytest's own ``PYTEST_CURRENT_TEST``
    is no part of what an app is built for); everything else runs exactly as in ``run_app``.
    """
    seen: dict[str, Any] = {}
    build, get_command = app.build_app, app.typer.main.get_command

    def cached_build(env: Any, words: Any = None) -> Any:
        key = (*sorted((k, v) for k, v in env.items() if k != "PYTEST_CURRENT_TEST"), tuple(words or ("*",))[:1])
        if key not in _BUILT:
            _BUILT[key] = build(env, words)
        return _BUILT[key]

    def cached_command(typer_app: Any) -> Any:
        if id(typer_app) not in _COMMANDS:
            _COMMANDS[id(typer_app)] = get_command(typer_app)
        return _COMMANDS[id(typer_app)]

    monkeypatch.setattr(app, "build_app", cached_build)
    monkeypatch.setattr(app.typer.main, "get_command", cached_command)

    def capture(spec: OpSpec, args: dict[str, Any], **kwargs: Any) -> tuple[int, dict[str, Any], Any]:
        seen["args"] = args
        seen["route"] = kwargs.get("route")
        raise Captured(args)

    monkeypatch.setattr(output, "run_call", capture)  # both parsers' calls run through it
    yield seen


def run_quietly(argv: list[str]) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code: int | str = main(argv)
    except Captured:
        code = "ran"
    return code, out.getvalue(), err.getvalue()


def typer_result(argv: list[str], env: dict[str, str], seen: dict[str, Any]) -> tuple[int | str, Any]:
    seen.clear()
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code: int | str = app.run_app(list(argv), env)
    except Captured:
        return "ran", seen["args"]
    except Exception as exc:  # an AnvilError for the boundary
        return getattr(exc, "exit_code", 1), getattr(exc, "code", type(exc).__name__)
    return code, None


def assert_agrees(argv: list[str], env: dict[str, str], seen: dict[str, Any]) -> bool:
    """The fast parser declines ``argv``, or Typer runs the same operation with the same input and route.

    Returns whether the fast parser accepted it.
    """
    fast = parse_fast(argv, env)
    if fast is None:
        return False
    outcome, payload = typer_result(argv, env, seen)
    assert outcome == "ran", f"the fast path accepted {argv} but the Typer path ended with {outcome} {payload}"
    assert fast.args == payload, argv
    assert (fast.route.kind if fast.route else None) == (seen["route"].kind if seen["route"] else None), argv
    return True


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
# 15 generated command lines per operation in the everyday run (the edge sweep below stays exhaustive),
# 80 with ANVIL_LONG_TESTS=1
@settings(max_examples=sized(15, 80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_fast_parser_declines_or_agrees_with_typer(spec: OpSpec, data: st.DataObject,
                                                       module_anvil_env: dict[str, str],
                                                       stubbed: dict[str, Any]) -> None:
    drawn = data.draw(command_lines(spec))
    end = drawn.index("--") if "--" in drawn else len(drawn)
    output = ["--json"] if data.draw(st.booleans()) else []  # both parsers serve human output too
    argv = [*drawn[:end], *output, *drawn[end:]]
    env = dict(module_anvil_env)
    if data.draw(st.booleans()):
        env["ANVIL_ACTOR"] = data.draw(st.sampled_from(["agent-1", " spaced ", "x" * 101]))
    assert_agrees(argv, env, stubbed)


def minimal_argv(spec: OpSpec, without: str) -> list[str]:
    """A command line giving every required input (but ``without``) a valid value."""
    argv = list(spec.cli_path)
    for param in spec.params:
        if param.name == without or not (param.required or param.positional):
            continue
        value = param.choices[0] if param.choices else {"int": "1", "float": "0.5"}.get(param.item or param.kind,
                                                                                        "T001:T002" if param.kind
                                                                                        == "pairs" else "T001")
        if param.positional:
            argv.append(value)
        else:
            argv += [param.flag] if param.kind == "bool" else [param.flag, value]
    return argv


EDGES = [*EDGE_NUMBERS, "x", "x" * 4097, "\u200b", "agent-1 ", "a:b:c", "T001:T002", "ready", "READY"]


def _distinct_inputs() -> list[tuple[OpSpec, ParamSpec]]:
    """Every non-flag input of every operation with ANVIL_LONG_TESTS=1; in the everyday run, each
    distinct input spec once (in the first operation that has it: 88 of 255, the same parsing rules;
    the generated command lines above still cover every operation)."""
    every = [(spec, param) for spec in SPECS for param in spec.params if param.kind != "bool"]
    if LONG_TESTS:
        return every
    seen: set[tuple[str, ...]] = set()
    distinct = []
    for spec, param in every:
        key = tuple(repr(value) for field, value in zip(param._fields, param, strict=True) if field != "help")
        if key not in seen:
            seen.add(key)
            distinct.append((spec, param))
    return distinct


SWEEP = _distinct_inputs()


@pytest.mark.parametrize(("spec", "param"), SWEEP, ids=[f"{s.name}.{p.name}" for s, p in SWEEP])
def test_every_edge_value_of_every_input_is_declined_or_parsed_like_typer(
        spec: OpSpec, param: ParamSpec, module_anvil_env: dict[str, str], stubbed: dict[str, Any]) -> None:
    env = {**module_anvil_env, "ANVIL_ACTOR": "agent-1"}
    base = minimal_argv(spec, param.name)
    accepted = 0
    for value in [*EDGES, *(param.choices or ())]:
        placed = [value] if param.positional else [param.flag, value]
        accepted += assert_agrees([*base, *placed, "--json"], env, stubbed)
        if not param.positional:
            accepted += assert_agrees([*base, f"{param.flag}={value}", "--json"], env, stubbed)
    assert accepted, f"no edge value of {spec.name}.{param.name} took the fast path: the sweep proves nothing"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@settings(max_examples=sized(10, 50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_json_never_changes_the_exit_code(spec: OpSpec, data: st.DataObject, module_anvil_env: dict[str, str],
                                          stubbed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # "--" ends the options (after it "--json" would be an argument), so it is left out here.
    argv = [a for a in data.draw(command_lines(spec)) if a not in ("--json", "--")]
    valued = {p.flag for p in spec.params if not p.positional and p.kind != "bool"} | {"--mcp", "--mcp-token-env"}
    assume(not argv or argv[-1] not in valued)  # else an appended "--json" is that option's value, not a flag
    human_code, _, human_err = run_quietly(argv)
    json_code, json_out, _ = run_quietly([*argv, "--json"])
    assert human_code == json_code, (argv, human_err)
    if isinstance(json_code, int) and json_code not in (0, 3) and json_out.strip():
        import json

        document = json.loads(json_out)
        assert set(document) == {"error"}, document
        assert f"[{document['error']['code']}]" in human_err, (argv, human_err, document)


CLIENT_LINES = st.lists(st.sampled_from(["T001", "--json", "--mcp", "stdio", "--actor", "agent-1", "--generation", "1",
                                         "--", "pytest", "-q", "--all", "--dry-run", "--http", "--to", "x", "--help"]),
                        max_size=8)


@settings(max_examples=sized(40, 200), deadline=None)
@given(head=st.sampled_from(["serve", "db copy", "proof run", "attest", "keys generate", "mcp-config claude-code",
                             "install codex", "verify-task", "land"]), rest=CLIENT_LINES)
def test_the_fast_parser_takes_no_client_side_command(head: str, rest: list[str]) -> None:
    """The fast path accelerates operation calls only: every client-side command line goes to the Typer
    app (so there is nothing of theirs for the two parsers to disagree on)."""
    assert parse_fast([*head.split(), *rest], {"ANVIL_ACTOR": "agent-1"}) is None
