"""Measure the wall time of CLI calls people and agents make all day, as fresh processes.

Usage: ``python scripts/bench_cli.py [--runs N] [--quick] [--no-mcp] [--only NAME,...] [--before DIR]``

Every call is measured round-robin in the same run (so machine noise hits them alike) against the
floor any Python CLI pays, ``python -c pass`` with the same interpreter:

- ``--version``;
- human output, direct: ``status``, ``list``, ``show T003``, ``next``, ``packet T001`` (piped, as a
  script or pager sees them), and the same on a terminal (``tty ...``: stdout is a pseudo-terminal
  of 100 columns, so Rich draws colour, folded text and the packet's markdown);
- ``--json``, direct: the same five commands;
- ``--help``, ``status --help``, ``show --help`` (Typer's Rich help, piped), against ``status --json``
  and ``show T003 --json``;
- ``status --json`` on the Typer path (``anvil.cli.app.run_app``, what the fast path saves);
- ``status --json`` through MCP: stdio (the CLI spawns ``python -m anvil.mcp``, which answers the
  single call on its lean path, without the MCP SDK), ``stdio (SDK server)`` (the same with
  ``ANVIL_MCP_LEAN=0``: the SDK server, as before the lean path) and http (against a warm ``anvil serve
  --http`` started here with a random bearer token, 127.0.0.1 only).

``--only`` keeps the named calls (and the floor), e.g. ``--only "status --json,stdio,stdio (SDK server)"``.
``--before DIR`` adds ``stdio (before)``: the stdio call with another checkout of anvil first on
``PYTHONPATH`` (e.g. ``git archive main | tar -x -C DIR``), in the same round-robin, so a change to the
stdio path is measured against the code before it under the same load. The load average is printed
before and after the runs.

The command is the venv's installed ``anvil`` console script when there is one (else ``python -m
anvil``); the script says which. Targets: ``--version`` within 2x of ``python -c pass``; direct
calls (human or JSON) within 8x; human output on a terminal within 2x of the ``--json`` call of
the same command; help within 10x of the same command's ``--json`` call; http within 3x of direct;
stdio under 2 s. ``status --json`` must print the same document on every route.
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
HELP = {"--help": ["--help"], "status --help": ["status", "--help"], "show --help": ["show", "--help"]}
TYPER_PATH = "import os, sys; from anvil.cli.app import run_app; sys.exit(run_app(sys.argv[1:], dict(os.environ)))"
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
    parser.add_argument("--only", default="", help="comma-separated call names to keep (the floor is always kept)")
    parser.add_argument("--before", default="", help="another anvil checkout to run the stdio call with too")
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
        calls["status --json (Typer)"] = [sys.executable, "-c", TYPER_PATH, "status", "--json"]
        calls.update({name: [*command, *words] for name, words in HELP.items()})
        server = log = None
        if not args.no_mcp:
            port = free_port()
            url = f"http://127.0.0.1:{port}/mcp"
            log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - closed below
            server = subprocess.Popen([*command, "serve", "--http", "--port", str(port), "--token-env", TOKEN_ENV],
                                      env=env, cwd=str(root), stdout=log, stderr=subprocess.STDOUT)
            calls["stdio"] = [*command, "status", "--json", "--mcp", "stdio"]
            calls["stdio (SDK server)"] = calls["stdio"]
            if args.before:
                calls["stdio (before)"] = calls["stdio"]
            calls["http"] = [*command, "status", "--json", "--mcp", url, "--mcp-token-env", TOKEN_ENV]
        kept = {name.strip() for name in args.only.split(",") if name.strip()}
        if kept:
            calls = {name: argv_ for name, argv_ in calls.items() if name == FLOOR or name in kept}
        call_env = {name: {**env, "ANVIL_MCP_LEAN": "0"} if name == "stdio (SDK server)" else env for name in calls}
        if "stdio (before)" in calls:
            call_env["stdio (before)"] = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
        print(f"load average before the runs: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        times: dict[str, list[float]] = {name: [] for name in calls}
        outputs: dict[str, set[str]] = {name: set() for name in calls}
        try:
            if server is not None:
                wait_for_port(port, server)
            for name, argv_ in calls.items():  # one untimed warm-up each (page cache, server first call)
                (timed_on_a_terminal if name.startswith("tty ") else timed)(argv_, call_env[name], str(root))
            for _ in range(runs):
                for name, argv_ in calls.items():
                    elapsed, out = (timed_on_a_terminal if name.startswith("tty ") else timed)(
                        argv_, call_env[name], str(root))
                    times[name].append(elapsed)
                    outputs[name].add(out)
        finally:
            if server is not None and log is not None:
                stop_server(server, log)
    print(f"load average after the runs: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    routes = [name for name in ("status --json", "stdio", "stdio (SDK server)", "stdio (before)", "http")
              if name in outputs]
    documents = {json.dumps(json.loads(out), sort_keys=True) for name in routes for out in outputs[name]}
    print(f"  status --json printed the same document on every route: {'yes' if len(documents) == 1 else 'NO'}")
    med = {name: statistics.median(v) for name, v in times.items()}
    floor = med[FLOOR]
    for name, values in times.items():
        print(f"  {name:<21} median {med[name] * 1e3:8.1f} ms   min {min(values) * 1e3:8.1f} ms   "
              f"max {max(values) * 1e3:8.1f} ms   = {med[name] / floor:5.2f}x {FLOOR}")
    ratios = [("--version / floor", "--version", FLOOR, 2.0)]
    ratios += [(f"{name} / floor", name, FLOOR, 8.0) for name in [*HUMAN, *(f"{n} --json" for n in HUMAN)]]
    ratios += [(f"tty {name} / {name} --json", f"tty {name}", f"{name} --json", 2.0) for name in HUMAN]
    ratios += [("--help / status --json", "--help", "status --json", 10.0),
               ("status --help / --json", "status --help", "status --json", 10.0),
               ("show --help / --json", "show --help", "show T003 --json", 10.0),
               ("http / direct", "http", "status --json", 3.0), ("stdio / direct", "stdio", "status --json", 3.0)]
    checks = [(label, med[a] / med[b], limit) for label, a, b, limit in ratios if a in med and b in med]
    checks += [("stdio seconds", med["stdio"], 2.0)] if "stdio" in med else []
    if "stdio" in med and "stdio (SDK server)" in med:
        print(f"  the lean stdio path saves {(med['stdio (SDK server)'] - med['stdio']) * 1e3:.1f} ms a call "
              f"({med['stdio (SDK server)'] / med['stdio']:.2f}x)")
    if "stdio" in med and "stdio (before)" in med:
        print(f"  against the checkout before, the stdio call takes {(med['stdio (before)'] - med['stdio']) * 1e3:.1f} "
              f"ms less ({med['stdio (before)'] / med['stdio']:.2f}x)")
    if "status --json (Typer)" in med and "status --json" in med:
        print(f"  the fast path saves {(med['status --json (Typer)'] - med['status --json']) * 1e3:.1f} ms of "
              f"status --json on the Typer path ({med['status --json (Typer)'] / med['status --json']:.2f}x)")
    for label, value, limit in checks:
        print(f"  {label:<34} {value:6.2f}  (target < {limit:g}) -> {'meets' if value < limit else 'MISSES'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
