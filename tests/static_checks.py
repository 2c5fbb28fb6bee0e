"""The linter and the type checker, started once at the beginning of a run so they use the second
core while the tests run on the first (``tests/test_static_checks.py`` collects their verdicts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def commands(scratch: Path) -> dict[str, list[str]]:
    """The checks by name. mypy's cache is this run's own (in ``scratch``): a cache shared between
    runs let two runs of one checkout write it at once, and a CI run died of mypy's INTERNAL ERROR on
    it. A cold check of the package takes about 6 s, beside the tests on the second core."""
    return {
        "ruff": [sys.executable, "-m", "ruff", "check", "anvil", "tests", "scripts"],
        "mypy": [sys.executable, "-m", "mypy", "--cache-dir", str(scratch / "mypy-cache"), "anvil"],
    }


_running: dict[str, subprocess.Popen[str]] = {}


def start(scratch: Path, only: str | None = None) -> None:
    """Start every check (or the check ``only``) that is not running yet. Under pytest-xdist each
    worker starts only the check its test collects: starting both on both workers ran mypy twice."""
    for name, command in commands(scratch).items():
        if name not in _running and only in (None, name):
            _running[name] = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              stdin=subprocess.DEVNULL, text=True)


def verdict(name: str, scratch: Path) -> tuple[int, str, str]:
    """Wait for the check ``name`` (starting it if needed): its exit code, stdout and stderr."""
    start(scratch, only=name)
    process = _running[name]
    with process:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    return process.returncode, stdout, stderr


def stop() -> None:
    """End the checks nobody collected (a run that deselected their tests, or was interrupted)."""
    while _running:
        _, process = _running.popitem()
        with process:
            if process.poll() is None:
                process.kill()
            process.communicate()
