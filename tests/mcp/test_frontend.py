"""``anvil serve`` and ``python -m anvil.mcp`` are one command line with one error boundary.

Both entry points run as real processes: the same refusals with exit 2 and the same stderr line
(only the program name in a "see --help" hint differs), the same help and version, the same
handling of a busy port, of closed stdio and of a bug, and the same options reaching the HTTP app.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from anvil import __version__
from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import free_port, wait_for_port

ENTRY_POINTS: dict[str, list[str]] = {
    "python -m anvil.mcp": [sys.executable, "-m", "anvil.mcp"],
    "anvil serve": [sys.executable, "-m", "anvil", "serve"],
}
WARM_ENTRY_POINTS: dict[str, tuple[str, list[str]]] = {prog: (command[2], command[3:])
                                                         for prog, command in ENTRY_POINTS.items()}
"""The same commands as (module after -m, leading arguments), for processes forked warm (tests.warm)."""
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def run_both(env: dict[str, str], *args: str, extra_env: dict[str, str] | None = None,
             shell_prefix: str | None = None) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run ``args`` on both entry points; stdin is empty. With ``shell_prefix`` both are spawned at once
    through ``sh`` (to start them with a descriptor closed), else each is forked warm."""
    child_env = {**anvil_subprocess_env(env), **(extra_env or {})}
    if shell_prefix is None:
        return {prog: warm.run(module, [*leading, *args], env=child_env, cwd=env["ANVIL_ROOT"], input="", timeout=60)
                for prog, (module, leading) in WARM_ENTRY_POINTS.items()}
    started = {}
    for prog, command in ENTRY_POINTS.items():
        argv = [*command, *args]
        argv = ["sh", "-c", f'exec "$@" {shell_prefix}', "sh", *argv]  # e.g. run with a descriptor closed
        started[prog] = subprocess.Popen(argv, env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, cwd=env["ANVIL_ROOT"])
    results = {}
    for prog, process in started.items():
        out, err = process.communicate(timeout=60)
        results[prog] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return results


def aligned(text: str, prog: str) -> str:
    """``text`` with the program's name as PROG (and the blanks a longer name pads a help line with gone)."""
    return "\n".join(line.rstrip() for line in text.replace(prog, "PROG").split("\n"))


def same_everywhere(results: dict[str, subprocess.CompletedProcess[str]]) -> tuple[int, str, str]:
    """The (exit code, stdout, stderr) both entry points gave, once the program names are aligned."""
    seen = {(r.returncode, aligned(r.stdout, prog), aligned(r.stderr, prog)) for prog, r in results.items()}
    assert len(seen) == 1, results
    return seen.pop()


REFUSALS = [
    (["--port", "8765"], "usage", "--port only applies to the HTTP server: add --http"),
    (["--host", "127.0.0.1", "--token-env", "T"], "usage", "--host, --token-env only apply to the HTTP server"),
    (["--allowed-host", "mcp.example", "--allowed-origin", "https://ui.example"], "usage",
     "--allowed-host, --allowed-origin only apply"),
    (["--http", "--port", "abc"], "invalid_input", "--port must be a whole number from 0 to 65535 (see 'PROG --help')"),
    (["--sse", "--port", "70000"], "invalid_input", "--port must be a whole number from 0 to 65535"),
    (["--json"], "usage", "No such option: --json"),
    (["--http", "--host", "0.0.0.0"], "token_required", "pass --token-env NAME"),
    (["--http", "--token-env", "not a name"], "invalid_token_env", "--token-env takes an environment variable NAME"),
    (["--http", "--token-env", "ANVIL_TEST_NO_SUCH_TOKEN"], "token_env_unset", "ANVIL_TEST_NO_SUCH_TOKEN"),
]


@pytest.mark.parametrize(("args", "code", "wording"), REFUSALS, ids=[" ".join(args) for args, _, _ in REFUSALS])
def test_both_entry_points_refuse_the_same_mistakes_with_exit_2_and_one_identical_line(
        anvil_env: dict[str, str], args: list[str], code: str, wording: str) -> None:
    exit_code, out, err = same_everywhere(run_both(anvil_env, *args))
    assert (exit_code, out) == (2, "")
    assert err.startswith("anvil: error: ") and err.endswith(f" [{code}]\n") and err.count("\n") == 1, err
    assert wording in err


