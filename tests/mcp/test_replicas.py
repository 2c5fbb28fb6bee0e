"""Stateless ``anvil serve --http`` replicas on one PostgreSQL database.

Agents (real processes) drain a plan through two replicas while one replica is killed (SIGKILL)
and restarted mid-run. An agent whose replica is gone retries the same call, with the same
idempotency key, on the other one. Afterwards: every task was claimed exactly once (no duplicate
claims, no two live claims on a task or a file), every write an agent saw acknowledged is in the
log (none lost), every approval is logged exactly once, every task is done, and ``verify`` passes.
The everyday run drains 60 tasks with the promised 8 agents (more processes than cores, one kill
and restart mid-run); ``ANVIL_LONG_TESTS=1`` runs the promised size, 8 agents and 200 tasks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scripts.drain import approve_as_submitted
from tests.conftest import anvil_subprocess_env, sized
from tests.engine.work.test_claims_race import claim_history_problems, prepare_plan
from tests.mcp.support import TOKEN, free_port, wait_for_port
from tests.warm import WarmProcess, forks

AGENTS, TASKS, FEATURES = 8, sized(60, 200), sized(4, 10)  # long: the promised 8 agents and 200 tasks
TOKEN_VAR = "MCP_TEST_TOKEN"
REVIEWER = "reviewer-1"
BUDGET = 150.0


class Replica:
    """One ``python -m anvil.mcp --http`` process on a fixed port (so a restart answers at the same URL)."""

    def __init__(self, env: dict[str, str], port: int, log: Path):
        self.env, self.port, self.log = env, port, log
        self.process: WarmProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        argv = ["--http", "--planning", "--host", "127.0.0.1", "--port", str(self.port), "--token-env", TOKEN_VAR]
        self.process = WarmProcess("anvil.mcp", argv, env=self.env, cwd=self.env["ANVIL_ROOT"], stdout=self.log)
        wait_for_port(self.port, process=self.process)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


# -- children (module level: the forked children import them by name) --------------------------------------------------

class _Caller:
    """Calls tools on the replicas: the preferred one first, the others when it cannot be reached,
    always with the same idempotency key for one logical call."""

    def __init__(self, urls: list[str], prefer: int, env: dict[str, str], deadline: float):
        from anvil.mcp.target import McpTarget

        self.targets = [McpTarget(kind="http", url=url, token_env=TOKEN_VAR) for url in urls]
        self.prefer, self.env, self.deadline = prefer, env, deadline
        self.failovers = 0

    def __call__(self, name: str, args: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        from anvil.engine.errors import TargetUnavailable
        from anvil.mcp.client import call_tool

        arguments = {**args, **({"idempotency_key": key} if key else {})}
        attempt = 0
        while True:
            target = self.targets[(self.prefer + attempt) % len(self.targets)]
            try:
                return call_tool(target, name, arguments, env=self.env, cwd=self.env["ANVIL_ROOT"], timeout=60)
            except TargetUnavailable:
                self.failovers += 1
                attempt += 1
                if time.monotonic() > self.deadline:
                    raise
                if attempt % len(self.targets) == 0:  # every replica refused: poll again shortly
                    threading.Event().wait(0.05)


def _agent(urls: list[str], prefer: int, env: dict[str, str], actor: str, cond: Any, changes: Any, claimed: Any,
           done: Any, start: Any, deadline: float, out: Any) -> None:
    call = _Caller(urls, prefer, env, deadline)
    acked: dict[str, list[str]] = {"claims": [], "evidence": []}
    error = None
    start.wait(timeout=90)
    try:
        step = 0
        while not done.is_set() and time.monotonic() < deadline:
            seen = changes.value
            step += 1
            claim = call("claim_next_task", {"actor": actor}, key=f"{actor}-{step}")["claim"]
            if claim is None:
                with cond:
                    cond.wait_for(lambda seen=seen: changes.value != seen or done.is_set(), timeout=5)
                continue
            acked["claims"].append(claim["id"])
            with claimed.get_lock():
                claimed.value += 1
            step += 1
            evidence = call("submit_completion_evidence", {
                "task_id": claim["task_id"], "actor": actor, "generation": claim["generation"],
                "claim_id": claim["id"], "commands_run": ["pytest -q"], "files_changed": claim["expected_files"]},
                key=f"{actor}-{step}")
            acked["evidence"].append(evidence["evidence_id"])
            with cond:
                changes.value += 1
                cond.notify_all()
    except Exception as exc:  # reported to the parent, which asserts on it
        error = f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300]
    out.put((actor, acked, call.failovers, error))


def _reviewer(urls: list[str], env: dict[str, str], total: int, cond: Any, changes: Any, done: Any, start: Any,
              deadline: float, out: Any) -> None:
    call = _Caller(urls, 0, env, deadline)
    approved: list[str] = []
    error = None
    start.wait(timeout=90)
    try:
        approve_as_submitted(
            lambda: [t["id"] for t in call("list_tasks", {"status": "needs_review", "limit": 1000})["tasks"]],
            lambda task_id: call("apply_review_decision", {"task_id": task_id, "approve": True, "actor": REVIEWER},
                                 key=f"review-{task_id}"),
            total, approved, cond=cond, changes=changes, done=done, deadline=deadline)
    except Exception as exc:
        error = f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}"[:300]
    out.put((REVIEWER, {"approved": approved}, call.failovers, error))


def test_agents_drain_through_two_replicas_while_one_is_killed_and_restarted(
        anvil_env: dict[str, str], pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)
    env = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    task_ids = prepare_plan(env, TASKS, FEATURES)
    server_env = {**anvil_subprocess_env(env), TOKEN_VAR: TOKEN}
    replicas = [Replica(server_env, free_port(), tmp_path / f"replica-{i}.log") for i in range(2)]
    for replica in replicas:
        replica.start()
    urls = [replica.url for replica in replicas]
    client_env = {**server_env, "ANVIL_ACTOR": ""}
    forked = forks()  # agents and reviewer: processes forked from the warm template (tests.warm)
    cond, changes, claimed, done, out = (forked.Condition(), forked.Value("i", 0), forked.Value("i", 0),
                                         forked.Event(), forked.Queue())
    start = forked.Barrier(AGENTS + 2)
    deadline = time.monotonic() + BUDGET
    procs = [forked.Process(target=_agent, args=(urls, i % 2, client_env, f"agent-{i}", cond, changes, claimed, done,
                                                start, deadline, out), daemon=True) for i in range(AGENTS)]
    procs.append(forked.Process(target=_reviewer, args=(urls, client_env, TASKS, cond, changes, done, start, deadline,
                                                       out), daemon=True))
    killed_at = None
    try:
        for proc in procs:
            proc.start()
        start.wait(timeout=90)
        with cond:  # agents notify after every submission
            cond.wait_for(lambda: claimed.value >= TASKS // 3 or done.is_set(), timeout=BUDGET)
        killed_at = claimed.value
        replicas[1].kill()  # mid-run: requests in flight on it die with it
        replicas[1].start()  # a new process on the same port: nothing carried over
        reports = [out.get(timeout=BUDGET + 30) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for replica in replicas:
            replica.stop()

    errors = [(who, err) for who, _, _, err in reports if err]
    assert not errors, errors
    assert killed_at is not None and 0 < killed_at < TASKS, killed_at
    acked_claims = [c for _, acked, _, _ in reports for c in acked.get("claims", [])]
    acked_evidence = [e for _, acked, _, _ in reports for e in acked.get("evidence", [])]

    from anvil.engine.storage.integrity import verify
    from anvil.engine.storage.paths import resolve_state
    from anvil.engine.storage.store import Store

    with Store.open(resolve_state(env, env["ANVIL_ROOT"])) as store:
        events = list(store.events())
        report = verify(store)
        statuses = Counter(row[0] for row in store.conn.execute("SELECT status FROM tasks").fetchall())
    claims_logged = Counter(e.payload["task_id"] for e in events if e.type == "claim.acquired")
    assert claims_logged == Counter(task_ids), "every task claimed exactly once: no duplicate claims"
    assert claim_history_problems(events) == []
    assert set(acked_claims) <= {e.payload["claim_id"] for e in events if e.type == "claim.acquired"}
    assert set(acked_evidence) <= {e.payload["evidence_id"] for e in events if e.type == "evidence.submitted"}
    assert len(set(acked_claims)) == len(task_ids), "each acknowledged claim is a different one, none lost"
    acked_approvals = {t for who, acked, _, _ in reports if who == REVIEWER for t in acked["approved"]}
    decided = Counter(e.payload["task_id"] for e in events if e.type == "review.decided")
    assert acked_approvals == set(task_ids) and decided == Counter(task_ids), "every approval logged exactly once"
    assert statuses == {"done": TASKS}
    assert report["ok"], report["problems"]
    print(f"\nreplicas: {TASKS} tasks, {AGENTS} agents, replica 2 killed after {killed_at} claims; "
          f"{sum(f for _, _, f, _ in reports)} failovers; {os.cpu_count()} CPUs")
