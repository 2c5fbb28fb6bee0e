"""Measure the team-wide reads on a large plan, as fresh CLI processes: do they stay flat with its size?

Usage: ``python scripts/bench_reads.py [--sizes N ...] [--runs N] [--keep DIR] [--quick] [--baseline DIR]
[--database URL]``

For each size a project is set up once through ``anvil.ops.invoke.invoke`` (untimed): PRDs generated
by ``scripts.prdgen`` in compact form (10,000 tasks per PRD, so each stays under the PRD size ceiling;
100,000 tasks are ten PRDs with distinct task ids), each parsed, approved, planned, scored and
reviewed, so every task with its dependencies met is ``ready``. ``--keep DIR`` keeps the states in
DIR and reuses them on the next run (a 100,000-task setup takes minutes), so a before/after pair
measures the same states; ``--baseline DIR`` measures another anvil source tree (on ``PYTHONPATH``)
interleaved with this one, call by call, which a shared machine's noise needs; ``--database URL``
keeps each state on PostgreSQL, in a schema of its own in that database.

Then, round-robin over ``--runs`` rounds, each call as its own process (the installed ``anvil``
console script), whole-process wall time and CPU time (user + system, which a shared machine's load
disturbs less): ``status --json``, ``summary --json``, ``board --json``, ``graph --json``, ``graph``
(human) and ``list --json``, each twice: ``cold``, the first read right after an event that computes
the critical path again (a dependency removed and put back, untimed) with the state's ``cache/`` emptied
(a fresh clone or replica), and ``warm``, right after an untimed call of its own. With
the output size and, for ``board --json``, the process's peak resident memory (``wait4``'s
``ru_maxrss``). Prints medians and their ratio to the targets: each call <= 150 ms at 10,000 tasks and
<= 300 ms at 100,000, cold and warm; ``board`` memory < 50 MB at 100,000.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.bench_cli import anvil_command  # noqa: E402
from scripts.prdgen import generate_prd  # noqa: E402

PER_PRD = 10_000
CALLS: dict[str, list[str]] = {
    "status --json": ["status", "--json"],
    "summary --json": ["summary", "--json"],
    "board --json": ["board", "--json"],
    "graph --json": ["graph", "--json"],
    "graph": ["graph"],
    "list --json": ["list", "--json"],
}
MODES = ("cold", "warm")
"""``cold``: the first read right after an event that computes the critical path again (a dependency
of the graph's first edge removed and put back, untimed), with the state's ``cache/`` emptied too (as on a
fresh clone or replica); ``warm``: the call right after an untimed one of its own."""
CALL_TIMEOUT = 300.0


DATABASE_VAR = "BENCH_READS_DATABASE"
"""How ``--database`` reaches the set-up process: in its environment, never its argv (a URL may hold a password)."""


def state_env(base: Path, database: str | None = None) -> dict[str, str]:
    """The environment of the state at ``base``; with ``database``, on PostgreSQL in the schema its set-up made."""
    # Without PYTHONDONTWRITEBYTECODE (test runs set it): an installed anvil keeps its bytecode caches,
    # which the untimed warm-up call writes; otherwise every call would compile anvil again.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANVIL_") and k not in ("PYTHONDONTWRITEBYTECODE", DATABASE_VAR)}
    env.update(ANVIL_HOME=str(base / "home"), ANVIL_ROOT=str(base / "project"), ANVIL_ACTOR="lead")
    schema = base / "schema.txt"
    if database and schema.exists():
        from scripts.benchdb import with_schema

        env["ANVIL_DATABASE_URL"] = with_schema(database, schema.read_text(encoding="utf-8").strip())
    return env


def set_up(base: Path, n_tasks: int, database: str | None = None) -> dict[str, str]:
    """A project with ``n_tasks`` planned and reviewed tasks at ``base`` (reused when already there);
    with ``database``, its state in a schema of its own there (named in ``base/schema.txt``)."""
    from anvil.ops.invoke import invoke

    done = base / "ready.json"
    if done.exists():
        return state_env(base, database)
    shutil.rmtree(base, ignore_errors=True)
    root = base / "project"
    (root / "docs").mkdir(parents=True)
    if database:
        from scripts.benchdb import new_schema

        (base / "schema.txt").write_text(new_schema(database)[0], encoding="utf-8")
    env = state_env(base, database)
    cwd = str(root)
    invoke("init_project", {"name": "Reads"}, env=env, cwd=cwd)
    prds = max(1, (n_tasks + PER_PRD - 1) // PER_PRD)
    width = len(str(n_tasks))
    t0 = time.perf_counter()
    for index in range(prds):
        count = min(PER_PRD, n_tasks - index * PER_PRD)
        prd_id = f"p{index + 1:02d}"
        text = generate_prd(count, 100, seed=7 + index, compact=True, first_task=index * PER_PRD + 1,
                            id_width=width, folder_prefix=f"{prd_id}/", project="Reads benchmark")
        path = root / "docs" / f"{prd_id}.md"
        path.write_text(text, encoding="utf-8")
        parsed = invoke("parse_prd", {"file": str(path), "prd_id": prd_id}, env=env, cwd=cwd)
        if parsed["error_count"]:
            raise SystemExit(f"the generated PRD has errors: {parsed['errors'][:2]}")
        invoke("review_prd", {"prd_id": prd_id, "reviewer": "lead"}, env=env, cwd=cwd)
        invoke("review_prd", {"prd_id": prd_id, "reviewer": "lead", "approve": True}, env=env, cwd=cwd)
        invoke("plan_tasks", {"prd_id": prd_id, "use_llm": False}, env=env, cwd=cwd)
        invoke("score_tasks", {"prd_id": prd_id}, env=env, cwd=cwd)
        invoke("review_tasks", {"prd_id": prd_id}, env=env, cwd=cwd)
        print(f"    set up {prd_id}: {count} tasks ({time.perf_counter() - t0:.0f} s so far)", flush=True)
    done.write_text(json.dumps({"tasks": n_tasks, "prds": prds}), encoding="utf-8")
    return env


def set_up_apart(base: Path, n_tasks: int, database: str | None = None) -> dict[str, str]:
    """:func:`set_up` in a process of its own, so this one stays small: a child forked from a large
    parent would count the parent's pages in its peak resident memory."""
    child = {**os.environ, DATABASE_VAR: database} if database else dict(os.environ)
    subprocess.run([sys.executable, __file__, "--set-up", str(n_tasks), str(base)], check=True, timeout=3600, env=child)
    return state_env(base, database)


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, int, float, float]:
    """(wall seconds, stdout bytes, peak RSS in MB, CPU seconds) of one process."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read() if proc.stderr else b""
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[-3:])} exited {proc.returncode}: {err.decode()[-400:]}")
        size = out.tell()
    return elapsed, size, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def change_the_critical_path(command: list[str], env: dict[str, str], cwd: str) -> None:
    """Two events that make the critical path be computed again (a dependency of the graph's first
    edge removed and put back), so the next read is the first after a graph-changing event."""
    graph = json.loads(subprocess.run([*command, "graph", "--json"], env=env, cwd=cwd, capture_output=True,
                                      check=True, timeout=CALL_TIMEOUT).stdout)
    edges = graph.get("edges") or []
    if edges:
        pair = f"{edges[0]['to']}:{edges[0]['from']}"  # the dependent depends on the dependency
        # A plan of several PRDs: an edge is changed in its own PRD (not the default one).
        prd = json.loads(subprocess.run([*command, "show", edges[0]["to"], "--json"], env=env, cwd=cwd,
                                        capture_output=True, check=True, timeout=CALL_TIMEOUT).stdout)["prd_id"]
        for flag in ("--remove", "--add"):
            subprocess.run([*command, "deps", flag, pair, "--prd", prd, "--actor", "lead", "--json"], env=env,
                           cwd=cwd, capture_output=True, check=True, timeout=CALL_TIMEOUT)


Figures = dict[str, dict[str, dict[str, dict[str, float]]]]
"""variant -> call -> mode -> figure (``ms``, ``min_ms``, ``cpu_ms``, ``bytes``, ``rss_mb``)."""


def measure(env: dict[str, str], runs: int, names: list[str], baseline: Path | None = None) -> Figures:
    """Figures per variant (``this`` and, with ``baseline``, ``baseline``), call and mode, interleaved
    call by call so that the machine's noise hits both alike. The baseline runs the anvil sources at
    ``baseline`` (``PYTHONPATH``) against the same state; a warm call follows an untimed call of the
    same variant, so it finds what that kept in its own format."""
    from anvil.engine.storage.paths import resolve_state

    command, _ = anvil_command()
    cwd = env["ANVIL_ROOT"]
    cache = resolve_state(env, cwd).state_dir / "cache"
    variants = {"this": env}
    if baseline is not None:
        variants["baseline"] = {**env, "PYTHONPATH": str(baseline)}
    for variant_env in variants.values():  # warm-up: bytecode caches, the mirror, the file cache
        run_once([*command, "status", "--json"], variant_env, cwd)
    samples: dict[str, dict[str, dict[str, list[tuple[float, int, float, float]]]]] = {
        v: {name: {mode: [] for mode in MODES} for name in names} for v in variants}
    for _ in range(runs):
        for name in names:
            argv = [*command, *CALLS[name]]
            for mode in MODES:
                for variant, variant_env in variants.items():
                    if mode == "cold":
                        change_the_critical_path(command, variant_env, cwd)
                        shutil.rmtree(cache, ignore_errors=True)
                    else:
                        run_once(argv, variant_env, cwd)
                    samples[variant][name][mode].append(run_once(argv, variant_env, cwd))
    return {variant: {name: {mode: {"ms": statistics.median(s[0] for s in rows) * 1e3,
                                    "min_ms": min(s[0] for s in rows) * 1e3,
                                    "cpu_ms": statistics.median(s[3] for s in rows) * 1e3,
                                    "bytes": rows[-1][1], "rss_mb": max(s[2] for s in rows)}
                             for mode, rows in by_mode.items()} for name, by_mode in by_name.items()}
            for variant, by_name in samples.items()}


def floor_ms(env: dict[str, str], runs: int) -> float:
    times = [run_once([sys.executable, "-c", "pass"], env, env["ANVIL_ROOT"])[0] for _ in range(runs)]
    return statistics.median(times) * 1e3


def report(n: int, figures: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    target = 150.0 if n <= 10_000 else 300.0
    print(f"  {'call':<15} {'mode':<5} {'median ms':>10} {'min ms':>8} {'CPU ms':>7} {'of target':>9} "
          f"{'output bytes':>13} {'peak RSS MB':>12}")
    verdicts = {}
    for name, by_mode in figures.items():
        for mode, f in by_mode.items():
            ok = f["ms"] <= target
            verdicts[f"{name}, {mode}"] = ok
            print(f"  {name:<15} {mode:<5} {f['ms']:10.1f} {f['min_ms']:8.1f} {f['cpu_ms']:7.1f} "
                  f"{f['ms'] / target:8.0%}  {int(f['bytes']):13,} {f['rss_mb']:12.1f}   "
                  f"{'meets' if ok else 'MISSES'} <= {target:.0f} ms")
    if n >= 100_000 and "board --json" in figures:
        board = max(f["rss_mb"] for f in figures["board --json"].values())
        print(f"  board memory {board:.1f} MB (target < 50 MB) -> {'meets' if board < 50 else 'MISSES'}")
    return {"tasks": n, "target_ms": target, "figures": figures, "verdicts": verdicts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark status, summary, board, graph and list on large plans, "
                                                 "cold and warm.")
    parser.add_argument("--sizes", type=int, nargs="*", default=None, help="task counts (default 10000 100000)")
    parser.add_argument("--runs", type=int, default=None, help="calls per command (default 7, quick 3)")
    parser.add_argument("--quick", action="store_true", help="10,000 tasks only, 3 runs")
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the prepared states here")
    parser.add_argument("--calls", nargs="*", choices=sorted(CALLS), default=None,
                        help="only these calls (default: all)")
    parser.add_argument("--json-out", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="also measure the anvil sources in this directory (e.g. `git archive main | tar -x -C "
                             "DIR`), interleaved call by call with this checkout")
    parser.add_argument("--database", default=None,
                        help="PostgreSQL URL: each state in a schema of its own there (kept with --keep, named in "
                             "DIR/reads-pg-N/schema.txt; drop it when done)")
    parser.add_argument("--set-up", nargs=2, metavar=("TASKS", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.set_up:
        set_up(Path(args.set_up[1]), int(args.set_up[0]), os.environ.get(DATABASE_VAR))
        return 0
    sizes = args.sizes or ([10_000] if args.quick else [10_000, 100_000])
    runs = args.runs or (3 if args.quick else 7)
    _, shown = anvil_command()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {runs} calls per command, round-robin; "
          f"anvil command: {shown}")
    results = []
    with tempfile.TemporaryDirectory(prefix="anvil-bench-reads-") as tmp:
        keep = args.keep or Path(tmp)
        for n in sizes:
            print(f"{n:,} tasks{' on PostgreSQL' if args.database else ''}")
            name = f"reads-pg-{n}" if args.database else f"reads-{n}"
            env = set_up_apart(keep / name, n, args.database)
            print(f"  floor (python -c pass): {floor_ms(env, runs):.1f} ms; load average "
                  f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
            figures = measure(env, runs, args.calls or list(CALLS), args.baseline)
            for variant, by_call in figures.items():
                if len(figures) > 1:
                    print(f" {variant}{'' if variant == 'this' else f' ({args.baseline})'}:")
                results.append({**report(n, by_call), "variant": variant})
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
