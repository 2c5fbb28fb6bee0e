"""Waiting for a change: a commit wakes its waiters at once, across processes, without polling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anvil.engine.project import InitRequest, init_project
from anvil.engine.storage import changes
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.store import Store
from tests.conftest import anvil_subprocess_env

WAITER = """
import json, sys, time
from pathlib import Path
from anvil.engine.storage.changes import wait_for_change
from anvil.engine.storage.paths import StateLocation
location = StateLocation(Path(sys.argv[1]), Path(sys.argv[2]), "local")
started = time.monotonic()
head = wait_for_change(location, int(sys.argv[3]), float(sys.argv[4]))
print(json.dumps({"head": head, "waited": time.monotonic() - started}))
"""


@pytest.fixture
def location(tmp_path: Path) -> StateLocation:
    loc = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    loc.root.mkdir()
    init_project(loc, InitRequest(name="Demo", actor="tester"))
    return loc


def commit_one(location: StateLocation) -> int:
    with Store.open(location) as store, store.write("tester") as tx:
        event = tx.append("project.configured", {"changes": {"self_review": True}})
    return event.seq


def pipes(location: StateLocation) -> list[str]:
    directory = location.state_dir / changes.WAITERS_DIR
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def wait_until(condition, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached before the deadline"
        time.sleep(0.01)


def test_the_head_is_the_newest_committed_sequence(location: StateLocation) -> None:
    assert changes.head_seq(location) == 2
    seq = commit_one(location)
    assert changes.head_seq(location) == seq == 3


def test_a_change_already_committed_returns_at_once(location: StateLocation) -> None:
    wait = 30.0
    started = time.monotonic()
    assert changes.wait_for_change(location, 1, wait) == 2
    assert time.monotonic() - started < wait  # it did not sit out its deadline
    assert pipes(location) == []  # the waiter removed its pipe


def test_without_a_change_the_wait_ends_at_its_deadline_with_the_same_head(location: StateLocation) -> None:
    started = time.monotonic()
    assert changes.wait_for_change(location, 2, 0.2) == 2
    assert time.monotonic() - started >= 0.2
    assert pipes(location) == []


def test_a_waiter_reads_the_state_once_while_nothing_changes(location: StateLocation,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = changes._head

    def counted(conn):  # type: ignore[no-untyped-def]
        reads.append(1)
        return real(conn)

    monkeypatch.setattr(changes, "_head", counted)
    changes.wait_for_change(location, 2, 0.3)
    assert len(reads) <= 2  # one read after registering (and one at the deadline at most): no polling


def test_a_commit_in_another_process_wakes_a_waiter_at_once(location: StateLocation) -> None:
    env = anvil_subprocess_env(dict(os.environ))
    waiter = subprocess.Popen([sys.executable, "-c", WAITER, str(location.root), str(location.state_dir), "2", "60"],
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: any(name.endswith(".fifo") for name in pipes(location)))
        seq = commit_one(location)
        out, _ = waiter.communicate(timeout=30)
    finally:
        waiter.kill()
        waiter.wait()
    report = json.loads(out)
    assert report["head"] == seq and report["waited"] < 30  # woken by the commit, long before its deadline
    assert pipes(location) == []


def test_every_waiter_is_woken_by_one_commit(location: StateLocation) -> None:
    env = anvil_subprocess_env(dict(os.environ))
    waiters = [subprocess.Popen([sys.executable, "-c", WAITER, str(location.root), str(location.state_dir), "2",
                                 "60"], env=env, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        wait_until(lambda: sum(name.endswith(".fifo") for name in pipes(location)) == 3)
        seq = commit_one(location)
        heads = [json.loads(w.communicate(timeout=30)[0])["head"] for w in waiters]
    finally:
        for w in waiters:
            w.kill()
            w.wait()
    assert heads == [seq, seq, seq]


def test_a_notifier_removes_the_pipe_of_a_waiter_that_died(location: StateLocation) -> None:
    directory = location.state_dir / changes.WAITERS_DIR
    directory.mkdir()
    os.mkfifo(directory / "12345-dead.fifo")  # left behind by a killed waiter: nobody reads it
    commit_one(location)
    assert pipes(location) == []


def test_a_pipe_being_set_up_is_left_alone(location: StateLocation) -> None:
    directory = location.state_dir / changes.WAITERS_DIR
    directory.mkdir()
    os.mkfifo(directory / ".12345-new.new")  # a waiter between making its pipe and opening it
    commit_one(location)
    assert pipes(location) == [".12345-new.new"]


def test_notify_never_fails_without_waiters(location: StateLocation) -> None:
    changes.notify(location, 99)
    changes.notify(StateLocation(location.root, location.root / "missing", "local"), 1)
