"""Optimistic writes: read without the writer lock, take it at the first append, and never commit
on reads another writer's commit made stale (both storage backends)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from anvil.engine.storage import changes
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import StaleSnapshot, Store, Transaction
from anvil.ops.invoke import invoke


def _ready(env: dict[str, str]) -> None:
    from anvil.ops.scenarios import build_scenario

    build_scenario("ready", env, env["ANVIL_ROOT"])


def _open(env: dict[str, str]) -> Store:
    return Store.open(resolve_state(env, env["ANVIL_ROOT"]))


def _configure(tx: Transaction, value: bool) -> None:
    tx.append("project.configured", {"changes": {"self_review": value}})


def _seqs(env: dict[str, str]) -> list[int]:
    with _open(env) as store:
        return [event.seq for event in store.events()]


def test_an_optimistic_write_that_appends_nothing_takes_no_lock(backend_env: dict[str, str]) -> None:
    _ready(backend_env)
    with _open(backend_env) as store, store.write("tester", optimistic=True) as tx:
        assert not tx.locked
        tx.conn.execute("SELECT COUNT(*) FROM tasks").fetchone()
        assert not tx.locked
    with _open(backend_env) as store, store.write("tester", optimistic=True) as tx:
        _configure(tx, True)
        assert tx.locked


def test_a_commit_after_an_optimistic_read_makes_its_first_append_stale_and_nothing_is_written(
        backend_env: dict[str, str]) -> None:
    _ready(backend_env)
    before = _seqs(backend_env)
    with _open(backend_env) as reader, _open(backend_env) as other:
        with pytest.raises(StaleSnapshot), reader.write("tester", optimistic=True) as tx:
            tx.conn.execute("SELECT COUNT(*) FROM tasks").fetchone()  # the read the append would rest on
            with other.write("other") as theirs:
                _configure(theirs, True)
            _configure(tx, False)
    after = _seqs(backend_env)
    assert after == [*before, before[-1] + 1]  # only the other writer's event: the stale one left nothing
    with _open(backend_env) as store:
        assert store.last_event()[0] == after[-1]


def test_a_write_is_locked_from_the_start_while_another_writer_holds_the_lock(
        backend_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _ready(backend_env)
    from anvil.engine.storage.pgstore import PgStore

    holding, release, seen = threading.Event(), threading.Event(), []
    # The holder lets go only once the writer starts waiting for the lock (SQLite: the file lock;
    # PostgreSQL: the statement that waits for the advisory lock).
    real_lock, real_sql = Store.lock, PgStore._lock_sql

    def lock(store: Store) -> Any:
        if threading.current_thread().name == "writer":
            release.set()
        return real_lock(store)

    def lock_sql(store: PgStore) -> str:
        if threading.current_thread().name == "writer":
            release.set()
        return real_sql(store)

    monkeypatch.setattr(Store, "lock", lock)
    monkeypatch.setattr(PgStore, "_lock_sql", lock_sql)

    def hold() -> None:
        with _open(backend_env) as store, store.write("holder") as tx:
            _configure(tx, True)
            holding.set()
            release.wait(30)

    def write() -> None:
        with _open(backend_env) as store, store.write("tester", optimistic=True) as tx:
            seen.append(tx.locked)  # it waited for the lock, then read: nothing it reads can go stale
            _configure(tx, False)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        writer = threading.Thread(target=write, name="writer")
        writer.start()
        writer.join(30)
    finally:
        release.set()
        holder.join(30)
    assert seen == [True]


def test_a_claim_whose_reads_went_stale_is_taken_once_under_the_lock(backend_env: dict[str, str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime runs an operation once more, holding the lock from the start, when another writer
    committed after its optimistic reads: exactly one claim, and the chain stays whole."""
    _ready(backend_env)
    from anvil.ops import runtime

    real = runtime._mutate
    attempts: list[bool] = []

    def mutate(spec: Any, handler: Any, args: dict[str, Any], ctx: Any, *, optimistic: bool) -> dict[str, Any]:
        attempts.append(optimistic)
        if optimistic:  # another writer commits between this attempt's reads and its first append
            original = Transaction.append

            def append(tx: Transaction, *a: Any, **k: Any) -> Any:
                Transaction.append = original  # type: ignore[method-assign]
                with _open(backend_env) as other, other.write("other") as theirs:
                    _configure(theirs, True)
                return original(tx, *a, **k)

            monkeypatch.setattr(Transaction, "append", append)
        return real(spec, handler, args, ctx, optimistic=optimistic)

    monkeypatch.setattr(runtime, "_mutate", mutate)
    result = invoke("claim_next_task", {"actor": "agent-1"}, env=backend_env, cwd=backend_env["ANVIL_ROOT"])
    assert attempts == [True, False]
    assert result["claim"] is not None
    with _open(backend_env) as store:
        events = list(store.events())
    assert [e.type for e in events].count("claim.acquired") == 1
    assert all(b.prev_hash == a.hash and b.seq == a.seq + 1 for a, b in zip(events, events[1:], strict=False))


