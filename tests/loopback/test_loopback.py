"""The loopback proof: every example of every operation gives the same output and exit code
whether the CLI runs it directly, through its own stdio MCP server, or through a Streamable HTTP
server with a bearer token.

The cases come from the registry, so an operation is covered the moment it is registered.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.ops.cliargs import cli_argv_for
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario
from anvil.ops.specgen import op_spec
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import free_port, wait_for_port

TOKEN_VAR = "ANVIL_LOOPBACK_TOKEN"
TOKEN = "lbk-7f3c9e1d5a2b4c6e8f0a1b2c3d4e5f60"
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(\+00:00|Z)")
CASES = [(op, i, ex) for op in all_operations() for i, ex in enumerate(op.examples)]


class Loopback:
    """One project location shared by the three paths, reset before every run."""

    def __init__(self, base: Path):
        self.root = base / "project"
        self.home = base / "home"
        self.root.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
        env.update(ANVIL_ROOT=str(self.root), ANVIL_HOME=str(self.home), ANVIL_MCP_PLANNING="1",
                   ANVIL_ACTOR="loopback-agent")
        self.env = anvil_subprocess_env(env)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = base / "http-server.log"
        self.server: subprocess.Popen[bytes] | None = None

    def start_server(self) -> None:
        env = {**self.env, TOKEN_VAR: TOKEN}
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

    def reset(self, scenario: str) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        for child in self.root.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        build_scenario(scenario, self.env, str(self.root))

    def run(self, argv: list[str], route: str) -> tuple[int, str, str]:
        extra = {"direct": [], "stdio": ["--mcp", "stdio"],
                 "http": ["--mcp", self.url, "--mcp-token-env", TOKEN_VAR]}[route]
        env = {**self.env, TOKEN_VAR: TOKEN} if route == "http" else self.env
        proc = subprocess.run([sys.executable, "-m", "anvil", *argv, "--json", *extra], env=env, cwd=self.root,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    lb = Loopback(tmp_path_factory.mktemp("loopback"))
    lb.start_server()
    yield lb
    lb.stop_server()
    log = lb.log.read_text(errors="replace")
    assert TOKEN not in log, "the bearer token leaked into the server log"


def normalized(stdout: str) -> Any:
    return json.loads(TIMESTAMP.sub("<time>", stdout))


@pytest.mark.parametrize(("op", "index", "example"), CASES, ids=[f"{op.name}-{i}" for op, i, _ in CASES])
def test_every_path_gives_the_same_output_and_exit_code(loopback: Loopback, op, index: int, example) -> None:  # type: ignore[no-untyped-def]
    argv = cli_argv_for(op_spec(op), example.input)
    results = {}
    for route in ("direct", "stdio", "http"):
        loopback.reset(example.scenario)
        code, stdout, stderr = loopback.run(argv, route)
        assert TOKEN not in stdout + stderr
        assert "Traceback" not in stderr, stderr
        results[route] = (code, normalized(stdout))
    assert results["stdio"] == results["direct"], "stdio differs from direct"
    assert results["http"] == results["direct"], "http differs from direct"
    code, document = results["direct"]
    if example.error:
        assert code != 0 and document["error"]["code"] == example.error, document
    else:
        assert code == 0, document
        assert op.output_model.model_validate(document).model_dump(mode="json") == document


HUMAN_CASES = [("get_project_summary", {}), ("list_tasks", {"status": "ready"}), ("get_task", {"task_id": "T003"}),
               ("get_next_task", {"actor": "agent-9"})]


@pytest.mark.parametrize(("name", "arguments"), HUMAN_CASES, ids=[name for name, _ in HUMAN_CASES])
def test_human_output_is_the_same_on_every_path(loopback: Loopback, name: str, arguments: dict[str, Any]) -> None:
    """Without --json the CLI takes the Typer path, whose MCP backend validates results with pydantic."""
    from anvil.ops.registry import get_operation

    argv = cli_argv_for(op_spec(get_operation(name)), arguments)
    outputs = {}
    for route in ("direct", "stdio", "http"):
        loopback.reset("claimed")
        extra = {"direct": [], "stdio": ["--mcp", "stdio"],
                 "http": ["--mcp", loopback.url, "--mcp-token-env", TOKEN_VAR]}[route]
        env = {**loopback.env, TOKEN_VAR: TOKEN, "COLUMNS": "200"}
        proc = subprocess.run([sys.executable, "-m", "anvil", *argv, *extra], env=env, cwd=loopback.root,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        outputs[route] = TIMESTAMP.sub("<time>", proc.stdout)
    assert outputs["stdio"] == outputs["direct"]
    assert outputs["http"] == outputs["direct"]
