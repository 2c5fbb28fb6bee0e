"""Measure the wall time of CLI calls people and agents make all day, as fresh processes.

Usage: ``python scripts/bench_cli.py [--runs N] [--quick] [--no-mcp]``

Every call is measured round-robin in the same run (so machine noise hits them alike) against the
floor any Python CLI pays, ``python -c pass`` with the same interpreter:

- ``--version``;
- human output, direct: ``status``, ``list``, ``show T003``, ``next``, ``packet T001`` (piped, as a
  script or pager sees them), and the same on a terminal (``tty ...``: stdout is a pseudo-terminal
  of 100 columns, so Rich draws colour, folded text and the packet's markdown);
- ``--json``, direct: the same five commands;
- ``status --json`` through MCP: stdio (the CLI spawns ``python -m anvil.mcp``) and http (against a
  warm ``anvil serve --http`` started here with a random bearer token, 127.0.0.1 only).

The command is the venv's installed ``anvil`` console script when there is one (else ``python -m
anvil``); the script says which. Targets: ``--version`` within 2x of ``python -c pass``; direct
calls (human or JSON) within 8x; human output on a terminal within 2x of the ``--json`` call of
the same command; http within 3x of direct; stdio under 2 s. ``status --json`` must print the
same document on every route.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.netutil import free_port, stop_server, wait_for_port  # noqa: E402

TOKEN_ENV = "ANVIL_BENCH_TOKEN"
CALL_TIMEOUT = 60.0
FLOOR = "python -c pass"
HUMAN = {"status": ["status"], "list": ["list"], "show T003": ["show", "T003"], "next": ["next"],
         "packet T001": ["packet", "T001"]}


def anvil_command() -> tuple[list[str], str]:
    """The installed console script beside this interpreter, else ``python -m anvil``."""
    found = shutil.which("anvil", path=str(Path(sys.executable).parent)) or shutil.which("anvil")
    if found:
        return [found], f"console script {found}"
    return [sys.executable, "-m", "anvil"], f"{sys.executable} -m anvil"


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=CALL_TIMEOUT)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return elapsed, proc.stdout.decode()


def timed_on_a_terminal(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    """``timed`` with stdout on a pseudo-terminal (read to its end, as a terminal would)."""
    controller, terminal = pty.openpty()
    t0 = time.perf_counter()
    with subprocess.Popen(argv, env={**env, "COLUMNS": "100", "TERM": "xterm-256color"}, cwd=cwd,
                          stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.PIPE) as proc:
        os.close(terminal)
        shown = bytearray()
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed its terminal
                break
            if not chunk:
                break
            shown += chunk
        _, err = proc.communicate(timeout=CALL_TIMEOUT)
    elapsed = time.perf_counter() - t0
    os.close(controller)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {err.decode()[-400:]}")
    return elapsed, shown.decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark anvil CLI calls against `python -c pass`.")
    parser.add_argument("--runs", type=int, default=None, help="calls per command (default 15, quick 3)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-mcp", action="store_true", help="skip the stdio and http routes")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 15)
    command, shown = anvil_command()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {runs} calls per command, round-robin")
    print(f"anvil command: {shown}")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-cli-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        # An installed anvil keeps its bytecode caches; without them (PYTHONDONTWRITEBYTECODE, as test runs
        # set it) every call would compile anvil again. The untimed warm-up call writes them.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("ANVIL_") and k not in ("COLUMNS", "PYTHONDONTWRITEBYTECODE")}
        env.update(ANVIL_HOME=str(Path(tmp) / "home"), ANVIL_ROOT=str(root), ANVIL_ACTOR="bench")
        env[TOKEN_ENV] = secrets.token_urlsafe(24)
        from anvil.ops.scenarios import build_scenario

        build_scenario("claimed", env, str(root))
        calls: dict[str, list[str]] = {FLOOR: [sys.executable, "-c", "pass"], "--version": [*command, "--version"]}
        calls.update({name: [*command, *words] for name, words in HUMAN.items()})
        calls.update({f"tty {name}": [*command, *words] for name, words in HUMAN.items()})
        calls.update({f"{name} --json": [*command, *words, "--json"] for name, words in HUMAN.items()})
        server = log = None
        if not args.no_mcp:
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - closed below
            server = subprocess.Popen([*command, "serve", "--http", "--port", str(port), "--token-env", TOKEN_ENV],
                                      env=env, cwd=str(root), stdout=log, stderr=subprocess.STDOUT)
            calls["stdio"] = [*command, "status", "--json", "--mcp", "stdio"]
            calls["http"] = [*command, "status", "--json", "--mcp", url, "--mcp-token-env", TOKEN_ENV]
        times: dict[str, list[float]] = {name: [] for name in calls}
        outputs: dict[str, set[str]] = {name: set() for name in calls}
        try:
            if server is not None:
                wait_for_port(port, server)
            for name, argv_ in calls.items():  # one untimed warm-up each (page cache, server first call)
                (timed_on_a_terminal if name.startswith("tty ") else timed)(argv_, env, str(root))
            for _ in range(runs):
                for name, argv_ in calls.items():
                    elapsed, out = (timed_on_a_terminal if name.startswith("tty ") else timed)(argv_, env, str(root))
                    times[name].append(elapsed)
                    outputs[name].add(out)
        finally:
            if server is not None and log is not None:
                stop_server(server, log)
    routes = [name for name in ("status --json", "stdio", "http") if name in outputs]
    documents = {json.dumps(json.loads(out), sort_keys=True) for name in routes for out in outputs[name]}
    print(f"  status --json printed the same document on every route: {'yes' if len(documents) == 1 else 'NO'}")
    med = {name: statistics.median(v) for name, v in times.items()}
    floor = med[FLOOR]
    for name, values in times.items():
        print(f"  {name:<17} median {med[name] * 1e3:8.1f} ms   min {min(values) * 1e3:8.1f} ms   "
              f"= {med[name] / floor:5.2f}x {FLOOR}")
    checks = [("--version / floor", med["--version"] / floor, 2.0)]
    checks += [(f"{name} / floor", med[name] / floor, 8.0) for name in [*HUMAN, *(f"{n} --json" for n in HUMAN)]]
    checks += [(f"tty {name} / {name} --json", med[f"tty {name}"] / med[f"{name} --json"], 2.0) for name in HUMAN]
    if "http" in med:
        checks += [("http / direct", med["http"] / med["status --json"], 3.0), ("stdio seconds", med["stdio"], 2.0)]
    for label, value, limit in checks:
        print(f"  {label:<34} {value:6.2f}  (target < {limit:g}) -> {'meets' if value < limit else 'MISSES'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
