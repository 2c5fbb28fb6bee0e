"""Measure what the MCP layer costs: SDK import, server start, one-shot calls over stdio and HTTP.

Usage: ``python scripts/bench_mcp_import.py [--runs N]``. Every figure is the median wall time of N
fresh processes (default 7). The stdio figures include the lean path the CLI's client asks for
(``ANVIL_MCP_LEAN=1``: the single call answered without importing the SDK) beside the SDK server.
State goes to a temporary ANVIL_HOME/ANVIL_ROOT.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_project_status", "arguments": {}}},
]
IMPORT_VARIANTS = {
    "python -c pass": "pass",
    "import mcp.server.lowlevel.server + stdio": "import mcp.server.lowlevel.server, mcp.server.stdio",
    "  + gc paused during import, gc.freeze()": "import gc; gc.disable(); import mcp.server.lowlevel.server, "
                                                "mcp.server.stdio; gc.freeze(); gc.enable()",
    "anvil load_server_sdk (deferred __init__ + gc)": "from anvil.mcp._sdk import load_server_sdk; load_server_sdk()",
    "  + build_server(all_operations())": "from anvil.mcp.serve import _build; _build(None)",
    "import mcp (whole SDK, as the SDK client pays)": "import mcp",
}
STDIO_ONESHOT = """
import os, sys
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
call_tool(McpTarget("stdio"), "get_project_status", {}, env=os.environ, cwd=os.getcwd())
"""
HTTP_ONESHOT_ANVIL = """
import os, sys
from anvil.mcp.client import call_tool
from anvil.mcp.target import McpTarget
call_tool(McpTarget("http", sys.argv[1]), "get_project_status", {}, env=os.environ, cwd=".")
"""
HTTP_ONESHOT_SDK = """
import sys, anyio
from mcp import Client
async def main():
    async with Client(sys.argv[1], mode=sys.argv[2], read_timeout_seconds=30) as client:
        await client.call_tool("get_project_status", {})
anyio.run(main)
"""
STDIO_NO_FAST_EXIT = "from anvil.mcp.serve import serve_stdio; serve_stdio(exit_process=False)"


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def run_python(code: str, env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, stdin=subprocess.DEVNULL,
                   cwd=env["ANVIL_ROOT"])


def import_breakdown(env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import mcp.server.lowlevel.server"],
                          env=env, capture_output=True, text=True, check=True)
    by_package: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            package = match[4].split(".")[0]
            by_package[package] = by_package.get(package, 0) + int(match[1])
    total = sum(by_package.values())
    print("\n-X importtime of `import mcp.server.lowlevel.server` (self time by top package; "
          f"total {total / 1000:.0f} ms, inflated by the tracing itself):")
    for package, micros in sorted(by_package.items(), key=lambda item: -item[1])[:12]:
        print(f"  {micros / 1000:7.1f} ms  {package}")


def stdio_first_response(env: dict[str, str], command: list[str]) -> tuple[float, float, float]:
    """(ms to initialize reply, ms to tools/call reply, ms from stdin close to exit)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, cwd=env["ANVIL_ROOT"])
    assert process.stdin is not None and process.stdout is not None
    marks = []
    for message in HANDSHAKE:
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        if "id" in message:
            process.stdout.readline()
            marks.append(time.perf_counter())
    process.stdin.close()
    closed = time.perf_counter()
    process.wait(timeout=30)
    ended = time.perf_counter()
    return (marks[0] - started) * 1000, (marks[1] - started) * 1000, (ended - closed) * 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ANVIL_HOME=str(Path(tmp) / "home"), ANVIL_ROOT=str(Path(tmp) / "root"),
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        Path(env["ANVIL_ROOT"]).mkdir()
        import_breakdown(env)

        print(f"\nfresh-process import cost (median of {runs}):")
        for label, code in IMPORT_VARIANTS.items():
            print(f"  {median_ms(lambda code=code: run_python(code, env), runs):7.0f} ms  {label}")

        print("\nstdio server: spawn -> initialize reply / -> first tools/call reply / stdin EOF -> exit "
              f"(median of {runs}):")
        variants = {
            "python -m anvil.mcp": ([sys.executable, "-m", "anvil.mcp"], env),
            "  with ANVIL_MCP_LEAN=1 (the CLI's lean path, no SDK)": ([sys.executable, "-m", "anvil.mcp"],
                                                                     {**env, "ANVIL_MCP_LEAN": "1"}),
            "  with ANVIL_MCP_FAST_IMPORT=0": ([sys.executable, "-m", "anvil.mcp"],
                                               {**env, "ANVIL_MCP_FAST_IMPORT": "0"}),
            "  without os._exit at the end": ([sys.executable, "-c", STDIO_NO_FAST_EXIT], env),
        }
        for label, (command, variant_env) in variants.items():
            samples = [stdio_first_response(variant_env, command) for _ in range(runs)]
            init, call, exit_ = (statistics.median(s[i] for s in samples) for i in range(3))
            print(f"  {init:7.0f} ms / {call:7.0f} ms / {exit_:5.0f} ms  {label}")

        print(f"\none-shot call from a fresh process (median of {runs}):")
        print(f"  {median_ms(lambda: run_python(STDIO_ONESHOT, env), runs):7.0f} ms  stdio, anvil client "
              "(spawns the server; lean path)")
        sdk_env = {**env, "ANVIL_MCP_LEAN": "0"}
        print(f"  {median_ms(lambda: run_python(STDIO_ONESHOT, sdk_env), runs):7.0f} ms  stdio, anvil client "
              "with ANVIL_MCP_LEAN=0 (the SDK server)")
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "anvil.mcp", "--http", "--port", str(port)], env=env,
                                  stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=env["ANVIL_ROOT"])
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.02)
            url = f"http://127.0.0.1:{port}/mcp"
            print(f"  {median_ms(lambda: run_python(HTTP_ONESHOT_ANVIL, env, url), runs):7.0f} ms  "
                  "Streamable HTTP, anvil client (one 2026-07-28 POST)")
            for mode in ("auto", "legacy"):
                print(f"  {median_ms(lambda mode=mode: run_python(HTTP_ONESHOT_SDK, env, url, mode), runs):7.0f} ms  "
                      f"Streamable HTTP, SDK Client mode={mode}")
            sys.path.insert(0, str(ROOT))
            from anvil.mcp.client import call_tool
            from anvil.mcp.target import McpTarget

            target = McpTarget("http", url)
            call_tool(target, "get_project_status", {}, env=env, cwd=".")
            per_call = median_ms(lambda: call_tool(target, "get_project_status", {}, env=env, cwd="."), runs * 10)
            print(f"  {per_call:7.1f} ms  Streamable HTTP, anvil client, warm process (per call)")
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
