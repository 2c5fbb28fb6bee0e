"""Claims under real concurrency: separate OS processes racing on one state.

Every test here uses processes (``multiprocessing`` with the ``forkserver`` context, or
``subprocess`` running the real CLI), never threads, so the SQLite locking, the writer file lock and the
``events.jsonl`` mirror are exercised exactly as agents on one machine would exercise them.
Children are released together by a barrier (``multiprocessing.Barrier`` or one byte on stdin)
and every wait is bounded: barrier and join timeouts, ``subprocess`` timeouts, condition waits
with a timeout. Nothing sleeps to synchronise.

What is proven, on both storage backends (``backend_env``: SQLite, and PostgreSQL through the
session's throwaway cluster):

- ``test_processes_racing_for_one_task_*``: of RACERS simultaneous claims on one ready task,
  exactly one succeeds; every loser gets a typed refusal (``already_claimed`` or
  ``not_claimable``; exit code 5 and a JSON error document through the CLI) and the log holds one
  ``claim.acquired``.
- ``test_agents_drain_a_plan_with_every_task_done_once``: DRAIN_AGENTS agent processes loop next ->
  claim -> submit while a reviewer process approves DRAIN_TASKS tasks; afterwards every task is
  done exactly once, replaying the log shows no task ever had two live claims and no two live
  claims ever shared an expected file, and ``verify`` (hash chain, mirror, replay equality) passes.

The everyday run uses 6 racers and 4 agents draining 60 tasks (already more processes than the
machine's cores, so they really contend); ``ANVIL_LONG_TESTS=1`` runs 16 racers and 8 agents
draining 200 tasks.
- ``test_expired_lease_is_reaped_and_the_old_generation_is_fenced``: a claim whose real one-second
  lease ran out is reaped as ``claim.expired`` by another process's ``next``; the task is
  re-claimed with generation 2; renew, progress, submit and release naming generation 1 are
  refused with ``stale_generation`` (in-process and through the CLI, exit 5).
- ``test_idempotent_claim_retried_from_two_processes``: the same claim with the same idempotency
  key from two processes returns one identical result and one event; a different payload under
  the same key is an ``idempotency_conflict`` (exit 5 through the CLI).

Two smaller tests pin down defects found while writing these (they fail until the engine is fixed):
``test_stale_release_is_fenced_before_asking_for_confirmation`` (a release naming a superseded
generation asks for ``--yes`` instead of being refused as stale) and
``test_mirror_survives_an_event_over_64_kib`` (the ``events.jsonl`` mirror stops for good after
one event line longer than 64 KiB). ``test_claim_history_check_catches_overlaps`` checks the replay
checker the drain relies on.
"""

from __future__ import annotations

import json
import multiprocessing
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scripts.drain import approve_as_submitted
from tests import warm
from tests.conftest import anvil_subprocess_env, sized

SPAWN = multiprocessing.get_context("forkserver")
# Each child is a fresh OS process forked from the warm template of tests.warm (``warm.forks()``, not
# from this process, whose threads and open connections a fork would copy); the child then takes on
# the test's environment and working directory (see _warm_up), as a spawned child would have.
BARRIER_TIMEOUT = 90.0  # children import anvil first; two cores may be busy
JOIN_TIMEOUT = 120.0
CLI_TIMEOUT = 60.0
RACE_CODES = {"already_claimed", "not_claimable"}
# What a loser of a next -> claim race may hear: the task (or a conflicting one) was just taken.
LOST_RACE_CODES = {"already_claimed", "not_claimable", "conflict_group_busy", "file_conflict",
                   "dependencies_pending"}
REVIEWER = "reviewer-1"
RACERS = sized(6, 16)
DRAIN_AGENTS, DRAIN_TASKS, DRAIN_FEATURES = sized(4, 8), sized(40, 200), sized(4, 10)


# -- helpers ---------------------------------------------------------------------------------------

def _root(env: dict[str, str]) -> str:
    return env["ANVIL_ROOT"]


