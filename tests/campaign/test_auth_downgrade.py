"""Auth-downgrade attacks: a server that required tokens when it started never falls open.

The server is started with per-agent tokens already issued and no shared token (the case a public
bind is allowed for). Then its state is taken away under it (``init --force``, the state directory
moved, an emptied PostgreSQL database) and a caller with no token tries ``/mcp`` tools, a claim and
the board's API: every one must get 401, and nothing may be claimed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from anvil.engine.storage.paths import resolve_state
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import ServerProcess, free_port, wait_for_port
from tests.pgcluster import PgCluster

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def _post(url: str, method: str, params: dict[str, object]) -> httpx2.Response:
    return httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=HEADERS,
                       timeout=30)


def _assert_closed(server: ServerProcess) -> None:
    """No-token calls of /mcp (list, a claim) and of the board's API are refused."""
    for method, params in (("initialize", INIT), ("tools/list", {}),
                           ("tools/call", {"name": "claim_next_task", "arguments": {"actor": "intruder"}})):
        response = _post(server.url, method, params)
        assert response.status_code == 401, (method, response.status_code, response.text[:300])
    board = httpx2.get(f"http://127.0.0.1:{server.port}/board/api/state", timeout=30)
    assert board.status_code == 401, board.text[:300]
    login = httpx2.post(f"http://127.0.0.1:{server.port}/board/session", json={"token": "anything"}, timeout=30)
    assert login.status_code == 401 and "set-cookie" not in login.headers


@pytest.fixture
def served(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[[dict[str, str]], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(env: dict[str, str]) -> ServerProcess:
        env = anvil_subprocess_env({k: v for k, v in env.items() if k != "ANVIL_ACTOR"})
        root = env["ANVIL_ROOT"]
        build_scenario("ready", {**env, "ANVIL_ACTOR": "lead"}, root)
        invoke("add_token", {"name": "lead", "role": "lead"}, env=env, cwd=root)
        port = free_port()
        process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=env, cwd=root,
                                   stdout=tmp_path / f"server-{port}.log")
        server = ServerProcess(process, port, tmp_path / f"server-{port}.log")
        started.append(server)
        wait_for_port(port, process=process)
        _assert_closed(server)
        return server

    yield start
    for server in started:
        assert "Traceback" not in server.stop()


def test_init_force_under_a_running_server_does_not_open_it(anvil_env: dict[str, str],
                                                            served: Callable[[dict[str, str]], ServerProcess]) -> None:
    server = served(anvil_env)
    invoke("init_project", {"force": True, "confirm": True}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    _assert_closed(server)


def test_moving_the_state_directory_away_does_not_open_the_server(
        anvil_env: dict[str, str], served: Callable[[dict[str, str]], ServerProcess]) -> None:
    server = served(anvil_env)
    state = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).state_dir
    shutil.move(state, state.with_name(state.name + "-moved"))
    _assert_closed(server)


def test_an_emptied_postgresql_database_does_not_open_the_server(
        anvil_env: dict[str, str], pg_cluster: PgCluster, served: Callable[[dict[str, str]], ServerProcess]) -> None:
    name = pg_cluster.create_database()
    try:
        server = served({**anvil_env, "ANVIL_DATABASE_URL": pg_cluster.url(name)})
        empty = pg_cluster.create_database()
        pg_cluster.copy_database(empty, name)  # the same database, now holding nothing
        pg_cluster.drop_database(empty)
        _assert_closed(server)
    finally:
        pg_cluster.drop_database(name)
