"""A PostgreSQL outage: the same exit code (8, ``database_unavailable``) on every route (legacy SSE too),
and nothing about the database (user, host, port, name) in what an HTTP caller is sent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx2

from anvil.ops.invoke import invoke
from tests import warm
from tests.conftest import ANVIL, anvil_subprocess_env
from tests.mcp.support import ServerProcess, free_port, wait_for_port
from tests.pgcluster import PgCluster


def test_an_outage_is_exit_8_directly_over_stdio_and_over_http_and_the_503_names_no_database(
        anvil_env: dict[str, str], pg_cluster: PgCluster, tmp_path: Path) -> None:
    name = pg_cluster.create_database()
    url = pg_cluster.url(name)
    env = anvil_subprocess_env({**anvil_env, "ANVIL_DATABASE_URL": url})
    root = env["ANVIL_ROOT"]
    invoke("init_project", {}, env=env, cwd=root)
    port = free_port()
    log = tmp_path / "server.log"
    server = ServerProcess(warm.WarmProcess("anvil", ["serve", "--http", "--sse", "--port", str(port)], env=env,
                                            cwd=root, stdout=log), port, log)
    try:
        wait_for_port(port, process=server.process)
        pg_cluster.drop_database(name)  # the database goes away under the running server
        for route in ([], ["--mcp", "stdio"], ["--mcp", server.url], ["--mcp", f"sse:http://127.0.0.1:{port}/sse"]):
            for argv in (["status"], ["claim-next", "--actor", "agent-1"]):
                proc = subprocess.run([*ANVIL, *argv, "--json", *route], env=env, cwd=root, capture_output=True,
                                      text=True, timeout=90)
                assert "Traceback" not in proc.stderr, proc.stderr
                assert proc.returncode == 8, (route, argv, proc.stdout, proc.stderr)
                assert json.loads(proc.stdout)["error"]["code"] == "database_unavailable", (route, argv)
        raw = httpx2.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                          headers={"Accept": "application/json, text/event-stream"}, timeout=30)
        board = httpx2.get(f"http://127.0.0.1:{port}/board/api/state", timeout=30)
        parts = urlsplit(url)
        for response in (raw, board):
            assert response.status_code == 503
            assert response.json()["error"]["exit_code"] == 8
            for secret in (parts.username, parts.hostname, str(parts.port), name, "postgresql://"):
                assert secret and secret not in response.text, secret
    finally:
        server.stop()
