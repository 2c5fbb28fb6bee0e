"""Fuzzing every operation's inputs on every route: no input ends in exit 1, and a refusal writes nothing.

Strategies come from the contract (``anvil/ops/surface.json``: each input's kind, bounds and
choices), widened on purpose past the bounds (a value one over a limit, an unknown choice, a NUL
byte, a missing required field) so both valid and invalid calls reach the operation. Routes: the
direct pipeline (``invoke``, what the CLI runs), one stdio server process, and one HTTP server
process (planning tools listed). Bounded: a few examples per route by default, more under
``ANVIL_LONG_TESTS=1``; waits are capped at one second.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvil.engine.errors import AnvilError
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
from anvil.ops.contract import SPEC_PATH
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests.campaign.support import StdioSession
from tests.conftest import anvil_subprocess_env, sized
from tests.mcp.support import TOKEN, ServerProcess
from tests.ops.support import store_of

OPERATIONS: list[dict[str, Any]] = json.loads(SPEC_PATH.read_text(encoding="utf-8"))["operations"]
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NASTY = st.sampled_from(["", "\u0000", "a" * 300, "../..", "/dev/zero", "T001", "agent-1", "alıce", "\u202e"])
EXAMPLES = int(os.environ.get("ANVIL_FUZZ_EXAMPLES", "0")) or sized(12, 300)


def _value(param: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = param["kind"]
    if param.get("choices"):
        return st.sampled_from([*param["choices"], "not-a-choice"])
    if kind == "bool":
        return st.booleans()
    if kind in ("int", "float"):
        low, high = param.get("ge", -5), param.get("le", 1000)
        if param["name"] in ("wait_seconds", "timeout_seconds"):
            high = min(high, 1)
        numbers = st.integers(low - 1, high + 1)
        return numbers if kind == "int" else st.one_of(numbers, st.floats(low - 1, high + 1, allow_nan=False))
    if kind == "list":
        return st.lists(st.one_of(TEXT, NASTY), max_size=3)
    if kind == "pairs":
        return st.lists(st.lists(st.one_of(TEXT, NASTY), min_size=1, max_size=3), max_size=2)
    return st.one_of(TEXT, NASTY)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    op = draw(st.sampled_from(OPERATIONS))
    args: dict[str, Any] = {}
    for param in op["params"]:
        if param["name"] == "cwd":
            continue  # a cwd elsewhere would select another project (tested in test_clear_errors)
        wanted = param.get("required") and draw(st.integers(0, 9)) > 0
        if wanted or draw(st.booleans()):
            args[param["name"]] = draw(_value(param))
    return op["name"], args


def _head(env: dict[str, str]) -> int:
    with store_of(env) as store:
        return int(store.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])


def _check(env: dict[str, str], name: str, args: dict[str, Any], call: Callable[[], Any]) -> None:
    before = _head(env)
    try:
        call()
    except AnvilError as error:
        assert error.exit_code != 1, (name, args, error.code, error.message)
        if error.code not in ("state_busy",):
            assert _head(env) == before, (name, args, error.code, "a refusal wrote")


@pytest.fixture
def project(anvil_env: dict[str, str]) -> dict[str, str]:
    env = {**anvil_env, "ANVIL_LOCK_TIMEOUT": "5"}
    build_scenario("claimed", env, env["ANVIL_ROOT"])
    return env


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(call=calls())
def test_direct_calls_never_end_in_exit_1_and_refusals_write_nothing(project: dict[str, str],
                                                                      call: tuple[str, dict[str, Any]]) -> None:
    name, args = call
    _check(project, name, args, lambda: invoke(name, args, env=project, cwd=project["ANVIL_ROOT"]))


@pytest.fixture
def stdio(project: dict[str, str]) -> Iterator[StdioSession]:
    with StdioSession({**project, "ANVIL_MCP_PLANNING": "1"}) as session:
        yield session
        assert "Traceback" not in session.close()


@FUZZ
@given(call=calls())
def test_stdio_calls_never_end_in_exit_1_and_refusals_write_nothing(project: dict[str, str], stdio: StdioSession,
                                                                     call: tuple[str, dict[str, Any]]) -> None:
    from anvil.engine.errors import from_wire

    name, args = call

    def run() -> None:
        reply = stdio.request("tools/call", {"name": name, "arguments": args})
        assert "result" in reply or reply.get("error", {}).get("code") != -32603, (name, args, reply)
        result = reply.get("result") or {}
        if result.get("isError"):
            raise from_wire(json.loads(result["content"][0]["text"]))

    _check(project, name, args, run)


@pytest.fixture
def http(project: dict[str, str], anvil_env: dict[str, str],
         http_server_process: Callable[..., ServerProcess]) -> McpTarget:
    anvil_env["ANVIL_MCP_PLANNING"] = "1"  # the environment the fixture starts its server process in
    server = http_server_process()
    return McpTarget("http", server.url, "MCP_TEST_TOKEN")


@FUZZ
@given(call=calls())
def test_http_calls_never_end_in_exit_1_and_refusals_write_nothing(project: dict[str, str], http: McpTarget,
                                                                    call: tuple[str, dict[str, Any]]) -> None:
    name, args = call
    env = {**anvil_subprocess_env(project), "MCP_TEST_TOKEN": TOKEN}
    _check(project, name, args, lambda: call_tool(http, name, args, env=env, cwd=str(Path(project["ANVIL_ROOT"])),
                                                  timeout=60))
