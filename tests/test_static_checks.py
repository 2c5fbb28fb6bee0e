"""The code passes the linter and the type checker (handlers against their generated input types)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "anvil", "tests", "scripts"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


def test_mypy_finds_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.getbasetemp() / "mypy-cache"
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "anvil"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
