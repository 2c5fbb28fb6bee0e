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


def test_a_project_without_a_name_takes_its_prds_name_once(anvil_env: dict[str, str]) -> None:
    from pathlib import Path

    from anvil.ops.invoke import invoke
    from anvil.ops.scenarios import SAMPLE_PRD

    root = anvil_env["ANVIL_ROOT"]
    invoke("init_project", {}, env=anvil_env, cwd=root)
    assert invoke("get_project_status", {}, env=anvil_env, cwd=root)["project_name"] == "project"  # the folder
    parsed = invoke("parse_prd", {"source": Path(SAMPLE_PRD).read_text()}, env=anvil_env, cwd=root)
    assert parsed["project_renamed"] == "Shortlink"
    status = invoke("get_project_status", {}, env=anvil_env, cwd=root)
    assert (status["project_name"], status["project_id"]) == ("Shortlink", "shortlink")


def test_a_name_given_at_init_stays(anvil_env: dict[str, str]) -> None:
    from pathlib import Path

    from anvil.ops.invoke import invoke
    from anvil.ops.scenarios import SAMPLE_PRD

    root = anvil_env["ANVIL_ROOT"]
    invoke("init_project", {"name": "Link Service"}, env=anvil_env, cwd=root)
    parsed = invoke("parse_prd", {"source": Path(SAMPLE_PRD).read_text()}, env=anvil_env, cwd=root)
    assert parsed["project_renamed"] is None
    assert invoke("get_project_status", {}, env=anvil_env, cwd=root)["project_name"] == "Link Service"


def test_the_local_layout_keeps_its_state_out_of_git_status(anvil_env: dict[str, str]) -> None:
    import shutil
    from pathlib import Path

    import pytest

    from anvil.ops.invoke import invoke

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = Path(anvil_env["ANVIL_ROOT"])
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    env = {**anvil_env, "ANVIL_STATE_LAYOUT": "local"}
    invoke("init_project", {}, env=env, cwd=str(root))
    assert (root / ".anvil" / "state.db").is_file()
    shown = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True,
                           text=True, timeout=60, check=True).stdout
    assert shown == "", shown