def _invoke(name: str, args: dict[str, Any], env: dict[str, str], clock: Any = None) -> dict[str, Any]:
    from anvil.ops.invoke import invoke

    return invoke(name, args, env=env, cwd=_root(env), clock=clock)


def _error_tuple(exc: BaseException) -> tuple[str, str, int]:
    return (getattr(exc, "code", type(exc).__name__), type(exc).__name__, getattr(exc, "exit_code", -1))


def _events(env: dict[str, str]) -> list[Any]:
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    with Store.open(resolve_state(env, _root(env))) as store:
        return list(store.events())


def _verify(env: dict[str, str]) -> dict[str, Any]:
    from anvil.engine.storage.integrity import verify
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    with Store.open(resolve_state(env, _root(env))) as store:
        return verify(store)


def _ready_sample(env: dict[str, str]) -> None:
    from anvil.ops.scenarios import build_scenario

    build_scenario("ready", env, _root(env))


def _run_children(target: Any, arg_lists: list[tuple[Any, ...]], *, barrier: Any | None = None,
                  result_queue: Any, expect: int) -> list[Any]:
    """Start one spawned process per argument tuple, release the barrier, collect ``expect`` results."""
    procs = [warm.forks().Process(target=target, args=args, daemon=True) for args in arg_lists]
    for proc in procs:
        proc.start()
    try:
        if barrier is not None:
            barrier.wait(timeout=BARRIER_TIMEOUT)  # the parent is the last party: all go at once
        results = [result_queue.get(timeout=JOIN_TIMEOUT) for _ in range(expect)]
        for proc in procs:
            proc.join(timeout=JOIN_TIMEOUT)
        assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
        return results
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)


def _cli(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], str]:
    proc = warm.anvil(args, env=env, cwd=_root(env), timeout=CLI_TIMEOUT)
    document = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, document, proc.stderr


# -- children (module level so the spawn context can import them) ---------------------------------

def _warm_up(env: dict[str, str]) -> None:
    """Take on the test's environment and working directory (the fork server started with those of
    an earlier test), and import everything a call needs before the barrier, so the race is about the
    call itself."""
    import os

    os.environ.clear()
    os.environ.update(env)
    os.chdir(_root(env))
    from anvil.ops.registry import get_operation

    get_operation("claim_task")
    import anvil.engine.work.claims  # noqa: F401
    import anvil.ops.handlers.claiming  # noqa: F401


def _claim_once(env: dict[str, str], args: dict[str, Any], barrier: Any, out: Any) -> None:
    _warm_up(env)
    barrier.wait(timeout=BARRIER_TIMEOUT)
    try:
        out.put((args["actor"], "ok", _invoke("claim_task", args, env)))
    except Exception as exc:  # reported to the parent, which asserts on it
        out.put((args["actor"], "error", _error_tuple(exc)))


def _agent(env: dict[str, str], actor: str, cond: Any, changes: Any, done: Any, start: Any, deadline: float,
           out: Any) -> None:
    """next -> claim -> submit until the reviewer reports everything done (or the deadline)."""
    from anvil.engine.errors import Refused

    _warm_up(env)
    start.wait(timeout=BARRIER_TIMEOUT)
    submitted: list[str] = []
    lost: Counter[str] = Counter()
    error: tuple[str, str, int] | None = None
    idle_waits = 0
    try:
        while not done.is_set() and time.monotonic() < deadline:
            seen = changes.value
            offer = _invoke("get_next_task", {"actor": actor}, env)
            task = offer["task"]
            if task is None:
                idle_waits += 1
                with cond:  # wake on the next submission or approval; the timeout is only a backstop
                    cond.wait_for(lambda seen=seen: changes.value != seen or done.is_set(), timeout=5)
                continue
            try:
                claim = _invoke("claim_task", {"task_id": task["id"], "actor": actor}, env)
            except Refused as exc:
                if exc.code not in LOST_RACE_CODES:
                    raise
                lost[exc.code] += 1
                continue
            _invoke("submit_completion_evidence", {
                "task_id": task["id"], "actor": actor, "generation": claim["generation"],
                "claim_id": claim["id"], "commands_run": list(task["verification"]) or ["pytest -q"],
                "files_changed": claim["expected_files"]}, env)
            submitted.append(task["id"])
            with cond:
                changes.value += 1
                cond.notify_all()
    except Exception as exc:
        error = _error_tuple(exc)
    out.put(("agent", actor, submitted, dict(lost), idle_waits, error))


