"""Measure the agent work loop: queue latency at scale and multi-process drain throughput.

Usage: ``python scripts/bench_loop.py [--quick] [--sizes N ...] [--calls N] [--agents N] [--tasks N]
[--no-http] [--profile] [--database URL | --database-env NAME]``

(a) Engine-level latency, in-process through ``anvil.ops.runtime.invoke`` (full input validation,
    stale-claim reaping, the write transaction, the mirror): the median of ``get_next_task`` and
    of ``claim_task`` (claiming what was just offered) with 1,000 / 10,000 / 100,000 tasks in the
    database. The big states are built quickly: a small generated PRD goes through the real
    init/parse/review/approve operations, then the N tasks (ready, scored, with some dependencies,
    shared files and conflict groups) are appended as ``planning.batch_applied`` events through
    ``Store.write()`` / ``tx.append``, 100 tasks per event so that no mirror line exceeds 64 KiB.
    One more row uses a real 2,000-task PRD parsed and planned by the real operations, because
    ``claim_task`` also loads the stored PRD document and hashes the PRD source on every call.
(b) The drain: ``--agents`` processes (spawned) loop next -> claim -> submit through ``invoke``
    on a ``--tasks`` plan from ``scripts.prdgen`` while one reviewer process approves; reports wall
    time, claims per second and tool calls per second.
(c) The same drain through one ``anvil serve --http`` server on 127.0.0.1 (bearer token from an
    environment variable, planning tools enabled for the reviewer), every client process calling
    it with ``anvil.mcp.client.call_tool``; reports tool calls per second.

With ``--database URL`` (a PostgreSQL database; better ``--database-env NAME`` naming a variable
that holds it, so no password sits in argv) the latency rows (a) are measured on PostgreSQL too,
and (d) drains the plan with ``--agents`` agents through 2 ``anvil serve --http`` replicas sharing
one state, on SQLite (one state directory) and on PostgreSQL, reporting claims per second, lost
claim races and duplicate claims (a task claimed while it was held, from the event log). Each
PostgreSQL run gets its own schema in that database, dropped afterwards.

Every loop is bounded by a call count and a deadline; all state lives in a temporary directory.

The full-size run for the record (on a quiet machine; 100k-task latency on both backends, then the
8-agent, 200-task drains: 2 replicas on SQLite and on PostgreSQL, direct and one HTTP server)::

    export ANVIL_BENCH_DB='postgresql://USER@HOST:PORT/DATABASE'   # password from PGPASSWORD or ~/.pgpass
    python scripts/bench_loop.py --database-env ANVIL_BENCH_DB --json

A smoke run that proves the script works (about half a minute)::

    python scripts/bench_loop.py --quick --sizes 2000 --calls 10 --tasks 30 --database-env ANVIL_BENCH_DB
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import multiprocessing
import os
import pstats
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.drain import approve_as_submitted  # noqa: E402
from scripts.netutil import free_port, stop_server, wait_for_port  # noqa: E402
from scripts.prdgen import generate_prd  # noqa: E402

SPAWN = multiprocessing.get_context("spawn")
TOKEN_ENV = "ANVIL_BENCH_TOKEN"
REVIEWER = "bench-reviewer"
LOST_RACE_CODES = {"already_claimed", "not_claimable", "conflict_group_busy", "file_conflict",
                   "dependencies_pending"}
TASKS_PER_EVENT = 100


# -- environments -------------------------------------------------------------------------------------

SCHEMAS: list[tuple[str, str]] = []  # (database URL, schema) to drop at the end


def fresh_env(base: Path, name: str, database: str | None = None) -> dict[str, str]:
    """An environment selecting a new, empty project under ``base`` (in a new schema of ``database``)."""
    root = base / name / "project"
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANVIL_")}
    env.update(ANVIL_HOME=str(base / name / "home"), ANVIL_ROOT=str(root), PYTHONPATH=str(ROOT))
    if database:
        from scripts.benchdb import new_schema

        schema, url = new_schema(database)
        SCHEMAS.append((database, schema))
        env["ANVIL_DATABASE_URL"] = url
    return env


def call(name: str, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    from anvil.ops.invoke import invoke

    return invoke(name, args, env=env, cwd=env["ANVIL_ROOT"])


def approved_prd(env: dict[str, str], prd_text: str) -> None:
    """init, write the PRD, parse, review and approve it through the real operations."""
    call("init_project", {"name": "Bench"}, env)
    path = Path(env["ANVIL_ROOT"]) / "docs" / "prd.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(prd_text, encoding="utf-8")
    parsed = call("parse_prd", {"file": "docs/prd.md"}, env)
    if parsed["error_count"]:
        raise SystemExit(f"generated PRD does not parse: {parsed['errors'][:2]}")
    call("review_prd", {"reviewer": "lead"}, env)
    call("review_prd", {"reviewer": "lead", "approve": True}, env)


def planned_state(env: dict[str, str], n_tasks: int, n_features: int) -> None:
    """A plan from a generated PRD taken through every real operation up to ready."""
    approved_prd(env, generate_prd(n_tasks, n_features, seed=11))
    call("plan_tasks", {"use_llm": False}, env)
    call("score_tasks", {}, env)
    promoted = call("review_tasks", {}, env)
    if len(promoted["promoted_to_ready"]) != n_tasks:
        raise SystemExit("not every generated task was promoted to ready")
    # The drain measures claims: its agents submit without proofs, so approval records the gaps.
    call("configure_project", {"evidence_gate": "advisory", "actor": "lead"}, env)


def synthetic_tasks(n: int, prd_id: str, seed: int = 5) -> list[dict[str, Any]]:
    """``n`` ready, scored task dicts shaped like planned tasks (ids T000001...)."""
    rng = random.Random(seed)
    priorities = ("critical", "high", "medium", "medium", "low")
    tasks = []
    for i in range(n):
        tid = f"T{i + 1:06d}"
        feature = f"F{i * 100 // n + 1:03d}"
        files = [f"src/{feature.lower()}/{tid.lower()}.py"]
        groups: list[str] = []
        if rng.random() < 0.05:
            shared = rng.randrange(max(1, n // 40))
            files.append(f"src/shared/s{shared}.py")
            groups = [f"CG{shared + 1:05d}"]
        deps = [f"T{rng.randrange(max(0, i - 50), i) + 1:06d}"] if i and rng.random() < 0.2 else []
        scores = {"complexity": rng.randint(1, 5), "parallelizability": rng.randint(1, 5),
                  "context_load": rng.randint(1, 5), "blast_radius": rng.randint(1, 5),
                  "review_risk": rng.randint(1, 5), "agent_suitability": rng.randint(1, 5)}
        tasks.append({"id": tid, "prd_id": prd_id, "feature_id": feature, "title": f"Task {i + 1}",
                      "description": "Synthetic task.", "status": "ready",
                      "priority": priorities[rng.randrange(len(priorities))], "type": "feature",
                      "likely_files": files, "dependencies": deps, "inferred_dependencies": [],
                      "acceptance_criteria": ["It works."], "verification": ["pytest -q"],
                      "conflict_groups": groups, "scores": scores})
    return tasks


def big_state(env: dict[str, str], n: int) -> float:
    """An approved small PRD plus ``n`` synthetic ready tasks; returns the build time in seconds."""
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    start = time.perf_counter()
    approved_prd(env, generate_prd(3, 1))
    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        prd_id, revision, digest = store.conn.execute("SELECT prd_id, revision, source_digest FROM prds").fetchone()
        features = [{"id": f"F{f:03d}", "prd_id": prd_id, "title": f"Feature {f}", "description": "",
                     "requirements": []} for f in range(1, 101)]
        tasks = synthetic_tasks(n, prd_id)
        for first in range(0, n, 10_000):
            with store.write("bench") as tx:
                for lo in range(first, min(n, first + 10_000), TASKS_PER_EVENT):
                    tx.append("planning.batch_applied", {
                        "prd_id": prd_id, "revision": revision, "source_digest": digest, "features": features,
                        "tasks": tasks[lo:lo + TASKS_PER_EVENT], "pruned_task_ids": [], "pruned_feature_ids": []})
    return time.perf_counter() - start


# -- (a) latency --------------------------------------------------------------------------------------

def measure_loop(env: dict[str, str], calls: int, deadline: float) -> tuple[list[float], list[float]]:
    """``calls`` rounds of next then claim-what-was-offered; the latencies in seconds."""
    next_times, claim_times = [], []
    call("get_next_task", {"actor": "warm"}, env)  # imports and caches outside the measurement
    for i in range(calls):
        if time.monotonic() > deadline:
            break
        t0 = time.perf_counter()
        offer = call("get_next_task", {"actor": f"agent-{i % 8}"}, env)
        t1 = time.perf_counter()
        if offer["task"] is None:
            break
        call("claim_task", {"task_id": offer["task"]["id"], "actor": f"agent-{i % 8}"}, env)
        t2 = time.perf_counter()
        next_times.append(t1 - t0)
        claim_times.append(t2 - t1)
    return next_times, claim_times


def profile_top(env: dict[str, str], calls: int, limit: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    measure_loop(env, calls, time.monotonic() + 60)
    profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("tottime").print_stats(limit)
    lines = [ln for ln in buffer.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start:start + limit + 1])


def ms(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    return (f"median {statistics.median(ordered) * 1e3:6.2f} ms  p90 {ordered[int(len(ordered) * 0.9) - 1] * 1e3:6.2f}"
            f" ms  (n={len(ordered)})")


def bench_latency(base: Path, sizes: list[int], calls: int, profile: bool,
                  database: str | None = None) -> dict[str, Any]:
    backend = "PostgreSQL" if database else "SQLite"
    print(f"(a) engine latency through invoke (in-process) on {backend}, next then claim of the offered task")
    out: dict[Any, Any] = {}
    for n in sizes:
        env = fresh_env(base, f"size-{n}", database)
        built = big_state(env, n)
        nxt, clm = measure_loop(env, calls, time.monotonic() + 120)
        out[n] = {"next_ms": statistics.median(nxt) * 1e3, "claim_ms": statistics.median(clm) * 1e3}
        print(f"  {n:>7} tasks (built in {built:5.1f}s)")
        print(f"      get_next_task  {ms(nxt)}")
        print(f"      claim_task     {ms(clm)}")
        if profile and n == max(sizes):
            print("      cProfile of further rounds at this size (top functions by own time):")
            print("\n".join("        " + ln for ln in profile_top(env, max(10, calls // 2)).splitlines()))
        shutil.rmtree(base / f"size-{n}", ignore_errors=True)
    real = 500 if len(sizes) == 1 else 2000
    env = fresh_env(base, "real", database)
    start = time.perf_counter()
    planned_state(env, real, 100)
    built = time.perf_counter() - start
    nxt, clm = measure_loop(env, calls, time.monotonic() + 120)
    out[f"real-{real}"] = {"next_ms": statistics.median(nxt) * 1e3, "claim_ms": statistics.median(clm) * 1e3}
    print(f"  {real:>7} tasks from a real generated PRD, parsed and planned (built in {built:5.1f}s)")
    print(f"      get_next_task  {ms(nxt)}")
    print(f"      claim_task     {ms(clm)}")
    shutil.rmtree(base / "real", ignore_errors=True)
    return out


# -- (b)/(c) the drain ---------------------------------------------------------------------------------

def _caller(env: dict[str, str], url: str | None) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    if url is None:
        from anvil.ops.registry import get_operation

        get_operation("claim_task")  # import the registry before the clock starts
        return lambda name, args: call(name, args, env)
    from anvil.mcp.client import call_tool
    from anvil.mcp.target import McpTarget

    target = McpTarget(kind="http", url=url, token_env=TOKEN_ENV)
    return lambda name, args: call_tool(target, name, args, env=env, cwd=env["ANVIL_ROOT"], timeout=60)


def agent_proc(env: dict[str, str], url: str | None, actor: str, cond: Any, changes: Any, done: Any,
               start: Any, deadline: float, out: Any, atomic: bool = False) -> None:
    from anvil.engine.errors import Refused

    invoke = _caller(env, url)
    stats: Counter[str] = Counter()
    error = None
    start.wait(timeout=120)
    try:
        while not done.is_set() and time.monotonic() < deadline:
            seen = changes.value
            if atomic:  # claim_next_task: find and claim in one step, no race to lose
                stats["calls"] += 1
                claim = invoke("claim_next_task", {"actor": actor})["claim"]
                task = {"id": claim["task_id"]} if claim else None
            else:
                offer = invoke("get_next_task", {"actor": actor})
                stats["calls"] += 1
                task = offer["task"]
            if task is None:
                stats["idle"] += 1
                with cond:
                    cond.wait_for(lambda seen=seen: changes.value != seen or done.is_set(), timeout=5)
                continue
            if not atomic:
                try:
                    stats["calls"] += 1
                    claim = invoke("claim_task", {"task_id": task["id"], "actor": actor})
                except Refused as exc:
                    if exc.code not in LOST_RACE_CODES:
                        raise
                    stats["lost"] += 1
                    continue
            stats["claims"] += 1
            invoke("submit_completion_evidence", {
                "task_id": task["id"], "actor": actor, "generation": claim["generation"], "claim_id": claim["id"],
                "commands_run": ["pytest -q"], "files_changed": claim["expected_files"]})
            stats["calls"] += 1
            with cond:
                changes.value += 1
                cond.notify_all()
    except Exception as exc:  # reported, not raised: the parent prints it
        error = f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300]
    out.put((actor, dict(stats), error))


def reviewer_proc(env: dict[str, str], url: str | None, total: int, cond: Any, changes: Any, done: Any,
                  start: Any, deadline: float, out: Any) -> None:
    invoke = _caller(env, url)
    stats: Counter[str] = Counter()
    error = None
    start.wait(timeout=120)
    approved: list[str] = []

    def waiting() -> list[str]:
        stats["calls"] += 1
        return [t["id"] for t in invoke("list_tasks", {"status": "needs_review", "limit": 1000})["tasks"]]

    def approve(task_id: str) -> None:
        invoke("apply_review_decision", {"task_id": task_id, "approve": True, "reviewer": REVIEWER})
        stats["calls"] += 1

    try:
        approve_as_submitted(waiting, approve, total, approved, cond=cond, changes=changes, done=done,
                             deadline=deadline)
    except Exception as exc:
        error = f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300]
    stats["approved"] = len(approved)
    out.put((REVIEWER, dict(stats), error))


def run_drain(env: dict[str, str], agents: int, tasks: int, url: str | list[str] | None, budget: float,
              atomic: bool = False) -> dict[str, Any]:
    cond, changes, done, out = SPAWN.Condition(), SPAWN.Value("i", 0), SPAWN.Event(), SPAWN.Queue()
    start = SPAWN.Barrier(agents + 2)
    deadline = time.monotonic() + budget + 60  # + process start-up, which happens before ``start``
    urls = url if isinstance(url, list) else [url]  # several replicas: agents spread over them
    procs = [SPAWN.Process(target=agent_proc, args=(env, urls[i % len(urls)], f"agent-{i}", cond, changes, done,
                                                    start, deadline, out, atomic), daemon=True)
             for i in range(agents)]
    procs.append(SPAWN.Process(target=reviewer_proc, args=(env, urls[0], tasks, cond, changes, done, start, deadline,
                                                           out), daemon=True))
    for proc in procs:
        proc.start()
    try:
        start.wait(timeout=120)  # every child has imported what it needs: start the clock, all go
        t0 = time.perf_counter()
        reports = [out.get(timeout=budget + 60) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    wall = time.perf_counter() - t0
    totals: Counter[str] = Counter()
    for _, stats, _ in reports:
        totals.update(stats)
    errors = [(who, err) for who, _, err in reports if err]
    return {"wall_s": wall, "claims": totals["claims"], "approved": totals["approved"], "calls": totals["calls"],
            "lost": totals["lost"], "idle": totals["idle"], "errors": errors}


def integrity(env: dict[str, str]) -> dict[str, Any]:
    """``verify`` on the drained state plus the final task statuses."""
    from anvil.engine.storage.integrity import verify
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        report = verify(store)
        statuses = dict(store.conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall())
    return {"chain_ok": report["chain_ok"], "replay_ok": report["replay_ok"], "mirror_ok": report["mirror_ok"],
            "statuses": statuses, "problems": report["problems"][:2]}


def print_drain(label: str, result: dict[str, Any], tasks: int) -> None:
    print(f"  {label}: {tasks} tasks in {result['wall_s']:.2f} s wall; {result['claims'] / result['wall_s']:.1f} "
          f"claims/s; {result['calls']} tool calls = {result['calls'] / result['wall_s']:.1f} calls/s; "
          f"{result['lost']} lost claim races; {result['idle']} idle waits")
    if result["claims"] != tasks or result["approved"] != tasks:
        print(f"    INCOMPLETE: {result['claims']} claimed, {result['approved']} approved")
    for who, err in result["errors"]:
        print(f"    error in {who}: {err}")
    check = result.get("integrity")
    if check:
        print(f"    afterwards: task statuses {check['statuses']}; verify chain_ok={check['chain_ok']} "
              f"replay_ok={check['replay_ok']} mirror_ok={check['mirror_ok']} {check['problems'] or ''}")


def anvil_command() -> tuple[list[str], str]:
    found = shutil.which("anvil", path=str(Path(sys.executable).parent))
    if found:
        return [found], found
    return [sys.executable, "-m", "anvil"], f"{sys.executable} -m anvil"


def bench_drain(base: Path, agents: int, tasks: int, http: bool, budget: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    print(f"(b) drain through invoke: {agents} agent processes + 1 reviewer process, {tasks} tasks")
    env = fresh_env(base, "drain-direct")
    planned_state(env, tasks, 10)
    results["direct"] = run_drain(env, agents, tasks, None, budget)
    results["direct"]["integrity"] = integrity(env)
    print_drain("direct", results["direct"], tasks)
    env = fresh_env(base, "drain-atomic")
    planned_state(env, tasks, 10)
    results["atomic"] = run_drain(env, agents, tasks, None, budget, atomic=True)
    results["atomic"]["integrity"] = integrity(env)
    print_drain("claim_next_task", results["atomic"], tasks)
    if not http:
        return results
    print(f"(c) the same drain through one `anvil serve --http` server, {agents + 1} client processes")
    env = fresh_env(base, "drain-http")
    planned_state(env, tasks, 10)
    port = free_port()
    env[TOKEN_ENV] = secrets.token_urlsafe(24)
    server_env = {**env, "ANVIL_MCP_PLANNING": "1"}
    command, shown = anvil_command()
    log = open(base / "server.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen([*command, "serve", "--http", "--port", str(port), "--token-env", TOKEN_ENV],
                              env=server_env, cwd=env["ANVIL_ROOT"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, server)
        print(f"  server: {shown} serve --http on 127.0.0.1:{port}")
        results["http"] = run_drain(env, agents, tasks, f"http://127.0.0.1:{port}/mcp", budget)
        results["http"]["integrity"] = integrity(env)
        print_drain("http", results["http"], tasks)
    finally:
        stop_server(server, log)
    if results["http"]["errors"]:
        print("  server log tail:", (base / "server.log").read_text(errors="replace")[-800:])
    return results


def bench_replicas(base: Path, agents: int, tasks: int, budget: float, database: str,
                   replicas: int = 2) -> dict[str, Any]:
    """(d) the drain through ``replicas`` HTTP servers sharing one state, on SQLite and on PostgreSQL."""
    from anvil.engine.storage.postgres import display_database_url
    from scripts.benchdb import claim_counts, start_replicas

    print(f"(d) drain through {replicas} `anvil serve --http` replicas sharing one state: {agents} agents "
          f"(spread over the replicas) + 1 reviewer, {tasks} tasks; PostgreSQL at {display_database_url(database)}")
    results: dict[str, Any] = {}
    command, _ = anvil_command()
    for label, db in (("sqlite", None), ("postgresql", database)):
        env = fresh_env(base, f"replicas-{label}", db)
        planned_state(env, tasks, 10)
        servers = start_replicas(env, replicas, base, TOKEN_ENV, command)
        try:
            urls = [f"http://127.0.0.1:{port}/mcp" for _, port, _ in servers]
            result = run_drain(env, agents, tasks, urls, budget)
        finally:
            for proc, _, log in servers:
                stop_server(proc, log)
        result["integrity"] = integrity(env)
        result.update(claim_counts(env))
        results[label] = result
        print_drain(f"{label:>10}, {replicas} replicas", result, tasks)
        print(f"    duplicate claims (a task claimed while held): {result['duplicate_claims']}; tasks claimed more "
              f"than once: {result['claimed_more_than_once']}")
    return results


def database_arg(args: argparse.Namespace) -> str | None:
    """The PostgreSQL URL from ``--database`` or the variable named by ``--database-env``."""
    if args.database_env:
        value = os.environ.get(args.database_env, "").strip()
        if not value:
            raise SystemExit(f"--database-env names {args.database_env!r}, which is not set")
        return value
    return args.database


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the agent work loop.")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--calls", type=int, default=None, help="rounds of next+claim per size")
    parser.add_argument("--agents", type=int, default=None)
    parser.add_argument("--tasks", type=int, default=None, help="tasks in the drain plan")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds each drain may take")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the loop at the largest size")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    parser.add_argument("--database", metavar="URL", help="also measure on this PostgreSQL database")
    parser.add_argument("--database-env", metavar="NAME", help="the variable holding --database's URL")
    args = parser.parse_args(argv)
    database = database_arg(args)
    sizes = args.sizes or ([1000] if args.quick else [1000, 10_000, 100_000])
    calls = args.calls or (20 if args.quick else 100)
    agents = args.agents or (4 if args.quick else 8)
    tasks = args.tasks or (40 if args.quick else 200)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; state in a temporary directory")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-loop-") as tmp:
        base = Path(tmp)
        try:
            figures = {"latency": bench_latency(base, sizes, calls, args.profile)}
            if database:
                figures["latency_postgresql"] = bench_latency(base / "pg", sizes, calls, args.profile, database)
                figures["replicas"] = bench_replicas(base, agents, tasks, args.budget, database)
            figures["drain"] = bench_drain(base, agents, tasks, not args.no_http, args.budget)
        finally:
            from scripts.benchdb import drop_schema

            for url, schema in SCHEMAS:
                drop_schema(url, schema)
    if "http" in figures["drain"]:
        direct, http = figures["drain"]["direct"], figures["drain"]["http"]
        print(f"ratio: http drain wall / direct drain wall = {http['wall_s'] / direct['wall_s']:.2f}x")
    biggest = figures["latency"][max(sizes)]
    verdict = "meets" if max(biggest["next_ms"], biggest["claim_ms"]) < 10 else "MISSES"
    print(f"target < 10 ms per call at {max(sizes)} tasks: next {biggest['next_ms']:.2f} ms, claim "
          f"{biggest['claim_ms']:.2f} ms -> {verdict}")
    if "latency_postgresql" in figures:
        pg = figures["latency_postgresql"][max(sizes)]
        print(f"PostgreSQL at {max(sizes)} tasks: next {pg['next_ms']:.2f} ms, claim {pg['claim_ms']:.2f} ms "
              f"(SQLite: next {biggest['next_ms']:.2f} ms, claim {biggest['claim_ms']:.2f} ms)")
    if args.json:
        print(json.dumps(figures, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
