"""Concurrent `anvil init` of one project: exactly one creates it, the others are refused cleanly."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import anvil_subprocess_env


def test_concurrent_inits_create_the_project_exactly_once(anvil_env: dict[str, str]) -> None:
    env = anvil_subprocess_env(anvil_env)
    procs = [subprocess.Popen([sys.executable, "-m", "anvil", "init", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err
        results.append((proc.returncode, json.loads(out)))
    created = [doc for code, doc in results if code == 0]
    refused = [doc["error"]["code"] for code, doc in results if code != 0]
    assert len(created) == 1, results
    assert refused == ["already_initialized"] * 5, results
    verified = subprocess.run([sys.executable, "-m", "anvil", "verify", "--json"], env=env, capture_output=True,
                              text=True, timeout=60)
    assert json.loads(verified.stdout)["event_count"] == 2