def _reviewer(env: dict[str, str], total: int, cond: Any, changes: Any, done: Any, start: Any, deadline: float,
              out: Any) -> None:
    """Approve every task that reaches needs_review until ``total`` are approved."""
    _warm_up(env)
    start.wait(timeout=BARRIER_TIMEOUT)
    approved: list[str] = []
    error: tuple[str, str, int] | None = None
    try:
        approve_as_submitted(
            lambda: [t["id"] for t in _invoke("list_tasks", {"status": "needs_review", "limit": 1000}, env)["tasks"]],
            lambda task_id: _invoke("apply_review_decision", {"task_id": task_id, "approve": True, "actor": REVIEWER},
                                    env),
            total, approved, cond=cond, changes=changes, done=done, deadline=deadline)
    except Exception as exc:
        error = _error_tuple(exc)
    out.put(("reviewer", REVIEWER, approved, {}, 0, error))


# -- racers on one task ------------------------------------------------------------------------------

def test_processes_racing_for_one_task_through_invoke_leave_exactly_one_claim(backend_env: dict[str, str]) -> None:
    _ready_sample(backend_env)
    barrier, out = SPAWN.Barrier(RACERS + 1), SPAWN.Queue()
    args = [(backend_env, {"task_id": "T001", "actor": f"agent-{i:02d}"}, barrier, out) for i in range(RACERS)]
    results = _run_children(_claim_once, args, barrier=barrier, result_queue=out, expect=RACERS)

    winners = [r for r in results if r[1] == "ok"]
    losers = [r for r in results if r[1] == "error"]
    assert len(winners) == 1, results
    assert winners[0][2]["generation"] == 1 and winners[0][2]["claimed_by"] == winners[0][0]
    assert len(losers) == RACERS - 1
    for _, _, (code, kind, exit_code) in losers:
        assert code in RACE_CODES and kind == "Refused" and exit_code == 5, (code, kind, exit_code)
    acquired = [e for e in _events(backend_env) if e.type == "claim.acquired"]
    assert [(e.payload["task_id"], e.payload["actor"]) for e in acquired] == [("T001", winners[0][0])]


LAUNCHER = """
import runpy, select, sys
import anvil.cli.main  # import the CLI before the barrier so the race is about the claim itself
sys.stdout.write("ready\\n"); sys.stdout.flush()
ready, _, _ = select.select([sys.stdin], [], [], float(sys.argv[1]))
if not ready or sys.stdin.buffer.read(1) != b"g":
    sys.exit(99)
sys.argv = ["anvil", *sys.argv[2:]]
runpy.run_module("anvil", run_name="__main__", alter_sys=True)  # exactly what `python -m anvil` does
"""


