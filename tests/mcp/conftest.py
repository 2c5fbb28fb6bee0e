"""Fixtures of the MCP tests (helpers live in :mod:`tests.mcp.support`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import anvil_subprocess_env
from tests.mcp.support import TOKEN, FakeInvoke, ServerProcess, ThreadedUvicorn, free_port, wait_for_port


@pytest.fixture
def fake_invoke() -> FakeInvoke:
    return FakeInvoke()


@pytest.fixture
def serve_app() -> Iterator[Callable[[Any], ThreadedUvicorn]]:
    running: list[ThreadedUvicorn] = []

    def start(app: Any) -> ThreadedUvicorn:
        server = ThreadedUvicorn(app).__enter__()
        running.append(server)
        return server

    yield start
    for server in running:
        server.__exit__()


@pytest.fixture
def http_server_process(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start ``python -m anvil.mcp --http`` on a free loopback port, with TOKEN in MCP_TEST_TOKEN."""
    started: list[ServerProcess] = []

    def start(*extra: str, token: bool = True) -> ServerProcess:
        port = free_port()
        env = anvil_subprocess_env(anvil_env)
        args = [sys.executable, "-m", "anvil.mcp", "--http", "--host", "127.0.0.1", "--port", str(port), *extra]
        if token:
            env["MCP_TEST_TOKEN"] = TOKEN
            args += ["--token-env", "MCP_TEST_TOKEN"]
        log = tmp_path / f"server-{port}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       cwd=anvil_env["ANVIL_ROOT"])
        server = ServerProcess(process, port, log)
        started.append(server)
        wait_for_port(port, process=process)
        return server

    yield start
    for server in started:
        server.stop()
