"""Real projects for the MCP tests: a scenario built once per test module, served read-mostly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_VARIABLES = ("ANVIL_HOME", "ANVIL_ROOT")
CLEARED = ("ANVIL_MCP_TARGET", "ANVIL_MCP_TOKEN_ENV", "ANVIL_MCP_BUNDLES", "ANVIL_STATE_LAYOUT", "ANVIL_ACTOR",
           "ANVIL_MCP_PLANNING", "ANVIL_TEST_NOW_OFFSET")


def build_project(base: Path, scenario: str) -> dict[str, str]:
    """Build ``scenario`` under ``base`` and return the variables that select it."""
    from anvil.ops.scenarios import build_scenario

    root = base / "project"
    root.mkdir(parents=True)
    env = {name: value for name, value in os.environ.items() if name not in CLEARED}
    env.update(ANVIL_HOME=str(base / "home"), ANVIL_ROOT=str(root))
    build_scenario(scenario, env, str(root))
    return env


def use_project(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point this process at the project ``env`` selects (for in-process servers) and return ``env``."""
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    for name in PROJECT_VARIABLES:
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(env["ANVIL_ROOT"])
    return env
