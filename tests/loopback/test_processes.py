"""The loopback proof with real processes, for a few cases per route.

``test_loopback.py`` runs every example on every route inside the test process. Here the same
comparison runs as users run it: ``python -m anvil ...`` directly, with ``--mcp stdio`` (which
spawns ``python -m anvil.mcp``), and with ``--mcp URL --mcp-token-env NAME`` against a running
``anvil serve --http`` process that requires the token. Each route gets one success in ``--json``
(the stdlib fast path) and one failure in human form (the Typer path and its one-line error on
stderr), and each result must also equal what the in-process CLI prints for the same case.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.ops.cliargs import cli_argv_for
from anvil.ops.registry import get_operation
from anvil.ops.specgen import op_spec
from tests.conftest import anvil_subprocess_env
from tests.loopback.support import TIMESTAMP, TOKEN, TOKEN_VAR, Project, normalized, run_cli
from tests.mcp.support import free_port, wait_for_port

pytestmark = pytest.mark.xdist_group("loopback-processes")  # one worker starts the module's server process

ROUTES = ("direct", "stdio", "http")
PROCESS_TIMEOUT = 120


class ProcessLoopback(Project):
    """The project with a real ``anvil serve --http`` process in front of it."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = base / "http-server.log"
        self.server: subprocess.Popen[bytes] | None = None

    def start_server(self) -> None:
        env = {**anvil_subprocess_env(self.env), TOKEN_VAR: TOKEN}
        with self.log.open("wb") as sink:
            self.server = subprocess.Popen(
                [sys.executable, "-m", "anvil", "serve", "--http", "--port", str(self.port), "--token-env", TOKEN_VAR],
                env=env, cwd=self.root, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for_port(self.port, process=self.server)

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()

    def run(self, argv: list[str], route: str) -> tuple[int, str, str]:
        extra = {"direct": [], "stdio": ["--mcp", "stdio"], "http": ["--mcp", self.url, "--mcp-token-env", TOKEN_VAR]}
        env = {**anvil_subprocess_env(self.env), "COLUMNS": "200", **({TOKEN_VAR: TOKEN} if route == "http" else {})}
        proc = subprocess.run([sys.executable, "-m", "anvil", *argv, *extra[route]], env=env, cwd=self.root,
                              capture_output=True, text=True, timeout=PROCESS_TIMEOUT, stdin=subprocess.DEVNULL)
        assert TOKEN not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, proc.stdout, proc.stderr

    def run_in_process(self, argv: list[str], stream: str = "stdout") -> tuple[int, str]:
        result = run_cli(argv, {**self.env, "COLUMNS": "200"}, str(self.root))
        return result.code, result.stdout if stream == "stdout" else result.stderr


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessLoopback]:
    lb = ProcessLoopback(tmp_path_factory.mktemp("processes"))
    lb.start_server()
    yield lb
    lb.stop_server()
    log = lb.log.read_text(errors="replace")
    assert TOKEN not in log, "the bearer token leaked into the server log"
    assert "Traceback" not in log, log


def example(name: str, index: int) -> tuple[list[str], Any]:
    op = get_operation(name)
    chosen = op.examples[index]
    return cli_argv_for(op_spec(op), chosen.input), chosen


def test_real_processes_give_the_same_json_success_on_every_route(processes: ProcessLoopback) -> None:
    argv, chosen = example("claim_task", 0)
    assert chosen.error is None
    processes.reset(chosen.scenario)
    expected = processes.run_in_process([*argv, "--json"])
    results = {}
    for route in ROUTES:
        processes.reset(chosen.scenario)
        code, stdout, _ = processes.run([*argv, "--json"], route)
        results[route] = (code, normalized(stdout))
    assert results["stdio"] == results["direct"], "stdio differs from direct"
    assert results["http"] == results["direct"], "http differs from direct"
    assert results["direct"] == (expected[0], normalized(expected[1])), "the process differs from the in-process CLI"
    code, document = results["direct"]
    assert code == 0 and document["task_id"] == "T001" and document["generation"] == 1, document


def test_real_processes_give_the_same_human_failure_on_every_route(processes: ProcessLoopback) -> None:
    argv, chosen = example("claim_task", 1)
    assert chosen.error == "already_claimed"
    processes.reset(chosen.scenario)
    expected = processes.run_in_process(argv, stream="stderr")
    results = {}
    for route in ROUTES:
        processes.reset(chosen.scenario)
        code, stdout, stderr = processes.run(argv, route)
        assert stdout == "", stdout
        results[route] = (code, TIMESTAMP.sub("<time>", stderr))
    assert results["stdio"] == results["direct"], "stdio differs from direct"
    assert results["http"] == results["direct"], "http differs from direct"
    assert results["direct"] == (expected[0], TIMESTAMP.sub("<time>", expected[1])), \
        "the process differs from the in-process CLI"
    code, line = results["direct"]
    assert code == 5 and line.count("\n") == 1 and "T001" in line, line
