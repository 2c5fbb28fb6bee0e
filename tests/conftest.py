"""Shared fixtures: an isolated anvil environment and an in-process CLI runner."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):  # type: ignore[no-untyped-def]
        import json

        return json.loads(self.stdout)


@pytest.fixture
def anvil_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A project root and anvil home under ``tmp_path``; the process env points at them."""
    root = tmp_path / "project"
    root.mkdir()
    home = tmp_path / "home"
    for name in ("ANVIL_MCP_TARGET", "ANVIL_MCP_TOKEN_ENV", "ANVIL_STATE_LAYOUT", "ANVIL_ACTOR",
                 "ANVIL_MCP_PLANNING", "ANVIL_TEST_NOW_OFFSET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANVIL_HOME", str(home))
    monkeypatch.setenv("ANVIL_ROOT", str(root))
    monkeypatch.chdir(root)
    yield dict(os.environ)


@pytest.fixture
def cli(anvil_env: dict[str, str]):  # type: ignore[no-untyped-def]
    """Run ``anvil ARGS`` in-process and capture its exit code and output."""
    from anvil.cli.main import main

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(args))
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


def anvil_subprocess_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus what a child Python needs to import this checkout."""
    child = dict(env)
    child["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + child.get("PYTHONPATH", "")
    child.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return child


ANVIL = [sys.executable, "-m", "anvil"]