def test_processes_racing_for_one_task_through_the_cli_leave_exactly_one_claim(backend_env: dict[str, str]) -> None:
    _ready_sample(backend_env)
    env = anvil_subprocess_env(backend_env)
    procs = [subprocess.Popen([sys.executable, "-c", LAUNCHER, str(BARRIER_TIMEOUT), "claim", "T001", "--actor",
                               f"agent-{i:02d}", "--json"], env=env, cwd=_root(backend_env), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(RACERS)]
    try:
        deadline = time.monotonic() + BARRIER_TIMEOUT
        for proc in procs:  # the barrier: every child has imported the CLI and waits on stdin
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready and proc.stdout.readline() == b"ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"g")
            proc.stdin.close()
            proc.stdin = None  # so communicate() does not touch the closed pipe
        outcomes: list[tuple[int, dict[str, Any], str]] = []
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=CLI_TIMEOUT)
            outcomes.append((proc.returncode, json.loads(stdout), stderr.decode()))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)

    winners = [o for o in outcomes if o[0] == 0]
    losers = [o for o in outcomes if o[0] != 0]
    assert len(winners) == 1, outcomes
    assert winners[0][1]["task_id"] == "T001" and winners[0][1]["generation"] == 1
    assert len(losers) == RACERS - 1
    for code, document, diagnostics in losers:
        assert code == 5, (code, document, diagnostics)
        assert set(document) == {"error"} and document["error"]["code"] in RACE_CODES, document
        assert "Traceback" not in diagnostics
    acquired = [e for e in _events(backend_env) if e.type == "claim.acquired"]
    assert len(acquired) == 1 and acquired[0].payload["actor"] == winners[0][1]["claimed_by"]


# -- agents drain a plan --------------------------------------------------------------------------

def prepare_plan(env: dict[str, str], n_tasks: int, n_features: int) -> list[str]:
    """Init, write a generated PRD, parse, review, approve, plan, score and promote; the ready ids."""
    from scripts.prdgen import generate_prd

    root = Path(_root(env))
    _invoke("init_project", {"name": "Drain"}, env)
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "prd.md").write_text(generate_prd(n_tasks, n_features, seed=11), encoding="utf-8")
    parsed = _invoke("parse_prd", {"file": "docs/prd.md"}, env)
    assert parsed["error_count"] == 0 and parsed["task_count"] == n_tasks, parsed
    _invoke("review_prd", {"actor": "lead"}, env)
    _invoke("review_prd", {"actor": "lead", "approve": True}, env)
    planned = _invoke("plan_tasks", {"use_llm": False}, env)
    assert planned["task_count"] == n_tasks
    _invoke("score_tasks", {}, env)
    promoted = _invoke("review_tasks", {}, env)
    assert len(promoted["promoted_to_ready"]) == n_tasks, promoted["blocked"][:3]
    # The drain is about claims; its agents submit without proofs, so approval records the gaps.
    _invoke("configure_project", {"evidence_gate": "advisory", "actor": "lead"}, env)
    return sorted(promoted["promoted_to_ready"])


def claim_history_problems(events: list[Any]) -> list[str]:
    """Replay claim events: two live claims on one task, or on one expected file, are problems."""
    live: dict[str, dict[str, Any]] = {}  # claim id -> payload of claim.acquired
    by_task: dict[str, str] = {}
    by_file: dict[str, str] = {}
    problems: list[str] = []
    for event in events:
        p = event.payload
        if event.type == "claim.acquired":
            if p["task_id"] in by_task:
                problems.append(f"seq {event.seq}: {p['task_id']} claimed while {by_task[p['task_id']]} is live")
            for file in p["expected_files"]:
                if file in by_file:
                    problems.append(f"seq {event.seq}: {file} expected by {p['claim_id']} and {by_file[file]}")
                by_file[file] = p["claim_id"]
            live[p["claim_id"]] = p
            by_task[p["task_id"]] = p["claim_id"]
        elif event.type in ("claim.released", "claim.expired", "evidence.submitted"):
            claim = live.pop(p["claim_id"], None)
            if claim is None:
                problems.append(f"seq {event.seq}: {event.type} ends {p['claim_id']}, which is not live")
                continue
            by_task.pop(claim["task_id"], None)
            for file in claim["expected_files"]:
                if by_file.get(file) == claim["claim_id"]:
                    del by_file[file]
    return problems