def test_both_entry_points_print_the_same_help_and_version(anvil_env: dict[str, str]) -> None:
    exit_code, out, err = same_everywhere(run_both(anvil_env, "--help"))
    assert (exit_code, err) == (0, "") and "Usage: PROG [OPTIONS]" in out
    for option in ("--http", "--sse", "--host", "--port", "--token-env", "--allowed-host", "--allowed-origin",
                   "--planning", "ANVIL_MCP_ALLOWED_HOSTS", "ANVIL_MCP_ALLOWED_ORIGINS"):
        assert option in out
    assert same_everywhere(run_both(anvil_env, "--version")) == (0, f"anvil {__version__}\n", "")


SERVE_HELP_PROBE = """
import sys
from anvil.cli.main import main
code = main(["serve", "--help"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types", "uvicorn", "starlette"))
sys.stderr.write(repr((code, heavy)))
"""


def test_anvil_serve_help_loads_no_sdk_and_reads_no_stdin(anvil_env: dict[str, str]) -> None:
    # stdin is a pipe nobody writes to: reading it would hang until the timeout
    proc = subprocess.run([sys.executable, "-c", SERVE_HELP_PROBE], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, stdin=subprocess.PIPE, timeout=30, cwd=anvil_env["ANVIL_ROOT"])
    assert proc.stderr.decode().endswith("(0, [])"), proc.stderr.decode()
    assert b"Usage: anvil serve" in proc.stdout
    assert not any(Path(anvil_env["ANVIL_HOME"]).glob("**/*"))


