"""The fast path and the Typer path turn the same argument list into the same input."""

from __future__ import annotations

import pytest

import anvil.cli.output as output
from anvil.cli.fast import parse_fast
from anvil.ops.cliargs import cli_argv_for
from anvil.ops.registry import all_operations
from anvil.ops.specgen import op_spec
from anvil.ops.validation import validate_input

CASES = [(op, ex) for op in all_operations() for ex in op.examples if ex.error != "invalid_input"]
IDS = [f"{op.name}-{op.examples.index(ex)}" for op, ex in CASES]


@pytest.mark.parametrize(("op", "example"), CASES, ids=IDS)
def test_both_parsers_build_the_validated_example_input(op, example, anvil_env, monkeypatch) -> None:  # type: ignore[no-untyped-def]

    argv = [*cli_argv_for(op_spec(op), example.input), "--json"]
    expected = validate_input(op, example.input)
    fast = parse_fast(argv, anvil_env)
    assert fast is not None, f"the fast path declined {argv}"
    assert fast.args == expected
    seen = {}

    def capture(spec, args, **kwargs):  # type: ignore[no-untyped-def]
        seen["args"] = args
        return 0, {}, None

    monkeypatch.setattr(output, "run_call", capture)  # both parsers' calls run through it
    import anvil.cli.app as app

    assert app.run_app(argv, anvil_env) == 0
    assert seen["args"] == expected


@pytest.mark.parametrize("argv", [
    ["status", "--json", "--help"], ["status", "--bogus"], ["status", "--json", "--bogus"],
    ["status", "--json", "extra"],
    ["init", "--json", "--name"], ["init", "--json", "--name", "a", "--name", "b"], ["nosuch", "--json"],
    ["status", "--json", "--mcp", "ftp://x"], ["status", "--json", "--mcp", "stdio", "--mcp", "direct"],
])
def test_the_fast_path_declines_what_it_does_not_fully_understand(argv, anvil_env) -> None:  # type: ignore[no-untyped-def]
    assert parse_fast(argv, anvil_env) is None


@pytest.mark.parametrize(("argv", "env", "kind"), [
    (["status", "--json", "--mcp"], {}, "stdio"),
    (["status", "--mcp", "--json"], {}, "stdio"),
    (["status", "--json"], {"ANVIL_MCP_TARGET": "stdio"}, "stdio"),
    (["status", "--json", "--mcp", "direct"], {"ANVIL_MCP_TARGET": "stdio"}, "direct"),
    (["status", "--json", "--mcp=http://127.0.0.1:1/mcp", "--mcp-token-env", "T"], {}, "http"),
])
def test_the_fast_path_routes_like_the_one_rule(argv, env, kind, anvil_env) -> None:  # type: ignore[no-untyped-def]
    call = parse_fast(argv, {**anvil_env, **env})
    assert call is not None
    assert (call.route.kind if call.route else "direct") == kind


def test_a_well_formed_human_call_takes_the_fast_path_too(anvil_env) -> None:  # type: ignore[no-untyped-def]
    call = parse_fast(["next", "--actor", "agent-1", "-q"], anvil_env)
    assert call is not None and (call.as_json, call.quiet) == (False, True)
    assert call.args["actor"] == "agent-1"
    assert parse_fast(["status", "-q"], anvil_env) is None  # -q only where an id can be printed
