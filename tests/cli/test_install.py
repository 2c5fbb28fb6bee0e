"""``anvil install HARNESS``: a dry run lists every file with its diff and writes nothing; ``--write`` backs up
and writes the skills and the MCP entry (absolute command); ``--rollback`` restores every file byte for byte."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from anvil.cli.host_config import HOSTS, server_command
from anvil.cli.install import BEGIN, END, HARNESSES, SKILL_DIRS, locations, shipped_skills

# odd bytes on purpose: no trailing newline, CRLF, a non-ASCII character
ORIGINAL_MCP = (b'{"theme": "dark",\r\n "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}, '
                b'"x": "\xc3\xa9"}')
ORIGINAL_TOML = b'# my settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"'
ORIGINAL_AGENTS = b"# Agents\n\nRun the tests before you commit.\n"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (but the state in .anvil) and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".anvil" not in p.relative_to(root).parts}


def directories(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir() and ".anvil" not in p.parts}


def seed(root: Path, harness: str) -> None:
    """Files a user already had where the harness reads its configuration."""
    config = root / HOSTS[harness].project_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(ORIGINAL_TOML if harness == "codex" else ORIGINAL_MCP.replace(b"mcpServers",
                                                                                     HOSTS[harness].servers_key.encode()))
    (root / "AGENTS.md").write_bytes(ORIGINAL_AGENTS)


@pytest.mark.parametrize("harness", HARNESSES)
def test_a_dry_run_lists_every_file_with_a_diff_and_writes_nothing(harness: str, cli, anvil_env: dict[str, str]  # type: ignore[no-untyped-def]
                                                                   ) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    seed(root, harness)
    before, dirs = snapshot(root), directories(root)
    result = cli("install", harness, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["mode"] == "dry_run" and report["backup"] is None
    files = {f["path"]: f for f in report["files"]}
    expected = {f"{SKILL_DIRS[harness]}/{name}/SKILL.md" for name in shipped_skills()} | {HOSTS[harness].project_file}
    assert set(files) == expected | ({"AGENTS.md"} if harness == "codex" else set())
    assert all(files[p]["action"] == "create" and "new file" in files[p]["diff"] for p in expected
               if p.endswith("SKILL.md"))
    config = files[HOSTS[harness].project_file]
    assert config["action"] == "update" and server_command()[0] in config["diff"]
    assert snapshot(root) == before and directories(root) == dirs
    human = cli("install", harness)
    assert all(path in human.stdout for path in files) and "dry run: nothing written" in human.stdout


@pytest.mark.parametrize("harness", HARNESSES)
def test_write_then_rollback_restores_every_file_byte_for_byte(harness: str, cli, anvil_env: dict[str, str]  # type: ignore[no-untyped-def]
                                                               ) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    seed(root, harness)
    before, dirs = snapshot(root), directories(root)
    written = cli("install", harness, "--write", "--json")
    assert written.code == 0, written.stderr
    assert Path(written.json()["backup"]).is_relative_to(Path(anvil_env["ANVIL_HOME"]))  # not in the project
    after = snapshot(root)
    for name, text in shipped_skills().items():
        assert after[f"{SKILL_DIRS[harness]}/{name}/SKILL.md"] == text
    host = HOSTS[harness]
    text = after[host.project_file].decode("utf-8")
    document = tomllib.loads(text) if host.format == "toml" else json.loads(text)
    entry = document[host.servers_key]["anvil"]
    assert [entry["command"], *entry["args"]] == list(server_command()) and os.path.isabs(entry["command"])
    assert ("docs" if harness == "codex" else "git") in document[host.servers_key]  # the user's server stays
    if harness == "codex":
        agents = after["AGENTS.md"].decode("utf-8")
        assert agents.startswith(ORIGINAL_AGENTS.decode()) and agents.count(BEGIN) == 1 and END in agents
    else:
        assert after["AGENTS.md"] == ORIGINAL_AGENTS
    again = cli("install", harness, "--write", "--json")  # a second write changes nothing, keeps the first backup
    assert {f["action"] for f in again.json()["files"]} == {"unchanged"} and snapshot(root) == after
    rolled = cli("install", harness, "--rollback", "--json")
    assert rolled.code == 0, rolled.stderr
    assert snapshot(root) == before and directories(root) == dirs
    gone = cli("install", harness, "--rollback", "--json")
    assert gone.code == 6 and gone.json()["error"]["code"] == "install_not_found"


def test_rollback_after_a_second_write_returns_to_the_files_before_anvil(cli, anvil_env: dict[str, str]  # type: ignore[no-untyped-def]
                                                                         ) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "AGENTS.md").write_bytes(ORIGINAL_AGENTS)
    assert cli("install", "codex", "--write").code == 0
    skill = root / ".agents/skills/anvil-execute/SKILL.md"
    skill.write_text("edited by hand\n")  # the next write puts the shipped text back
    assert cli("install", "codex", "--write").code == 0
    assert skill.read_bytes() == shipped_skills()["anvil-execute"]
    agents = (root / "AGENTS.md").read_text()
    assert agents.count(BEGIN) == 1  # the block is replaced, never repeated
    assert cli("install", "codex", "--rollback").code == 0
    assert snapshot(root) == {"AGENTS.md": ORIGINAL_AGENTS}
    assert not (root / ".agents").exists() and not (root / ".codex").exists()


def test_an_unparseable_config_is_refused_and_nothing_is_written(cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / ".vscode").mkdir()
    (root / ".vscode/mcp.json").write_text('{\n  // my servers\n  "servers": {}\n}\n')
    before = snapshot(root)
    result = cli("install", "vscode", "--write", "--json")
    assert result.code == 5 and result.json()["error"]["code"] == "host_config_unreadable"
    assert snapshot(root) == before


@pytest.mark.parametrize("damage", ["end marker deleted", "block pasted twice"])
def test_a_damaged_agents_block_is_refused_and_nothing_is_written(damage: str, cli,  # type: ignore[no-untyped-def]
                                                                   anvil_env: dict[str, str]) -> None:
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / "AGENTS.md").write_bytes(ORIGINAL_AGENTS)
    assert cli("install", "codex", "--write").code == 0
    agents = (root / "AGENTS.md").read_text()
    block = agents[agents.index(BEGIN):agents.index(END) + len(END)]
    damaged = agents.replace(END, "") if damage == "end marker deleted" else agents + "\n" + block + "\n"
    (root / "AGENTS.md").write_text(damaged)
    before = snapshot(root)
    result = cli("install", "codex", "--write", "--json")
    assert result.code == 5 and result.json()["error"]["code"] == "host_config_unreadable"
    assert "AGENTS.md" in result.json()["error"]["message"]
    assert snapshot(root) == before


def test_a_block_whose_begin_marker_was_worded_by_another_version_is_replaced(
        cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    root = Path(anvil_env["ANVIL_ROOT"])
    older = "<!-- BEGIN anvil (an older install's words) -->\n## anvil\nold text\n" + END + "\n"
    (root / "AGENTS.md").write_bytes(ORIGINAL_AGENTS + b"\n" + older.encode())
    assert cli("install", "codex", "--write").code == 0
    agents = (root / "AGENTS.md").read_text()
    assert agents.count("<!-- BEGIN anvil") == 1 and agents.count(END) == 1 and "old text" not in agents
    assert agents.startswith(ORIGINAL_AGENTS.decode())


def test_usage_errors_name_the_flags(cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    both = cli("install", "gemini", "--write", "--rollback", "--json")
    assert both.code == 2 and both.json()["error"]["code"] == "conflicting_flags"
    unknown = cli("install", "emacs", "--json")
    assert unknown.code == 2 and "claude-code" in unknown.json()["error"]["message"]
    helped = cli("install", "--help")
    assert helped.code == 0 and all(SKILL_DIRS[h] in helped.stdout for h in HARNESSES)
    assert "install" in cli("--help").stdout


def test_the_local_layout_is_passed_to_the_server(cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    result = cli("install", "cursor", "--layout", "local", "--planning", "--write", "--json")
    assert result.code == 0, result.stderr
    entry = json.loads((Path(anvil_env["ANVIL_ROOT"]) / ".cursor/mcp.json").read_text())["mcpServers"]["anvil"]
    assert entry["env"] == {"ANVIL_STATE_LAYOUT": "local", "ANVIL_MCP_PLANNING": "1"}


@pytest.mark.parametrize("harness", HARNESSES)
def test_user_scope_writes_under_the_home_and_rolls_back_byte_for_byte(
        harness: str, cli, anvil_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    where = locations(harness, "user", Path(anvil_env["ANVIL_ROOT"]), {"HOME": str(home)})
    (home / where.mcp).parent.mkdir(parents=True, exist_ok=True)
    (home / where.mcp).write_bytes(ORIGINAL_TOML if harness == "codex" else b'{"keep": [1, 2]}')
    before, project_before = snapshot(home), snapshot(Path(anvil_env["ANVIL_ROOT"]))
    written = cli("install", harness, "--user", "--write", "--json")
    assert written.code == 0, written.stderr
    report = written.json()
    assert report["scope"] == "user" and report["root"] == str(home)
    after = snapshot(home)
    assert after[f"{where.skills}/anvil-plan/SKILL.md"] == shipped_skills()["anvil-plan"]
    text = after[where.mcp].decode("utf-8")
    document = tomllib.loads(text) if harness == "codex" else json.loads(text)
    entry = document[HOSTS[harness].servers_key]["anvil"]
    assert entry["command"] == server_command()[0] and "env" not in entry  # the host's project decides the state
    assert (harness == "codex") == (where.agents is not None and BEGIN in after[where.agents].decode())
    assert snapshot(Path(anvil_env["ANVIL_ROOT"])) == project_before  # nothing in the project
    assert cli("install", harness, "--user", "--rollback").code == 0
    assert snapshot(home) == before


def test_user_scope_follows_codex_home(cli, anvil_env: dict[str, str], tmp_path: Path,  # type: ignore[no-untyped-def]
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    result = cli("install", "codex", "--user", "--write", "--json")
    assert result.code == 0, result.stderr
    assert tomllib.loads((tmp_path / "codex-home/config.toml").read_text())["mcp_servers"]["anvil"]
    assert BEGIN in (tmp_path / "codex-home/AGENTS.md").read_text()
    assert cli("install", "codex", "--user", "--rollback").code == 0
    assert not (tmp_path / "codex-home").exists()


def test_rollback_says_which_files_were_edited_after_the_install(cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    root = Path(anvil_env["ANVIL_ROOT"])
    (root / ".mcp.json").write_bytes(ORIGINAL_MCP)
    assert cli("install", "claude-code", "--write").code == 0
    (root / ".mcp.json").write_text((root / ".mcp.json").read_text() + "\n")  # the host rewrote it
    rolled = cli("install", "claude-code", "--rollback", "--json").json()
    edited = {f["path"]: f["edited"] for f in rolled["files"]}
    assert edited.pop(".mcp.json") is True and not any(edited.values())
    assert (root / ".mcp.json").read_bytes() == ORIGINAL_MCP
