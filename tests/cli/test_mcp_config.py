"""``anvil mcp-config``: a valid configuration for each MCP host, merged into its project file on request."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from anvil.cli.host_config import HOSTS, server_command
from tests.conftest import anvil_subprocess_env

CLIENTS = sorted(HOSTS)


def test_the_server_command_is_this_installs_anvil_or_its_interpreter(tmp_path: Path) -> None:
    bare = tmp_path / "bin" / "python"
    bare.parent.mkdir()
    bare.write_text("")
    assert server_command(str(bare)) == (str(bare), "-m", "anvil.mcp")  # no anvil script beside it
    script = bare.parent / "anvil"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert server_command(str(bare)) == (str(script), "serve")
    assert server_command()[0] == str(Path(sys.executable).parent / "anvil")  # this venv's own script
SECRET = "tok-8d1e55aa-never-write-me"


def parse(text: str, client: str) -> dict[str, Any]:
    return tomllib.loads(text) if HOSTS[client].format == "toml" else json.loads(text)


def entry_of(text: str, client: str, name: str = "anvil") -> dict[str, Any]:
    document = parse(text, client)
    entry: dict[str, Any] = document[HOSTS[client].servers_key][name]
    return entry


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_gets_a_valid_document_that_starts_the_stdio_server(client: str, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("mcp-config", client)
    assert result.code == 0, result.stderr
    entry = entry_of(result.stdout, client)
    assert [entry["command"], *entry["args"]] == list(server_command())
    assert Path(entry["command"]).is_absolute()  # a host started without this install on PATH still finds it
    assert "env" not in entry  # the default layout needs nothing from the host
    assert HOSTS[client].project_file in result.stderr


@pytest.mark.parametrize("client", CLIENTS)
def test_a_deployed_server_is_referenced_by_url_and_token_variable_never_the_token(
        client: str, cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANVIL_TOKEN", SECRET)
    result = cli("mcp-config", client, "--http", "https://anvil.example:8765/mcp", "--token-env", "ANVIL_TOKEN",
                 "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    entry = entry_of(report["document"], client)
    assert SECRET not in result.stdout + result.stderr
    assert "https://anvil.example:8765/mcp" in entry.values() and "command" not in entry
    if client == "codex":
        assert entry["bearer_token_env_var"] == "ANVIL_TOKEN"
    else:
        expected = {"claude-code": "${ANVIL_TOKEN}", "gemini": "${ANVIL_TOKEN}", "cursor": "${env:ANVIL_TOKEN}",
                    "vscode": "${env:ANVIL_TOKEN}"}[client]
        assert entry["headers"] == {"Authorization": f"Bearer {expected}"}
    assert report["transport"] == "http" and report["written"] is None


def test_a_project_with_local_state_tells_the_host_to_pass_the_layout(cli, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
                                                                      ) -> None:
    monkeypatch.setenv("ANVIL_STATE_LAYOUT", "local")
    assert cli("init", "--name", "x", "--json").code == 0
    monkeypatch.delenv("ANVIL_STATE_LAYOUT")  # found from <root>/.anvil/state.db alone
    for client in CLIENTS:
        result = cli("mcp-config", client, "--planning")
        assert entry_of(result.stdout, client)["env"] == {"ANVIL_STATE_LAYOUT": "local", "ANVIL_MCP_PLANNING": "1"}
    assert "env" not in entry_of(cli("mcp-config", "cursor", "--layout", "workspace").stdout, "cursor")


def test_write_merges_into_the_json_file_keeping_other_servers_and_settings(cli, anvil_env: dict[str, str]  # type: ignore[no-untyped-def]
                                                                            ) -> None:
    path = Path(anvil_env["ANVIL_ROOT"]) / ".gemini" / "settings.json"
    path.parent.mkdir()
    original = {"theme": "Dracula", "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]},
                                                    "anvil": {"command": "old"}}}
    path.write_text(json.dumps(original), encoding="utf-8")
    first = cli("mcp-config", "gemini", "--write", "--json")
    assert first.code == 0, first.stdout
    assert first.json()["written"] == str(path) and first.json()["kept_servers"] == 1
    merged = json.loads(path.read_text(encoding="utf-8"))
    assert merged["theme"] == "Dracula" and merged["mcpServers"]["git"] == original["mcpServers"]["git"]
    assert merged["mcpServers"]["anvil"] == {"command": server_command()[0], "args": list(server_command()[1:])}
    text = path.read_text(encoding="utf-8")
    assert cli("mcp-config", "gemini", "--write").code == 0
    assert path.read_text(encoding="utf-8") == text  # writing again changes nothing


@pytest.mark.parametrize("client", [c for c in CLIENTS if HOSTS[c].format == "json"])
def test_write_creates_the_project_file_where_there_is_none(client: str, cli, anvil_env: dict[str, str]  # type: ignore[no-untyped-def]
                                                            ) -> None:
    assert cli("mcp-config", client, "--write").code == 0
    path = Path(anvil_env["ANVIL_ROOT"]) / HOSTS[client].project_file
    assert list(parse(path.read_text(encoding="utf-8"), client)[HOSTS[client].servers_key]) == ["anvil"]


CODEX_FILE = """# my Codex settings
model = "gpt-5"

