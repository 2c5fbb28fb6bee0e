"""Measure a team drain: 8 agents and a reviewer through 2 HTTP replicas sharing one PostgreSQL state.

Usage: ``python scripts/bench_drain.py [--agents N] [--tasks N] [--replicas N] [--database URL]
[--budget SECONDS] [--agent-tokens]``

The plan comes from ``scripts.prdgen`` through the real operations (``scripts.bench_loop.planned_state``:
parsed, approved, planned, scored, reviewed, evidence gate advisory). ``--replicas`` ``anvil serve --http``
processes serve it from one PostgreSQL database (``--database URL``: a schema of its own, dropped
afterwards; without it a throwaway cluster started here, ``tests/pgcluster.py``). The clients run in
this process, one thread each, calling the tools over HTTP with the CLI's own MCP client
(``anvil.mcp.client.call_tool``): each agent loops ``claim_next_task`` (waiting up to 5 s for work) then
``submit_completion_evidence``; the reviewer waits on the board's review column (``get_board`` with
``after_seq``/``wait_seconds``) and decides what it shows in one ``apply_review_decisions`` call.

Each replica runs with a meter installed before the server starts (this script's ``--replica`` mode):
it counts the writer-lock acquisitions (``pg_advisory_xact_lock`` / ``pg_try_advisory_xact_lock``)
and the productive writes (transactions that appended events) and writes them to a file at exit.

Prints claims per second in the claiming phase (first claim to last claim), lock acquisitions per
productive write, p50/p95/p99 per tool, and from the event log the duplicate claims (a task claimed
while it was held). Goals on 2 cores: >= 40 claims/s, 0 duplicates, <= 1.2 lock acquisitions per write.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import runpy
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TOKEN_ENV = "ANVIL_BENCH_TOKEN"
REVIEWER = "bench-reviewer"


WAKE_ALL_ENV = "ANVIL_BENCH_WAKE_ALL"
"""Set to 1 for the replicas by ``--wake-all``: a waiting claim wakes at every commit (the behaviour
before waits for work), for comparison."""
SWITCH_ENV = "ANVIL_BENCH_SWITCH_INTERVAL"
"""Set (to seconds) for the replicas by ``--switch-interval``: their interpreter's thread switch interval
(``sys.setswitchinterval``; 0.005 by default), for comparison."""
PROFILE_ENV = "ANVIL_BENCH_PROFILE"
"""Set (to a file path) for a replica by ``--profile``: it cProfiles all its threads into that file."""


def replica_main(stats_path: str, argv: list[str], *, probe: bool = True) -> None:
    """Run ``anvil <argv>`` (the server) with the lock meter installed; counts go to ``stats_path``.
    Without ``probe`` a waiting claim takes the lock on every wake-up (the behaviour before the
    lock-free look), for comparison."""

    switch = os.environ.pop(SWITCH_ENV, "")
    if switch:
        # How long a thread woken by the database's answer may wait for the GIL while another runs.
        sys.setswitchinterval(float(switch))
    profile_path = os.environ.pop(PROFILE_ENV, "")
    if profile_path:
        import signal

        from scripts import threadprof

        # uvicorn takes SIGTERM and SIGINT for itself: the parent asks for the profile with SIGUSR1.
        signal.signal(signal.SIGUSR1, lambda *_: threadprof.dump(Path(profile_path)))
        threadprof.start()

    if not probe:
        from anvil.ops import runtime

        runtime.WAIT_PROBES.clear()

    counts: dict[str, Any] = {"locks": 0, "productive": 0, "transactions": 0, "holds": [], "waits": [],
                              "locked_statements": [], "locked_round_trips": [], "locked_db": [], "wakeups": 0,
                              "operation_cpu": 0.0, "optimistic_starts": 0, "locked_starts": 0}
    guard = threading.Lock()
    from scripts.bench_claim_lock import PgProbe

    def hold(record: dict[str, Any]) -> None:
        with guard:
            counts["holds"].append(record["hold_s"])
            counts["waits"].append(record["wait_s"])
            counts["locked_statements"].append(record["statements"])
            counts["locked_round_trips"].append(record["round_trips"])
            counts["locked_db"].append(record["db_s"])
            if record["productive"]:  # it sent the commit's notification: only a transaction that appended events
                counts["productive"] += 1

    class DrainProbe(PgProbe):
        """Also counts the lock acquisitions and how write transactions began."""

        def executed(self, raw: Any, sql: str, result: Any, started: float, now: float) -> Any:
            had = id(raw) in self.held
            answer = super().executed(raw, sql, result, started, now)
            head = sql.lstrip()[:60].upper()
            with guard:
                if "BEGIN ISOLATION LEVEL" in head:  # optimistic, or holding the lock from the start (after a COMMIT)
                    counts["optimistic_starts" if "REPEATABLE READ" in head else "locked_starts"] += 1
                if not had and id(raw) in self.held:
                    counts["locks"] += 1
            return answer

    DrainProbe(hold).install()

    from anvil.engine.storage import changes

    waited = changes.wait_for_change
    wake_all = os.environ.pop(WAKE_ALL_ENV, "") == "1"

    def wait_for_change(*args: Any, **kwargs: Any) -> int:
        """Counts the waiting ``next``/``claim_next_task`` sleeps that ended before their deadline
        (with ``--wake-all`` they end at any commit, as before waits for work)."""
        started = time.monotonic()
        head: int = waited(*args, **{**kwargs, "work": kwargs.get("work") and not wake_all})
        if kwargs.get("work") and time.monotonic() - started < float(args[2]) - 0.01:
            with guard:
                counts["wakeups"] += 1
        return head

    changes.wait_for_change = wait_for_change  # type: ignore[assignment]

    def dump() -> None:
        with guard:
            text = json.dumps(counts)
        partial = Path(f"{stats_path}.{threading.get_ident()}.new")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, stats_path)  # whole, so the parent never reads half a file

    from anvil.ops import invoke

    def cpu_metered(function: Any, key: str) -> Any:
        def metered(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with guard:
                    counts[key] += spent
        return metered

    invoke.execute = cpu_metered(invoke.execute, "operation_cpu")  # type: ignore[attr-defined]

    from anvil.ops import boundary

    leave = boundary.exit_process

    def exit_process(code: int) -> Any:  # the CLI leaves with os._exit, past atexit: write the counts first
        dump()
        return leave(code)

    boundary.exit_process = exit_process  # type: ignore[assignment]
    atexit.register(dump)

    def keep_dumping() -> None:  # a terminated server may never reach either of the above
        while True:
            time.sleep(0.2)
            dump()

    threading.Thread(target=keep_dumping, daemon=True).start()
    sys.argv = ["anvil", *argv]
    try:
        runpy.run_module("anvil", run_name="__main__")
    finally:
        dump()


def start_replicas(env: dict[str, str], count: int, base: Path, probe: bool = True, profile: Path | None = None,
                   wake_all: bool = False, switch_interval: float | None = None
                   ) -> list[tuple[subprocess.Popen[bytes], int, Any, Path]]:
    from scripts.netutil import free_port, wait_for_port

    server_env = {**env, "ANVIL_MCP_PLANNING": "1", **({WAKE_ALL_ENV: "1"} if wake_all else {}),
                  **({SWITCH_ENV: str(switch_interval)} if switch_interval else {})}
    started = []
    for index in range(count):
        if profile is not None:
            server_env[PROFILE_ENV] = str(profile / f"replica-{index}.pstats")
        port = free_port()
        stats = base / f"replica-{index}.json"
        log = open(base / f"replica-{index}.log", "wb")  # noqa: SIM115 - closed by stop_server
        mode = "--replica" if probe else "--replica-no-probe"
        proc = subprocess.Popen([sys.executable, __file__, mode, str(stats), "--", "serve", "--http", "--port",
                                 str(port), "--token-env", TOKEN_ENV], env=server_env, cwd=env["ANVIL_ROOT"],
                                stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(port, proc)
        started.append((proc, port, log, stats))
    return started


def collect_profiles(servers: list[tuple[subprocess.Popen[bytes], int, Any, Path]], profile: Path) -> None:
    """Ask every replica for its profile (SIGUSR1) and wait up to 20 s for the files."""
    import signal

    for proc, _, _, _ in servers:
        proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 20
    for index in range(len(servers)):
        path = profile / f"replica-{index}.pstats"
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    time.sleep(0.5)  # let the last file be written whole


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU of process ``pid`` so far (with ``reaped``: plus its children it waited for); 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(v) for v in fields[11:15 if reaped else 13])  # utime stime [cutime cstime]
    return ticks / os.sysconf("SC_CLK_TCK")


def postgres_cpu(url: str) -> float:
    """CPU of the PostgreSQL cluster serving ``url`` so far: its postmaster (found by the port on its
    command line), the backends it reaped, and the ones alive now."""
    from urllib.parse import urlsplit

    port = str(urlsplit(url).port or 5432)
    parents: dict[int, int] = {}
    postmaster = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        flat = b" ".join(argv)
        if argv and argv[0].endswith(b"postgres") and (f"-p {port}".encode() in flat):
            postmaster = int(entry.name)
    if postmaster is None:
        return 0.0
    return cpu_seconds(postmaster, reaped=True) + sum(cpu_seconds(pid) for pid, ppid in parents.items()
                                                      if ppid == postmaster)


class Recorder:
    """Per-tool latencies and the times of claims, shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.claim_times: list[float] = []
        self.errors: list[str] = []

    def timed(self, call: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        result: dict[str, Any] = call(name, args)
        elapsed = time.perf_counter() - t0
        with self.lock:
            self.latency[name].append(elapsed)
        return result


def token_env(actor: str) -> str:
    """The variable holding ``actor``'s own token under ``--agent-tokens``."""
    return f"{TOKEN_ENV}_{actor.upper().replace('-', '_')}"


def issue_agent_tokens(env: dict[str, str], actors: list[str]) -> None:
    """``--agent-tokens``: a per-agent token for each actor (the reviewer's with the reviewer role), kept in
    ``env`` under :func:`token_env`; the replicas then authenticate every request by its token."""
    from anvil.ops.invoke import invoke

    for actor in actors:
        role = "reviewer" if actor == REVIEWER else "agent"
        env[token_env(actor)] = invoke("add_token", {"name": actor, "role": role}, env=env,
                                       cwd=env["ANVIL_ROOT"])["token"]


def caller(env: dict[str, str], url: str, actor: str) -> Any:
    from anvil.mcp.client import call_tool
    from anvil.mcp.target import McpTarget

    target = McpTarget(kind="http", url=url, token_env=token_env(actor) if token_env(actor) in env else TOKEN_ENV)
    return lambda name, args: call_tool(target, name, args, env=env, cwd=env["ANVIL_ROOT"], timeout=120)


def agent(env: dict[str, str], url: str, actor: str, rec: Recorder, done: threading.Event, deadline: float) -> None:
    call = caller(env, url, actor)
    try:
        while not done.is_set() and time.monotonic() < deadline:
            claim = rec.timed(call, "claim_next_task", {"actor": actor, "wait_seconds": 5})["claim"]
            if claim is None:
                continue
            with rec.lock:
                rec.claim_times.append(time.perf_counter())
            rec.timed(call, "submit_completion_evidence", {
                "task_id": claim["task_id"], "actor": actor, "generation": claim["generation"],
                "claim_id": claim["id"], "commands_run": ["pytest -q"], "files_changed": claim["expected_files"]})
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        rec.errors.append(f"{actor}: {type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300])


def reviewer(env: dict[str, str], url: str, total: int, rec: Recorder, done: threading.Event,
             deadline: float) -> None:
    call = caller(env, url, REVIEWER)
    decided, head = 0, 0
    try:
        while decided < total and time.monotonic() < deadline:
            board = rec.timed(call, "get_board", {"column": "review", "page_size": 100, "after_seq": head,
                                                  "wait_seconds": 5})
            head = board["head"]
            waiting = [q["task_id"] for q in board["review_queue"]]
            if not waiting:
                continue
            result = rec.timed(call, "apply_review_decisions", {"task_ids": waiting, "approve": True,
                                                                "actor": REVIEWER})
            decided += result["decided_count"]
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        rec.errors.append(f"reviewer: {type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300])
    finally:
        done.set()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def spread(values: list[float]) -> dict[str, float] | None:
    """p50/p95/p99 and the sum of ``values`` (seconds), in milliseconds; None when empty."""
    if not values:
        return None
    return {"p50": percentile(values, 0.5) * 1e3, "p95": percentile(values, 0.95) * 1e3,
            "p99": percentile(values, 0.99) * 1e3, "total": sum(values) * 1e3}


def run(args: argparse.Namespace, database: str, base: Path) -> dict[str, Any]:
    from scripts.bench_loop import fresh_env, integrity, planned_state
    from scripts.benchdb import claim_counts
    from scripts.netutil import stop_server

    env = fresh_env(base, "drain", database)
    env[TOKEN_ENV] = secrets.token_urlsafe(24)
    planned_state(env, args.tasks, 10)
    if args.agent_tokens:
        issue_agent_tokens(env, [*(f"agent-{i}" for i in range(args.agents)), REVIEWER])
    profile = Path(args.profile).resolve() if args.profile else None
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
    servers = start_replicas(env, args.replicas, base, probe=not args.no_probe, profile=profile,
                             wake_all=args.wake_all, switch_interval=args.switch_interval)
    rec, done = Recorder(), threading.Event()
    urls = [f"http://127.0.0.1:{port}/mcp" for _, port, _, _ in servers]
    deadline = time.monotonic() + args.budget
    threads = [threading.Thread(target=agent, args=(env, urls[i % len(urls)], f"agent-{i}", rec, done, deadline))
               for i in range(args.agents)]
    threads.append(threading.Thread(target=reviewer, args=(env, urls[0], args.tasks, rec, done, deadline)))
    if profile is not None:
        from scripts import threadprof

        threadprof.start()
    cpu0 = (os.times(), [cpu_seconds(proc.pid) for proc, _, _, _ in servers], postgres_cpu(database))
    t0 = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=args.budget + 60)
    finally:
        wall = time.perf_counter() - t0
        spent = os.times()
        cpu = {"clients_s": spent.user + spent.system - cpu0[0].user - cpu0[0].system,
               "replicas_s": sum(cpu_seconds(proc.pid) for proc, _, _, _ in servers) - sum(cpu0[1]),
               "postgres_s": postgres_cpu(database) - cpu0[2]}
        if profile is not None:
            threadprof.dump(profile / "clients.pstats")
            collect_profiles(servers, profile)
        time.sleep(0.5)  # the replicas write their meters every 0.2 s
        for proc, _, log, _ in servers:
            stop_server(proc, log)
    meters = [json.loads(stats.read_text()) if stats.exists() else {} for _, _, _, stats in servers]
    locks = sum(m.get("locks", 0) for m in meters)
    holds = [h for m in meters for h in m.get("holds", [])]
    waits = [w for m in meters for w in m.get("waits", [])]
    in_lock = [n for m in meters for n in m.get("locked_statements", [])]
    in_lock_db = [n for m in meters for n in m.get("locked_db", [])]
    trips_in_lock = [n for m in meters for n in m.get("locked_round_trips", [])]
    wakeups = sum(m.get("wakeups", 0) for m in meters)
    productive = sum(m.get("productive", 0) for m in meters)
    claims = len(rec.claim_times)
    phase = (max(rec.claim_times) - t0) if rec.claim_times else wall
    return {"wall_s": wall, "claims": claims, "claims_per_s": claims / phase if phase > 0 else 0.0,
            "claiming_phase_s": phase, "locks": locks, "productive_writes": productive,
            "locks_per_write": locks / productive if productive else None,
            "hold_ms": spread(holds), "lock_wait_ms": spread(waits),
            "statements_in_lock": percentile(in_lock, 0.5) if in_lock else None, "wakeups": wakeups,
            "round_trips_in_lock": {"p50": percentile(trips_in_lock, 0.5), "p95": percentile(trips_in_lock, 0.95),
                                    "mean": sum(trips_in_lock) / len(trips_in_lock)} if trips_in_lock else None,
            "hold_db_s": sum(in_lock_db), "load": os.getloadavg(),
            "starts": {key: sum(m.get(key, 0) for m in meters) for key in ("optimistic_starts", "locked_starts")},
            "cpu": {**cpu, "operation_s": sum(m.get("operation_cpu", 0.0) for m in meters)},
            "latency": {name: {"calls": len(v), "p50_ms": percentile(v, 0.5) * 1e3, "p95_ms": percentile(v, 0.95) * 1e3,
                               "p99_ms": percentile(v, 0.99) * 1e3} for name, v in sorted(rec.latency.items())},
            "errors": rec.errors, "meters_missing": sum(1 for m in meters if not m),
            **claim_counts(env), "integrity": integrity(env)}


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    if raw[:1] in (["--replica"], ["--replica-no-probe"]):
        replica_main(raw[1], raw[3:], probe=raw[0] == "--replica")
        return 0
    parser = argparse.ArgumentParser(description="Benchmark a drain through HTTP replicas on PostgreSQL.")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds before the clients give up")
    parser.add_argument("--database", default=None, help="a PostgreSQL URL (default: a throwaway cluster)")
    parser.add_argument("--no-probe", action="store_true", help="replicas without the waiting claim's lock-free "
                                                                "look (the behaviour before it), for comparison")
    parser.add_argument("--wake-all", action="store_true", help="waiting claims woken by every commit (the "
                                                                   "behaviour before waits for work), for comparison")
    parser.add_argument("--switch-interval", type=float, default=None, metavar="SECONDS",
                        help="the replicas' thread switch interval (sys.setswitchinterval; default 0.005), for "
                             "comparison")
    parser.add_argument("--agent-tokens", action="store_true", help="a per-agent token for each client (the "
                                                                       "replicas authenticate every request by it)")
    parser.add_argument("--profile", default=None, metavar="DIR",
                        help="cProfile the replicas and the clients (all threads) into DIR/*.pstats "
                             "(read them with `python scripts/threadprof.py FILE`)")
    args = parser.parse_args(raw)
    from scripts.bench_claim_lock import database

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {args.agents} agents + 1 reviewer (threads in "
          f"this process) through {args.replicas} `anvil serve --http` replicas on PostgreSQL, {args.tasks} tasks")
    with tempfile.TemporaryDirectory(prefix="anvil-bench-drain-") as tmp, database(args.database) as url:
        result = run(args, url, Path(tmp))
    print(f"  {result['claims']} claims in a {result['claiming_phase_s']:.2f} s claiming phase: "
          f"{result['claims_per_s']:.1f} claims/s (goal >= 40); wall {result['wall_s']:.2f} s")
    per_write = result["locks_per_write"]
    print(f"  writer-lock acquisitions {result['locks']} for {result['productive_writes']} productive writes: "
          f"{per_write:.2f} per write (goal <= 1.2)" if per_write is not None else "  no productive writes metered")
    for label, key in (("writer lock held", "hold_ms"), ("writer lock waited", "lock_wait_ms")):
        f = result[key]
        if f is not None:
            print(f"  {label} per transaction: p50 {f['p50']:.1f} ms, p95 {f['p95']:.1f} ms, p99 {f['p99']:.1f} ms, "
                  f"total {f['total'] / 1e3:.1f} s")
    print(f"  of the lock's hold, in database statements {result['hold_db_s']:.1f} s (the rest: Python between "
          "them, an event pipeline's answer, waiting for the GIL)")
    cpu = result["cpu"]
    calls = sum(f["calls"] for f in result["latency"].values()) or 1
    print(f"  CPU over the run ({result['wall_s']:.1f} s wall, {os.cpu_count()} cores): replicas "
          f"{cpu['replicas_s']:.1f} s ({cpu['replicas_s'] / calls * 1e3:.1f} ms per call), clients "
          f"{cpu['clients_s']:.1f} s ({cpu['clients_s'] / calls * 1e3:.1f} ms per call), PostgreSQL "
          f"{cpu['postgres_s']:.1f} s; load average {result['load'][0]:.2f}")
    print(f"  replica CPU per call: the operation {cpu['operation_s'] / calls * 1e3:.1f} ms (runtime, engine, driver), "
          f"the rest {(cpu['replicas_s'] - cpu['operation_s']) / calls * 1e3:.1f} ms (HTTP, MCP, input models, JSON, "
          "change listener)")
    starts = result["starts"]
    print(f"  write transactions begun optimistically (reads before the lock) {starts['optimistic_starts']}; begun "
          f"holding the lock (a writer was at work then, or a stale retry) {starts['locked_starts']}")
    print(f"  waiting claims woken before their deadline: {result['wakeups']}")
    if result["statements_in_lock"] is not None:
        print(f"  statements per transaction while holding the lock: median {result['statements_in_lock']:.0f}")
    trips = result["round_trips_in_lock"]
    if trips is not None:
        print(f"  database round trips per transaction while holding the lock: median {trips['p50']:.0f}, p95 "
              f"{trips['p95']:.0f}, mean {trips['mean']:.1f} (a pipeline is one per sync)")
    print(f"  duplicate claims: {result['duplicate_claims']}; tasks claimed more than once: "
          f"{result['claimed_more_than_once']}; verify chain_ok={result['integrity']['chain_ok']} "
          f"replay_ok={result['integrity']['replay_ok']}; statuses {result['integrity']['statuses']}")
    print(f"  {'tool':<28} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, f in result["latency"].items():
        print(f"  {name:<28} {f['calls']:6d} {f['p50_ms']:8.1f} {f['p95_ms']:8.1f} {f['p99_ms']:8.1f}")
    for error in result["errors"]:
        print(f"  error: {error}")
    if result["meters_missing"]:
        print(f"  note: {result['meters_missing']} replica(s) wrote no meter file")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
