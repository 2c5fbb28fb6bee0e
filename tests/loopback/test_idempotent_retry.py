"""Idempotent retries behave the same over every route: direct, stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from anvil.ops.scenarios import build_scenario
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import TOKEN, ServerProcess


@pytest.mark.parametrize("route", ["direct", "stdio", "http"])
def test_an_idempotent_retry_returns_the_first_result_on_every_route(
        route: str, anvil_env: dict[str, str], http_server_process: Callable[..., ServerProcess]) -> None:
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    extra: list[str] = []
    env = anvil_subprocess_env(anvil_env)
    if route == "stdio":
        extra = ["--mcp", "stdio"]
    elif route == "http":
        extra = ["--mcp", http_server_process().url, "--mcp-token-env", "MCP_TEST_TOKEN"]
        env["MCP_TEST_TOKEN"] = TOKEN

    def claim(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
        proc = subprocess.run([sys.executable, "-m", "anvil", "claim", "T001", "--json", *args, *extra], env=env,
                              capture_output=True, text=True, timeout=60, cwd=anvil_env["ANVIL_ROOT"])
        return proc.returncode, json.loads(proc.stdout)

    first = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    again = claim("--actor", "agent-1", "--idempotency-key", "k-1")
    changed = claim("--actor", "agent-1", "--idempotency-key", "k-1", "--lease", "60")
    assert first[0] == 0 and again == first
    assert changed[0] == 5 and changed[1]["error"]["code"] == "idempotency_conflict"