def test_a_quiet_commit_does_not_wake_a_waiter_for_work_but_one_that_frees_work_does(
        backend_env: dict[str, str]) -> None:
    _ready(backend_env)
    location = resolve_state(backend_env, backend_env["ANVIL_ROOT"])
    claimed = invoke("claim_next_task", {"actor": "agent-1"}, env=backend_env, cwd=backend_env["ANVIL_ROOT"])["claim"]
    seen = changes.head_seq(location)
    woke: list[tuple[int, float]] = []

    def waiter() -> None:
        started = time.monotonic()
        head = changes.wait_for_change(location, seen, 30, work=True)
        woke.append((head, time.monotonic() - started))

    invoke("renew_claim", {"task_id": claimed["task_id"], "actor": "agent-1", "generation": claimed["generation"],
                           "extend_seconds": 600}, env=backend_env, cwd=backend_env["ANVIL_ROOT"])
    started = time.monotonic()
    assert changes.wait_for_change(location, seen, 0.3, work=True) == seen + 1
    assert time.monotonic() - started >= 0.3  # the renewed lease (it frees no work) did not end the wait
    assert changes.wait_for_change(location, seen, 0.0) == seen + 1  # a wait for any change sees it at once
    thread = threading.Thread(target=waiter)
    thread.start()
    released = invoke("release_task", {"task_id": claimed["task_id"], "actor": "agent-1",
                                       "generation": claimed["generation"]}, env=backend_env,
                      cwd=backend_env["ANVIL_ROOT"])
    assert released["released"]
    thread.join(30)
    assert woke and woke[0][0] > seen + 1 and woke[0][1] < 25  # woken by the release, long before its deadline


def test_quiet_events_are_only_those_that_never_free_work() -> None:
    assert not changes.frees_work(["claim.acquired", "claim.renewed", "idempotency.recorded"])
    assert changes.frees_work(["claim.acquired", "claim.released"])
    assert changes.frees_work(["an.event.this.version.does.not.know"])  # unknown: wake (a look costs little)


def test_a_connection_keeps_writing_after_many_stale_optimistic_writes(backend_env: dict[str, str]) -> None:
    """A stale first event aborts its batch of statements (PostgreSQL: the pipeline); the connection
    must stay usable (no statement the driver thinks prepared but the server never kept)."""
    _ready(backend_env)
    stale = 0
    with _open(backend_env) as store, _open(backend_env) as other:
        for index in range(12):
            try:
                with store.write("tester", optimistic=True) as tx:
                    with other.write("other") as theirs:
                        _configure(theirs, index % 2 == 0)
                    _configure(tx, index % 2 == 1)
            except StaleSnapshot:
                stale += 1
            with store.write("tester") as tx:
                _configure(tx, True)
    assert stale == 12
    with _open(backend_env) as store:
        events = list(store.events())
    assert all(b.prev_hash == a.hash for a, b in zip(events, events[1:], strict=False))
