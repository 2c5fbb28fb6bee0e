"""The MCP conformance suite (npm @modelcontextprotocol/conformance, on Node 22) against a real server.

The whole server suite runs once; the scenarios that call the suite's own fixture tools, prompts
and resources are listed, with the fixture each one needs, in ``conformance-baseline.yml``. The
suite exits non-zero on any other failure and on a listed scenario that starts passing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import anvil_subprocess_env
from tests.external import CONFORMANCE_HOWTO, conformance_suite, require
from tests.mcp.projects import build_project
from tests.mcp.support import ServerProcess, free_port, wait_for_port

BASELINE = Path(__file__).with_name("conformance-baseline.yml")
MUST_PASS = ("server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-error",
             "logging-set-level", "resources-list", "prompts-list", "dns-rebinding-protection")


def scenario_results(output: Path) -> dict[str, list[str]]:
    """Each scenario's check statuses, from the suite's output directory."""
    results: dict[str, list[str]] = {}
    for checks in output.glob("server-*/checks.json"):
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\dZ-]+$", "", checks.parent.name.removeprefix("server-"))
        results[name] = [check["status"] for check in json.loads(checks.read_text(encoding="utf-8"))]
    return results


def test_the_conformance_suite_passes_every_scenario_that_does_not_need_its_fixtures(tmp_path: Path) -> None:
    tools = conformance_suite()
    require(tools, "the MCP conformance suite (Node 22)", CONFORMANCE_HOWTO)
    assert tools is not None
    node, suite = tools
    env = anvil_subprocess_env(build_project(tmp_path / "state", "submitted"))
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "anvil.mcp", "--http", "--port", str(port)], env=env,
                                   stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=env["ANVIL_ROOT"])
    server = ServerProcess(process, port, log)
    try:
        wait_for_port(port, process=process)
        run = subprocess.run([str(node), str(suite), "server", "--url", server.url, "--expected-failures",
                              str(BASELINE), "-o", str(tmp_path / "results")], capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path)
    finally:
        server.stop()
    results = scenario_results(tmp_path / "results")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for name in MUST_PASS:
        assert results.get(name) and "FAILURE" not in results[name], (name, results.get(name))
    assert "SUCCESS" in results["resources-list"] and "SUCCESS" in results["prompts-list"]