def test_agents_drain_a_plan_with_every_task_done_once(backend_env: dict[str, str]) -> None:
    n_tasks, n_agents, budget = DRAIN_TASKS, DRAIN_AGENTS, 100.0
    task_ids = prepare_plan(backend_env, n_tasks, DRAIN_FEATURES)
    cond, changes, done, out = SPAWN.Condition(), SPAWN.Value("i", 0), SPAWN.Event(), SPAWN.Queue()
    start = SPAWN.Barrier(n_agents + 2)  # the agents, the reviewer and this process
    spawned = time.monotonic()
    deadline = spawned + budget  # CLOCK_MONOTONIC is system-wide, so children can share it
    forked = warm.forks()
    procs = [forked.Process(target=_agent, args=(backend_env, f"agent-{i}", cond, changes, done, start, deadline, out),
                            daemon=True) for i in range(n_agents)]
    procs.append(forked.Process(target=_reviewer, args=(backend_env, n_tasks, cond, changes, done, start, deadline,
                                                        out), daemon=True))
    for proc in procs:
        proc.start()
    try:
        start.wait(timeout=BARRIER_TIMEOUT)
        started = time.monotonic()
        reports = [out.get(timeout=budget + 30) for _ in procs]
        for proc in procs:
            proc.join(timeout=JOIN_TIMEOUT)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
    elapsed = time.monotonic() - started

    errors = [(r[0], r[1], r[5]) for r in reports if r[5] is not None]
    assert not errors, errors
    submitted = [tid for r in reports if r[0] == "agent" for tid in r[2]]
    approved = next(r[2] for r in reports if r[0] == "reviewer")
    assert sorted(submitted) == task_ids, "every task submitted exactly once"
    assert sorted(approved) == task_ids, "every task approved exactly once"
    assert sum(1 for r in reports if r[0] == "agent" and r[2]) >= 2, "the work was shared between agents"

    final = _invoke("list_tasks", {"limit": 1000}, backend_env)["tasks"]
    assert Counter(t["status"] for t in final) == {"done": n_tasks}
    events = _events(backend_env)
    counts = Counter((e.type, e.payload.get("task_id")) for e in events)
    for tid in task_ids:
        assert counts[("claim.acquired", tid)] == 1, tid
        assert counts[("evidence.submitted", tid)] == 1, tid
        assert counts[("review.decided", tid)] == 1, tid
    assert all(e.payload["decision"] == "accepted" and e.actor == REVIEWER
               for e in events if e.type == "review.decided")
    assert not [e for e in events if e.type in ("claim.expired", "claim.released")]
    assert claim_history_problems(events) == []
    lost = sum(sum(r[3].values()) for r in reports)
    print(f"\ndrain: {n_tasks} tasks, {n_agents} agents, {elapsed:.1f}s after the barrier "
          f"({time.monotonic() - spawned:.1f}s with process start-up), {n_tasks / elapsed:.1f} claims/s, "
          f"{lost} lost races, {sum(r[4] for r in reports)} idle waits")
    assert elapsed < budget
    report = _verify(backend_env)
    assert report["chain_ok"] and report["replay_ok"], report["problems"]
    assert report["ok"], report["problems"]  # the mirror too (see test_mirror_survives_an_event_over_64_kib)


def test_claim_history_check_catches_overlaps() -> None:
    """The replay checker itself: a second live claim on a task or a file is reported."""
    from anvil.engine.storage.store import Event

    def ev(seq: int, type_: str, **payload: Any) -> Event:
        return Event(seq, "t", "a", type_, payload, "", "")

    events = [ev(1, "claim.acquired", claim_id="C1", task_id="T1", expected_files=["a.py"]),
              ev(2, "claim.acquired", claim_id="C2", task_id="T1", expected_files=["b.py"]),
              ev(3, "claim.acquired", claim_id="C3", task_id="T2", expected_files=["a.py"]),
              ev(4, "evidence.submitted", claim_id="C1", task_id="T1"),
              ev(5, "claim.acquired", claim_id="C4", task_id="T3", expected_files=["c.py"]),
              ev(6, "claim.expired", claim_id="C4", task_id="T3"),
              ev(7, "claim.acquired", claim_id="C5", task_id="T3", expected_files=["c.py"])]
    problems = claim_history_problems(events)
    assert len(problems) == 2 and "seq 2" in problems[0] and "seq 3" in problems[1]