def test_a_busy_port_is_a_clean_usage_error_on_both(anvil_env: dict[str, str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        exit_code, out, err = same_everywhere(run_both(anvil_env, "--http", "--port", str(port)))
    assert (exit_code, out) == (2, "")
    assert err.startswith(f"anvil: error: cannot listen on 127.0.0.1:{port} (") and "[address_unavailable]" in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("closed", ["<&-", ">&-"])
def test_a_stdio_server_without_stdin_or_stdout_says_so_on_both(anvil_env: dict[str, str], closed: str) -> None:
    exit_code, out, err = same_everywhere(run_both(anvil_env, shell_prefix=closed))
    assert exit_code == 2 and out == ""
    assert err.startswith("anvil: error: the stdio server needs open standard input and output")
    assert err.endswith(" [stdio_unavailable]\n") and err.count("\n") == 1


def test_help_into_a_closed_pipe_ends_quietly_with_141_on_both(anvil_env: dict[str, str]) -> None:
    for command in ENTRY_POINTS.values():
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
        try:
            proc = subprocess.run([*command, "--help"], stdout=write_end, stderr=subprocess.PIPE, timeout=30,
                                  stdin=subprocess.DEVNULL, env=anvil_subprocess_env(anvil_env))
        finally:
            os.close(write_end)
        assert (proc.returncode, proc.stderr) == (141, b""), command


BUG_PROBE = """
import sys
from anvil.cli.main import main as cli_main
from anvil.cli.serve import server_main
from anvil.mcp import serve

def broken(planning, extra_modules=()):
    raise RuntimeError("secret internals at /srv/private")

serve._build = broken
args = ["--http", "--port", "0"]
sys.exit(cli_main(["serve", *args]) if sys.argv[1] == "anvil serve" else server_main(args))
"""


@pytest.mark.parametrize("prog", list(ENTRY_POINTS))
def test_a_bug_while_starting_is_one_internal_error_line_not_a_traceback(anvil_env: dict[str, str],
                                                                          prog: str) -> None:
    env = anvil_subprocess_env(anvil_env)
    quiet = subprocess.run([sys.executable, "-c", BUG_PROBE, prog], env=env, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    assert quiet.returncode == 1 and quiet.stdout == ""
    assert quiet.stderr == ("anvil: error: internal error (RuntimeError); details are in the log with ANVIL_DEBUG=1 "
                            "[internal]\n")
    debug = subprocess.run([sys.executable, "-c", BUG_PROBE, prog], env={**env, "ANVIL_DEBUG": "1"},
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "secret internals" in debug.stderr


@pytest.fixture
def both_http_servers(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, int]]:
    """Both entry points serving HTTP and legacy SSE with extra hosts and origins (flags and environment)."""
    env = {**anvil_subprocess_env(anvil_env), "ANVIL_MCP_ALLOWED_HOSTS": "env-host.example",
           "ANVIL_MCP_ALLOWED_ORIGINS": "https://env-ui.example"}
    servers: dict[str, tuple[warm.WarmProcess, int]] = {}
    for prog, (module, leading) in WARM_ENTRY_POINTS.items():
        port = free_port()
        servers[prog] = (warm.WarmProcess(module, [*leading, "--sse", "--port", str(port), "--allowed-host",
                                                   "flag-host.example", "--allowed-origin", "https://flag-ui.example"],
                                          env=env, cwd=anvil_env["ANVIL_ROOT"], stdout=tmp_path / f"{port}.log"), port)
    try:
        for process, port in servers.values():
            wait_for_port(port, process=process)
        yield {prog: port for prog, (_, port) in servers.items()}
    finally:
        for process, _ in servers.values():
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def status_of(port: int, headers: dict[str, str]) -> int:
    response = httpx2.post(f"http://127.0.0.1:{port}/mcp", content=json.dumps(INIT).encode(), timeout=10,
                           headers={"Content-Type": "application/json", "Accept": "application/json, "
                                    "text/event-stream", **headers})
    return response.status_code


def first_sse_event(port: int) -> str:
    with httpx2.stream("GET", f"http://127.0.0.1:{port}/sse", timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event:"):
                return line
    raise AssertionError("the SSE stream ended without an event")


def test_sse_and_the_allowed_hosts_and_origins_reach_the_http_app_on_both(both_http_servers: dict[str, int]) -> None:
    seen = {}
    for prog, port in both_http_servers.items():
        seen[prog] = (
            status_of(port, {}),
            status_of(port, {"Host": "flag-host.example"}),
            status_of(port, {"Host": "env-host.example"}),
            status_of(port, {"Host": "other.example"}),
            status_of(port, {"Origin": "https://flag-ui.example"}),
            status_of(port, {"Origin": "https://env-ui.example"}),
            status_of(port, {"Origin": "https://evil.example"}),
            first_sse_event(port),
        )
    assert seen["anvil serve"] == seen["python -m anvil.mcp"] == (200, 200, 200, 421, 200, 200, 403, "event: endpoint")


PROBE = """
import runpy, sys
sys.argv = ["anvil.mcp", "FLAG"]
try:
    runpy.run_module("anvil.mcp", run_name="__main__")
except SystemExit as exit:
    code = exit.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types", "uvicorn", "starlette"))
sys.stderr.write(repr((code, heavy)))
"""


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_exit_at_once_without_the_sdk_or_stdin(flag: str, anvil_env: dict[str, str],
                                                                tmp_path: Path) -> None:
    probe = PROBE.replace("FLAG", flag)
    started = time.monotonic()
    # stdin is a pipe nobody writes to: reading it would hang until the timeout
    proc = subprocess.run([sys.executable, "-c", probe], env=anvil_subprocess_env(anvil_env), capture_output=True,
                          stdin=subprocess.PIPE, timeout=30, cwd=anvil_env["ANVIL_ROOT"])
    elapsed = time.monotonic() - started
    assert proc.stderr.decode().endswith("(0, [])"), proc.stderr.decode()
    assert elapsed < 5
    assert not any((Path(anvil_env["ANVIL_HOME"])).glob("**/*"))
    if flag == "--version":
        assert proc.stdout.decode() == f"anvil {__version__}\n"


def test_help_lists_every_registered_tool_with_its_surface_and_the_environment(anvil_env: dict[str, str]) -> None:
    from anvil.ops.registry import all_operations

    proc = subprocess.run([sys.executable, "-m", "anvil.mcp", "--help"], env=anvil_subprocess_env(anvil_env),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0
    cells = [line.strip("│ ").split() for line in proc.stdout.splitlines() if line.startswith("│")]
    rows = {cell[0]: cell[1] for cell in cells if len(cell) > 2 and cell[1] in ("execution", "planning")}
    assert rows == {op.name: op.surface for op in all_operations()}
    for variable in ("ANVIL_ROOT", "ANVIL_MCP_PLANNING", "ANVIL_HOME", "ANVIL_STATE_LAYOUT"):
        assert variable in proc.stdout
