"""``anvil install`` proved with the real hosts: Claude Code's ``claude mcp list`` and Gemini CLI's ``gemini mcp
list`` start the server the install configured (with this install's venv not on PATH) and report it connected.

The hosts are npm packages that need no login or network for these commands; outside CI a missing one skips
its test with the command that installs it (``.ci/run`` installs both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from anvil.cli.host_config import server_command
from tests.external import TOOLS_DIR, require

CLAUDE_CODE_VERSION = "2.1.332"
GEMINI_CLI_VERSION = "0.61.0"
HOWTO = (f"run .ci/run, or: npm install --prefix {TOOLS_DIR} @anthropic-ai/claude-code@{CLAUDE_CODE_VERSION} "
         f"@google/gemini-cli@{GEMINI_CLI_VERSION}")
HOST_TIMEOUT = 120
SESSION_TIMEOUT_MS = 600_000  # Gemini CLI's default request timeout in a session


def host(name: str) -> Path:
    found = TOOLS_DIR / "node_modules" / ".bin" / name
    require(found.is_file() and shutil.which("node"), f"the {name} CLI", HOWTO)
    return found


def host_env(anvil_env: dict[str, str], home: Path) -> dict[str, str]:
    """A scratch HOME, and a PATH with node but not this install's venv (hosts start servers with their own)."""
    node_dir = str(Path(shutil.which("node") or "/usr/bin/node").parent)
    assert str(Path(server_command()[0]).parent) not in (node_dir, "/usr/bin", "/bin")
    return {"HOME": str(home), "PATH": f"{node_dir}:/usr/bin:/bin", "ANVIL_ROOT": anvil_env["ANVIL_ROOT"],
            "ANVIL_HOME": anvil_env["ANVIL_HOME"], "DISABLE_AUTOUPDATER": "1", "NO_COLOR": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "MCP_TIMEOUT": "60000"}  # a loaded machine


def listing(command: Path, env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run([str(command), "mcp", "list"], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=HOST_TIMEOUT, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def connected_line(command: Path, env: dict[str, str], cwd: Path) -> str:
    """The host's line for anvil in its server list."""
    return anvil_line(listing(command, env, cwd))


def patient_gemini(root: Path) -> None:
    """Give the server as long to start under ``gemini mcp list`` as in a session.

    The listing waits 5 s for a server that states no ``timeout`` (a session waits its 10-minute
    default); the suite's load (a worker per core) can make anvil's start, about 1 s of CPU, take
    longer. Only that key is added; the entry the install wrote is otherwise what the host reads.
    """
    path = root / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    settings["mcpServers"]["anvil"]["timeout"] = SESSION_TIMEOUT_MS
    path.write_text(json.dumps(settings))


def anvil_line(output: str) -> str:
    lines = [line for line in output.splitlines() if "anvil:" in line]
    assert len(lines) == 1, output
    return lines[0]


def test_claude_code_connects_to_the_installed_server(cli, anvil_env: dict[str, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    claude = host("claude")
    root, home = Path(anvil_env["ANVIL_ROOT"]), tmp_path / "home"
    home.mkdir()
    assert cli("init", "--name", "Hosted").code == 0
    # what the trust dialog records for a project whose .mcp.json servers were approved
    (home / ".claude.json").write_text(json.dumps({"projects": {str(root): {
        "hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["anvil"]}}}))
    env = host_env(anvil_env, home)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"anvil": {"command": "anvil", "args": ["serve"]}}}))
    assert "Failed to connect" in anvil_line(listing(claude, env, root))  # a bare command: not on the host's PATH
    assert cli("install", "claude-code", "--write").code == 0
    line = connected_line(claude, env, root)
    assert "Connected" in line and "Failed" not in line and server_command()[0] in line
    assert (root / ".claude/skills/anvil-execute/SKILL.md").is_file()


def test_gemini_cli_connects_to_the_installed_server(cli, anvil_env: dict[str, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gemini = host("gemini")
    root, home = Path(anvil_env["ANVIL_ROOT"]), tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    assert cli("init", "--name", "Hosted").code == 0
    assert cli("install", "gemini", "--write").code == 0
    patient_gemini(root)
    line = connected_line(gemini, host_env(anvil_env, home), root)
    assert "Connected" in line and "Disconnected" not in line and server_command()[0] in line
    assert cli("install", "gemini", "--rollback").code == 0
    assert "anvil:" not in listing(gemini, host_env(anvil_env, home), root)  # rolled back: the host lists nothing


def test_claude_code_connects_to_a_user_scope_install_without_approval(  # type: ignore[no-untyped-def]
        cli, anvil_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = host("claude")
    root, home = Path(anvil_env["ANVIL_ROOT"]), tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text('{"numStartups": 1}')
    monkeypatch.setenv("HOME", str(home))
    assert cli("init", "--name", "Hosted").code == 0
    assert cli("install", "claude-code", "--user", "--write").code == 0
    assert not (root / ".mcp.json").exists()
    line = connected_line(claude, host_env(anvil_env, home), root)
    assert "Connected" in line and "Failed" not in line
    assert cli("install", "claude-code", "--user", "--rollback").code == 0
    assert (home / ".claude.json").read_text() == '{"numStartups": 1}'