# -- lease expiry mid-run ---------------------------------------------------------------------------

def _fenced_calls(env: dict[str, str], out: Any) -> None:
    """As agent-a, with this process's own (unshifted) clock: every generation-1 write."""
    _warm_up(env)
    results: dict[str, tuple[str, Any]] = {}
    calls = {
        "renew_claim": {"task_id": "T001", "actor": "agent-a", "generation": 1},
        "submit_progress": {"task_id": "T001", "actor": "agent-a", "generation": 1, "notes": "late"},
        "submit_completion_evidence": {"task_id": "T001", "actor": "agent-a", "generation": 1,
                                       "commands_run": ["pytest -q"]},
        "release_task": {"task_id": "T001", "actor": "agent-a", "generation": 1},
    }
    for name, args in calls.items():
        try:
            results[name] = ("ok", _invoke(name, args, env))
        except Exception as exc:
            results[name] = ("error", _error_tuple(exc))
    out.put(results)


def test_expired_lease_is_reaped_and_the_old_generation_is_fenced(backend_env: dict[str, str]) -> None:
    _ready_sample(backend_env)
    code, first, err = _cli(backend_env, "claim", "T001", "--actor", "agent-a", "--lease", "1", "--json")
    assert code == 0 and first["generation"] == 1, (first, err)

    # A real one-second lease: another process's `next` reaps it once it has run out.
    deadline = time.monotonic() + 30
    while True:
        code, offer, err = _cli(backend_env, "next", "--json", "--actor", "agent-b")
        assert code == 0, (offer, err)
        if (offer["task"] or {}).get("id") == "T001" or time.monotonic() > deadline:
            break
    assert offer["task"]["id"] == "T001", offer
    expired = [e for e in _events(backend_env) if e.type == "claim.expired"]
    assert [(e.payload["claim_id"], e.payload["holder"], e.payload["generation"]) for e in expired] == [
        (first["id"], "agent-a", 1)]
    code, second, err = _cli(backend_env, "claim", "T001", "--actor", "agent-b", "--json")
    assert code == 0 and second["generation"] == 2 and second["claimed_by"] == "agent-b", (second, err)

    before = len(_events(backend_env))
    out = SPAWN.Queue()
    (results,) = _run_children(_fenced_calls, [(backend_env, out)], result_queue=out, expect=1)
    cli_codes = {}
    for args in (["renew", "T001", "--generation", "1"],
                 ["progress", "T001", "--notes", "late", "--generation", "1"],
                 ["submit", "T001", "--command", "pytest", "--file", "f.py", "--generation", "1"],
                 ["release", "T001", "--generation", "1"]):
        code, document, err = _cli(backend_env, *args, "--actor", "agent-a", "--json")
        assert "Traceback" not in err
        cli_codes[args[0]] = (code, document.get("error", {}).get("code"))

    # Whatever the answers, nothing was written and agent-b still holds generation 2.
    assert len(_events(backend_env)) == before, "refused writes leave no events"
    task = _invoke("get_task", {"task_id": "T001"}, backend_env)
    assert task["status"] == "claimed" and task["claim"]["claimed_by"] == "agent-b"
    assert task["claim"]["generation"] == 2
    assert _verify(backend_env)["ok"]

    stale = ("error", ("stale_generation", "Refused", 5))
    assert {name: outcome for name, outcome in results.items() if name != "release_task"} == {
        "renew_claim": stale, "submit_progress": stale, "submit_completion_evidence": stale}
    assert {k: v for k, v in cli_codes.items() if k != "release"} == {
        "renew": (5, "stale_generation"), "progress": (5, "stale_generation"), "submit": (5, "stale_generation")}
    # Release is fenced too (see test_stale_release_is_fenced_before_asking_for_confirmation).
    assert results["release_task"] == stale, results["release_task"]
    assert cli_codes["release"] == (5, "stale_generation"), cli_codes["release"]


