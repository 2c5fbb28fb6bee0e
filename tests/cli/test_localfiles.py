"""Inputs naming a local file are read by the CLI and sent as text: the same command works direct, over
stdio and against a remote server, for a file anywhere the caller can read (a linked worktree too)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from anvil.ops.scenarios import SAMPLE_PRD
from tests.conftest import ANVIL, CliResult, anvil_subprocess_env
from tests.mcp.support import TOKEN, ServerProcess


@pytest.fixture
def outside_prd(tmp_path: Path) -> Path:
    """The sample PRD kept outside the project (specs elsewhere)."""
    spec = tmp_path / "specs" / "prd.md"
    spec.parent.mkdir()
    spec.write_bytes(Path(SAMPLE_PRD).read_bytes())
    return spec


def test_direct_use_parses_a_prd_kept_outside_the_project(cli: Callable[..., CliResult], outside_prd: Path) -> None:
    assert cli("init", "--json").code == 0
    result = cli("prd", "parse", "--file", str(outside_prd), "--json")
    assert result.code == 0, result.stdout
    assert result.json()["recorded"] is True and result.json()["task_count"] > 0
    decisions = cli("prd", "find-decisions", "--file", str(outside_prd), "--json")
    assert decisions.code == 0 and decisions.json()["total"] >= 1
    assert cli("prd", "assess", "--file", str(outside_prd), "--json").code == 0


def test_over_stdio_the_cli_sends_the_file_the_server_could_not_read(anvil_env: dict[str, str],
                                                                     outside_prd: Path) -> None:
    env = anvil_subprocess_env(anvil_env) | {"ANVIL_MCP_PLANNING": "1"}
    subprocess.run([*ANVIL, "init", "--json"], env=env, check=True, capture_output=True, timeout=60)
    proc = subprocess.run([*ANVIL, "prd", "parse", "--file", str(outside_prd), "--mcp", "stdio", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["recorded"] is True


def test_against_a_remote_server_a_relative_file_is_read_on_the_callers_side(
        anvil_env: dict[str, str], http_server_process: Callable[..., ServerProcess], tmp_path: Path) -> None:
    server = http_server_process("--planning")
    caller = tmp_path / "laptop"
    caller.mkdir()
    # Over a mebibyte (and not ASCII): bigger than a JSON request body used to be allowed to be.
    padding = "\n<!-- " + "réglé " * 200_000 + "-->\n"
    (caller / "prd.md").write_text(Path(SAMPLE_PRD).read_text(encoding="utf-8") + padding, encoding="utf-8")
    assert (caller / "prd.md").stat().st_size > 1 << 20
    env = anvil_subprocess_env(anvil_env) | {"MCP_TEST_TOKEN": TOKEN}
    url = f"http://127.0.0.1:{server.port}/mcp"
    route = ["--mcp", url, "--mcp-token-env", "MCP_TEST_TOKEN", "--json"]
    init = subprocess.run([*ANVIL, "init", *route], env=env, cwd=caller, capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stdout + init.stderr
    proc = subprocess.run([*ANVIL, "prd", "parse", "--file", "prd.md", *route], env=env, cwd=caller,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["recorded"] is True
    assert not (Path(anvil_env["ANVIL_ROOT"]) / "prd.md").exists()


def test_a_prd_in_a_linked_worktree_is_accepted_directly(cli: Callable[..., CliResult], anvil_env: dict[str, str],
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = Path(anvil_env["ANVIL_ROOT"])
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "README").write_text("x\n")
    subprocess.run([*git, "-C", str(main), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "start"], check=True)
    linked = tmp_path / "linked"
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(linked), "-b", "feature"], check=True)
    (linked / "prd.md").write_bytes(Path(SAMPLE_PRD).read_bytes())
    monkeypatch.delenv("ANVIL_ROOT")
    monkeypatch.chdir(linked)
    assert cli("init", "--json").json()["state_dir"] == cli("status", "--json").json()["state_dir"]
    result = cli("prd", "parse", "--file", "prd.md", "--json")
    assert result.code == 0, result.stdout
    assert result.json()["recorded"] is True


def test_a_server_side_file_stays_confined_to_the_served_project(cli: Callable[..., CliResult],
                                                                 anvil_env: dict[str, str], outside_prd: Path) -> None:
    from anvil.engine.errors import UsageError
    from anvil.ops.invoke import invoke

    assert cli("init", "--json").code == 0
    with pytest.raises(UsageError) as info:
        invoke("parse_prd", {"file": str(outside_prd)}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    assert info.value.code == "file_outside_project"


@pytest.mark.parametrize(("content", "code", "exit_code"), [
    (None, "local_file_missing", 6),
    (b"# Project: Latin\n\nCaf\xe9\n", "local_file_not_utf8", 2),
])
def test_an_unreadable_local_file_is_refused_before_any_call(cli: Callable[..., CliResult], tmp_path: Path,
                                                             content: bytes | None, code: str, exit_code: int) -> None:
    target = tmp_path / "bad.md"
    if content is not None:
        target.write_bytes(content)
    result = cli("prd", "parse", "--file", str(target), "--mcp", "http://127.0.0.1:9/mcp", "--json")
    assert (result.code, result.json()["error"]["code"]) == (exit_code, code)
    assert "--file" in result.json()["error"]["message"]


def test_a_file_and_its_text_together_are_refused(cli: Callable[..., CliResult], outside_prd: Path) -> None:
    result = cli("prd", "parse", "--file", str(outside_prd), "--source", "# Project: x", "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "invalid_input")


def test_text_over_the_prd_ceiling_is_refused(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    from anvil.engine.prd.source import DEFAULT_MAX_BYTES

    big = tmp_path / "big.md"
    big.write_bytes(b"# Project: Big\n\n" + b"x" * DEFAULT_MAX_BYTES)
    result = cli("prd", "parse", "--file", str(big), "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "local_file_too_large")
    assert os.path.getsize(big) > DEFAULT_MAX_BYTES
