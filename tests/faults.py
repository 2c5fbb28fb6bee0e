"""Crash injection for tests: run the anvil CLI in a child that SIGKILLs itself at a named point.

The points are the ones ``anvil.engine.storage.store`` passes to its test-only ``FAULT_HOOK``
(``before_commit``, ``committed``, ``mirrored``, ``after_commit_actions``, ``init_built``,
``init_installed``). The hook is a module attribute set here, inside the child: no input or
environment variable of a shipped anvil reaches it.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import anvil_subprocess_env

CHILD = """
import os, signal, sys
from anvil.engine.storage import store
point, hit = sys.argv[1], int(sys.argv[2])
seen = 0
def hook(name):
    global seen
    if name == point:
        seen += 1
        if seen == hit:
            os.kill(os.getpid(), signal.SIGKILL)
store.FAULT_HOOK = hook
from anvil.cli.main import main
raise SystemExit(main(sys.argv[3:]))
"""


def run_killed_at(env: dict[str, str], point: str, *args: str, hit: int = 1) -> subprocess.CompletedProcess[str]:
    """Run ``anvil ARGS`` and SIGKILL it the ``hit``-th time it passes ``point`` (it may finish first)."""
    return subprocess.run([sys.executable, "-c", CHILD, point, str(hit), *args], env=anvil_subprocess_env(env),
                          cwd=env["ANVIL_ROOT"], capture_output=True, text=True, timeout=120)


def killed(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode == -9