def test_stale_release_is_fenced_before_asking_for_confirmation(anvil_env: dict[str, str]) -> None:
    """An agent whose claim was reaped and re-claimed by someone else releases with its old
    generation: that is a stale fencing token (refused, exit 5), not a takeover of the new holder's
    claim that merely needs ``--yes`` (exit 3)."""
    _ready_sample(anvil_env)
    _invoke("claim_task", {"task_id": "T001", "actor": "agent-a"}, anvil_env)
    from datetime import timedelta

    from anvil.engine.storage.store import system_clock

    def an_hour_later() -> Any:
        return system_clock() + timedelta(hours=1)

    assert _invoke("claim_task", {"task_id": "T001", "actor": "agent-b"}, anvil_env, an_hour_later)["generation"] == 2
    from anvil.engine.errors import AnvilError

    with pytest.raises(AnvilError) as caught:
        _invoke("release_task", {"task_id": "T001", "actor": "agent-a", "generation": 1}, anvil_env)
    assert (caught.value.code, caught.value.exit_code) == ("stale_generation", 5)


def test_mirror_survives_an_event_over_64_kib(anvil_env: dict[str, str]) -> None:
    """``events.jsonl`` must keep up after an event whose JSON line is longer than 64 KiB (a parsed
    200-task PRD is about 100 KB); every later event belongs in the mirror too."""
    from scripts.prdgen import generate_prd

    _invoke("init_project", {"name": "Big"}, anvil_env)
    (Path(_root(anvil_env)) / "prd.md").write_text(generate_prd(200, 10), encoding="utf-8")
    _invoke("parse_prd", {"file": "prd.md"}, anvil_env)
    _invoke("review_prd", {"actor": "lead"}, anvil_env)
    report = _verify(anvil_env)
    assert report["mirror_ok"], report["problems"]


# -- idempotent retries from separate processes ----------------------------------------------------

def test_idempotent_claim_retried_from_two_processes(backend_env: dict[str, str]) -> None:
    _ready_sample(backend_env)
    same = {"task_id": "T001", "actor": "agent-1", "idempotency_key": "claim-T001-try-1"}
    barrier, out = SPAWN.Barrier(3), SPAWN.Queue()
    results = _run_children(_claim_once, [(backend_env, dict(same), barrier, out) for _ in range(2)],
                            barrier=barrier, result_queue=out, expect=2)
    assert [r[1] for r in results] == ["ok", "ok"], results
    first = results[0][2]
    assert results[1][2] == first and first["generation"] == 1
    acquired = [e for e in _events(backend_env) if e.type == "claim.acquired"]
    assert len(acquired) == 1 and acquired[0].payload["claim_id"] == first["id"]

    different = [{**same, "task_id": "T002"}, {**same, "lease_duration_seconds": 60}]
    barrier = SPAWN.Barrier(3)
    results = _run_children(_claim_once, [(backend_env, args, barrier, out) for args in different],
                            barrier=barrier, result_queue=out, expect=2)
    assert [r[1:] for r in results] == [("error", ("idempotency_conflict", "Refused", 5))] * 2, results

    code, document, err = _cli(backend_env, "claim", "T002", "--actor", "agent-1", "--idempotency-key",
                               "claim-T001-try-1", "--json")
    assert code == 5 and document["error"]["code"] == "idempotency_conflict", (document, err)
    code, document, err = _cli(backend_env, "claim", "T001", "--actor", "agent-1", "--idempotency-key",
                               "claim-T001-try-1", "--json")
    steps = document["continuation"]  # the CLI names the directory its commands run in (anvil.cli.hints)
    assert code == 0 and {**document, "continuation": {**steps, "cd": None}} == first, (document, err)
    assert len([e for e in _events(backend_env) if e.type == "claim.acquired"]) == 1