[mcp_servers.docs]  # documentation server
command = "docs-mcp"

[mcp_servers.anvil]
command = "old-anvil"

[mcp_servers.anvil.env]
ANVIL_STATE_LAYOUT = "workspace"

[profiles.fast]
model = "small"
"""


def test_write_rewrites_only_anvils_table_in_a_toml_file(cli, anvil_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    path = Path(anvil_env["ANVIL_ROOT"]) / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_FILE, encoding="utf-8")
    result = cli("mcp-config", "codex", "--write", "--http", "http://127.0.0.1:8765/mcp", "--token-env", "TOK")
    assert result.code == 0, result.stderr
    text = path.read_text(encoding="utf-8")
    document = tomllib.loads(text)
    assert "# my Codex settings" in text and "# documentation server" in text and "old-anvil" not in text
    assert document["model"] == "gpt-5" and document["profiles"] == {"fast": {"model": "small"}}
    assert document["mcp_servers"] == {"docs": {"command": "docs-mcp"},
                                       "anvil": {"url": "http://127.0.0.1:8765/mcp", "bearer_token_env_var": "TOK"}}


@pytest.mark.parametrize(("client", "content"), [("vscode", '{\n  // my servers\n  "servers": {}\n}\n'),
                                                 ("cursor", '{"mcpServers": []}'),
                                                 ("codex", 'mcp_servers.anvil.command = "x"\n')])
def test_a_project_file_it_cannot_safely_rewrite_is_left_alone(client: str, content: str, cli,  # type: ignore[no-untyped-def]
                                                               anvil_env: dict[str, str]) -> None:
    path = Path(anvil_env["ANVIL_ROOT"]) / HOSTS[client].project_file
    path.parent.mkdir()
    path.write_text(content, encoding="utf-8")
    result = cli("mcp-config", client, "--write", "--json")
    assert result.code == 5 and result.json()["error"]["code"] == "host_config_unreadable"
    assert path.read_text(encoding="utf-8") == content


@pytest.mark.parametrize(("args", "code"), [
    (["--token-env", "TOK"], "usage"),
    (["--http", "https://h.example/mcp?token=abc"], "invalid_target"),
    (["--http", "https://user:pw@h.example/mcp"], "invalid_target"),
    (["--http", "ftp://h.example/mcp"], "invalid_target"),
    (["--http", "https://h.example/mcp", "--token-env", SECRET], "invalid_token_env"),
    (["--http", "https://h.example/mcp", "--planning"], "usage"),
    (["--name", "my server"], "usage"),
    (["--layout", "elsewhere"], "invalid_layout"),
])
def test_mistakes_are_usage_errors_that_never_echo_a_secret(args: list[str], code: str, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("mcp-config", "claude-code", *args, "--json")
    assert result.code == 2 and result.json()["error"]["code"] == code
    assert SECRET not in result.stdout + result.stderr and "abc" not in result.json()["error"]["message"]


def test_the_command_loads_no_mcp_or_http_library(anvil_env: dict[str, str]) -> None:
    probe = ("import sys\nfrom anvil.cli.main import main\ncode = main(['mcp-config', 'codex', '--json'])\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx', 'httpx2', "
             "'starlette', 'uvicorn')), code)")
    proc = subprocess.run([sys.executable, "-c", probe], env=anvil_subprocess_env(anvil_env), capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "[] 0", proc.stderr


def test_help_names_every_client_and_its_project_file(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("mcp-config", "--help")
    assert result.code == 0
    for name, host in HOSTS.items():
        assert name in result.stdout and host.project_file in result.stdout
    assert re.search(r"--token-env\s+NAME", result.stdout) and "mcp-config" in cli("--help").stdout
