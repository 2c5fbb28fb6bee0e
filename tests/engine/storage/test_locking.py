"""The writer lock: a bounded wait for writes (state_busy, exit 9), and reads that never wait.

Another process holds ``state.lock`` (as a stuck or suspended writer would); the commands under
test are real CLI processes. Every wait is bounded by subprocess timeouts.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.errors import Busy
from anvil.engine.storage.locking import LOCK_NAME, parse_lock_timeout, writer_lock
from tests.conftest import anvil_json
from tests.ops.support import advance_clock, event_types, op, scenario, store_of

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def state_dir(env: dict[str, str]) -> Path:
    with store_of(env) as store:
        return store.location.state_dir


@contextmanager
def lock_held_elsewhere(env: dict[str, str]) -> Iterator[None]:
    """Another process holds the project's writer lock until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(state_dir(env) / LOCK_NAME)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def cli(env: dict[str, str], *args: str, timeout: float = 60, **extra: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    code, document = anvil_json(env, *args, timeout=timeout, **extra)
    return code, document, time.monotonic() - started


def test_a_write_waits_at_most_the_lock_timeout_then_fails_busy_and_writes_nothing(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    before = event_types(anvil_env)
    with lock_held_elsewhere(anvil_env):
        code, document, took = cli(anvil_env, "claim", "T001", "--actor", "agent-1", ANVIL_LOCK_TIMEOUT="1")
    assert (code, document["error"]["code"]) == (9, "state_busy"), document
    assert 1 <= took < 20
    assert event_types(anvil_env) == before, "nothing was written"
    assert cli(anvil_env, "claim", "T001", "--actor", "agent-1")[0] == 0, "the same call succeeds once free"


def test_reads_never_wait_on_the_writer_lock(anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "claimed")
    advance_clock(monkeypatch, 3600)
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2", lease_duration_seconds=60)  # reaps T001's claim
    with lock_held_elsewhere(anvil_env):
        for args in (["status"], ["summary"], ["next"], ["list"], ["show", "T001"], ["graph"], ["verify"]):
            # A read that waited on the lock would hang for the whole 60 s lock timeout.
            code, document, took = cli(anvil_env, *args, timeout=30, ANVIL_LOCK_TIMEOUT="60")
            assert code == 0, (args, document)
            assert took < 25, args
        assert cli(anvil_env, "verify", ANVIL_LOCK_TIMEOUT="60")[1]["ok"]


def test_a_read_that_would_reap_goes_on_without_reaping_while_a_writer_holds_the_lock(
        anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "claimed")
    before = event_types(anvil_env)
    advance_clock(monkeypatch, 3600)
    with lock_held_elsewhere(anvil_env):
        assert op(anvil_env, "get_project_summary")["active_claim_count"] == 1
        assert event_types(anvil_env) == before
    op(anvil_env, "get_project_summary")
    assert event_types(anvil_env)[-1] == "claim.expired", "reaped once the lock is free"


def test_threads_of_one_process_time_out_on_the_lock_like_processes(tmp_path: Path) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with writer_lock(tmp_path, timeout=5):
            held.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=30)
        with pytest.raises(Busy) as info, writer_lock(tmp_path, timeout=0.3):
            pass
        # Refused while the holder still holds it: the wait ended at its own timeout, not the holder's.
        assert info.value.exit_code == 9 and holder.is_alive() and not release.is_set()
    finally:
        release.set()
        holder.join(timeout=30)
    with writer_lock(tmp_path, timeout=1):
        pass  # free again, and an abandoned wait did not keep it


def test_an_abandoned_wait_lets_go_of_the_lock_when_it_finally_gets_it(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    directory = state_dir(anvil_env)
    with lock_held_elsewhere(anvil_env), pytest.raises(Busy), writer_lock(directory, timeout=0.2):
        pass
    deadline = time.monotonic() + 20
    while True:  # the helper thread gets the lock after the holder exits, and must give it up
        try:
            with writer_lock(directory, timeout=0.5):
                break
        except Busy:
            assert time.monotonic() < deadline, "the abandoned wait kept the lock"


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_malformed_lock_timeout_is_a_usage_error(anvil_env: dict[str, str], value: str) -> None:
    scenario(anvil_env, "initialized")
    code, document, _ = cli(anvil_env, "config", ANVIL_LOCK_TIMEOUT=value)
    assert (code, document["error"]["code"]) == (2, "invalid_lock_timeout")


def test_the_lock_timeout_defaults_to_thirty_seconds() -> None:
    assert parse_lock_timeout(None) == parse_lock_timeout("  ") == 30.0
    assert parse_lock_timeout("0") == 0.0 and parse_lock_timeout("2.5") == 2.5


def test_no_write_path_takes_the_lock_without_a_bound() -> None:
    root = Path(__file__).resolve().parents[3] / "anvil"
    blocking = [str(path.relative_to(root)) for path in root.rglob("*.py")
                if "LOCK_EX)" in path.read_text(encoding="utf-8") and path.name != "locking.py"]
    assert blocking == [], "only the locking module may wait on flock"
    assert os.path.exists(root / "engine" / "storage" / "locking.py")
