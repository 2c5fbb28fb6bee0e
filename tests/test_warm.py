"""A process forked warm (tests/warm.py) behaves like the same ``python -m`` spawned: the suite may use
one where the other was, only faster."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import free_port, wait_for_port

COMMANDS = [["--version"], ["status", "--json"], ["status"], ["list", "--json"], ["nope"],
            ["claim", "T404", "--actor", "agent-1", "--json"], ["show", "--help"], ["claim", "--json"]]
"""Commands that write nothing (both processes run on the same project, one after the other)."""


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(argv) for argv in COMMANDS])
def test_a_warm_anvil_process_prints_and_exits_like_a_spawned_one(argv: list[str], anvil_env: dict[str, str]) -> None:
    env = {**anvil_subprocess_env(anvil_env), "COLUMNS": "100"}
    spawned = subprocess.run([sys.executable, "-m", "anvil", *argv], env=env, cwd=anvil_env["ANVIL_ROOT"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    forked = warm.anvil(argv, env=env, cwd=anvil_env["ANVIL_ROOT"])
    assert (forked.returncode, forked.stdout, forked.stderr) == (spawned.returncode, spawned.stdout, spawned.stderr)


def test_a_warm_process_reads_its_input_and_has_only_its_own_environment_and_directory(tmp_path: Path) -> None:
    probe_source = ("import os, sys\nprint(sys.stdin.read().upper(), os.getcwd(), sorted(os.environ))\n"
                    "raise SystemExit(3)\n")
    (tmp_path / "probe.py").write_text(probe_source, encoding="utf-8")
    probe = warm.run("probe", [], env={"ONLY": "1"}, cwd=tmp_path, input="hello")  # found in its directory, as -m does
    assert probe.returncode == 3, probe.stderr
    assert probe.stdout.split(" ", 2) == ["HELLO", str(tmp_path), "['ONLY']\n"]


def test_a_warm_server_answers_and_a_signal_ends_it_as_it_ends_a_spawned_one(anvil_env: dict[str, str],
                                                                              tmp_path: Path) -> None:
    port = free_port()
    server = warm.WarmProcess("anvil.mcp", ["--http", "--host", "127.0.0.1", "--port", str(port)],
                              env=anvil_subprocess_env(anvil_env), cwd=anvil_env["ANVIL_ROOT"],
                              stdout=tmp_path / "server.log")
    wait_for_port(port, process=server)
    status = warm.anvil(["status", "--json", "--mcp", f"http://127.0.0.1:{port}/mcp"],
                        env=anvil_subprocess_env(anvil_env), cwd=anvil_env["ANVIL_ROOT"])
    assert status.returncode == 0, status.stderr
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=30) == -signal.SIGTERM
    assert "listening on http://127.0.0.1" in (tmp_path / "server.log").read_text(encoding="utf-8")


def test_the_cli_gets_the_same_answer_from_a_warm_piped_stdio_server_as_from_a_spawned_one(cli) -> None:  # type: ignore[no-untyped-def]
    from anvil.mcp.channels import Channels, using
    from anvil.mcp.http_client import _opener

    cli("init", "--name", "Demo", "--json")
    spawned = cli("status", "--json", "--mcp", "stdio")
    with using(Channels(spawn=warm.spawn_piped, open_http=_opener().open)):
        forked = cli("status", "--json", "--mcp", "stdio")
        refused = cli("claim", "T404", "--actor", "agent-1", "--json", "--mcp", "stdio")
    assert spawned.code == 0 and (forked.code, forked.stdout) == (spawned.code, spawned.stdout)
    assert refused.code == 6 and refused.json()["error"]["code"] == "task_not_found", refused.stdout
