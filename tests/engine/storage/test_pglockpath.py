"""PostgreSQL's short critical section: from the first append to the commit a transaction's statements
go in one pipeline (an optimistic write's lock ahead of them), and what fails in it is reported as
the failure it is (a stale snapshot, a lock not granted in time), with nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.errors import AnvilError, Refused
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.pgstore import PgStore
from anvil.engine.storage.postgres import LOCK_KEY
from anvil.engine.storage.store import StaleSnapshot, Store, Transaction


@pytest.fixture
def location(tmp_path: Path, pg_url: str) -> StateLocation:
    loc = StateLocation(tmp_path, tmp_path / "state", "local")._replace(database_url=pg_url)
    with PgStore.open_database(loc, create=True) as store, store.write("tester") as tx:
        tx.append("project.created", {"project_id": "demo", "name": "Demo", "description": "", "root": "/x",
                                      "config": {}})
    return loc


def _configure(tx: Transaction, value: int) -> None:
    tx.append("project.configured", {"changes": {"review_queue_cap": value}})


def _note(tx: Transaction, value: int) -> None:
    """An event whose projection only writes (one insert): no answer is read while it is applied."""
    tx.append("progress.noted", {"task_id": "T001", "actor": "tester", "notes": f"step {value}", "phase": None,
                                 "detail": None, "generation": 1})


def _seqs(location: StateLocation) -> list[int]:
    with PgStore.open_database(location) as store:
        return [event.seq for event in store.events()]


@contextmanager
def _answers_waited() -> Iterator[list[str]]:
    """Every time the driver waits for the server's answer (a round trip), by the driver step's name."""
    import psycopg

    original = psycopg.Connection.wait
    seen: list[str] = []

    def wait(raw: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(gen, "__name__", "")
        pipeline = raw._pipeline
        if name in ("_sync_gen", "_exit_gen") or (name == "_fetch_gen" and pipeline.result_queue) or (
                pipeline is None and name != "_enter_gen"):
            seen.append(name)
        return original(raw, gen, *args, **kwargs)

    psycopg.Connection.wait = wait  # type: ignore[method-assign,assignment]
    try:
        yield seen
    finally:
        psycopg.Connection.wait = original  # type: ignore[method-assign]


def test_an_optimistic_write_sends_its_lock_events_and_commit_in_one_round_trip(location: StateLocation) -> None:
    before = _seqs(location)
    with PgStore.open_database(location) as store, _answers_waited() as waited:
        with store.write("tester", optimistic=True) as tx:
            tx.conn.execute("SELECT COUNT(*) FROM events").fetchone()  # a read before the lock
            start = len(waited)
            _note(tx, 3)
            _note(tx, 4)
            assert waited[start:] == []  # nothing waited for while the lock is (being) taken
        assert waited[start:] == ["_exit_gen"]  # the lock, both events, the notification, the commit: one answer
        notes = store.conn.execute("SELECT notes FROM progress ORDER BY seq").fetchall()
    assert _seqs(location) == [*before, before[-1] + 1, before[-1] + 2]
    assert [row[0] for row in notes] == ["step 3", "step 4"]


def test_a_write_holding_the_lock_from_the_start_waits_once_more_only_for_its_commit(location: StateLocation) -> None:
    with PgStore.open_database(location) as store, _answers_waited() as waited:
        with store.write("tester") as tx:
            start = len(waited)
            _note(tx, 5)
            tx.conn.execute("SELECT COUNT(*) FROM progress").fetchone()  # a read after an append waits for it
            _note(tx, 6)
        assert waited[start:] == ["_fetch_gen", "_exit_gen"]
    assert _seqs(location)[-2:] == [2, 3]


def test_a_pipelined_lock_not_granted_in_time_is_busy_and_writes_nothing(location: StateLocation,
                                                                         pg_url: str) -> None:
    import psycopg

    before = _seqs(location)
    holder = psycopg.connect(pg_url)
    try:
        with PgStore.open_database(location, lock_timeout=0.2) as store:
            with pytest.raises(AnvilError) as info, store.write("tester", optimistic=True) as tx:
                assert not tx.locked  # the lock was free when the snapshot was taken
                holder.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                _configure(tx, 7)
            assert info.value.code == "state_busy"
            holder.rollback()
            with store.write("tester") as tx:  # the connection is usable again once the lock is free
                _configure(tx, 8)
    finally:
        holder.rollback()
        holder.close()
    assert _seqs(location) == [*before, before[-1] + 1]


@pytest.mark.parametrize("after_stale", ["refuse", "read", "dry_run"])
def test_what_follows_a_stale_first_event_is_run_again_and_nothing_is_written(location: StateLocation,
                                                                              after_stale: str) -> None:
    """A stale first event fails in the pipeline; its answer may come only at the end (a refusal, a
    read, a dry run's rollback after it): the write still reports a stale snapshot, never the refusal
    or the rows that rested on the stale reads."""
    before = _seqs(location)
    with PgStore.open_database(location) as store, PgStore.open_database(location) as other:
        with pytest.raises(StaleSnapshot), store.write("tester", optimistic=True) as tx:
            with other.write("other") as theirs:
                _configure(theirs, 9)
            _configure(tx, 10)
            if after_stale == "refuse":
                raise Refused("a rule refused on what the stale snapshot showed")
            if after_stale == "read":
                tx.conn.execute("SELECT config FROM project").fetchone()
            tx.rollback_only = True
        with store.write("tester") as tx:  # and the connection keeps writing
            _configure(tx, 11)
    assert _seqs(location) == [*before, before[-1] + 1, before[-1] + 2]


def test_the_pipeline_keeps_prepared_statements_and_forgets_them_after_a_stale_write(location: StateLocation) -> None:
    """Statements prepared inside the pipeline stay prepared (PostgreSQL plans them once); after a
    failed pipeline the driver forgets what it believed prepared and prepares afresh, without error."""
    def prepared(store: Store) -> int:
        return int(store.conn.execute("SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE "
                                      "'INSERT INTO events%'").fetchone()[0])

    with PgStore.open_database(location) as store, PgStore.open_database(location) as other:
        for value in range(8):
            with store.write("tester", optimistic=True) as tx:
                _configure(tx, value)
        assert prepared(store) == 1
        with pytest.raises(StaleSnapshot), store.write("tester", optimistic=True) as tx:
            with other.write("other") as theirs:
                _configure(theirs, 20)
            _configure(tx, 21)
        assert prepared(store) == 0  # deallocated with the driver's memory of them
        for value in range(8):
            with store.write("tester", optimistic=True) as tx:
                _configure(tx, value)
        assert prepared(store) == 1
    events = _seqs(location)
    assert events == list(range(1, len(events) + 1))


@pytest.mark.parametrize("optimistic", [False, True])
def test_the_reads_every_write_makes_first_come_with_its_start_and_a_write_forgets_them(
        location: StateLocation, optimistic: bool) -> None:
    """The project row and the PRDs' approval gates arrive with the start's own round trip (holding
    the lock from the start: inside it); read once from there, and never after the write began."""
    from anvil.engine.prd.approval import approval_gate
    from anvil.engine.project import project_row

    with PgStore.open_database(location) as store, _answers_waited() as waited:
        with store.write("tester", optimistic=optimistic) as tx:
            start = len(waited)
            assert project_row(store)["name"] == "Demo"
            assert approval_gate(tx.conn, "P1") == ("PRD 'P1' does not exist", None)
            assert waited[start:] == []
            assert project_row(store)["name"] == "Demo"  # asked again: the database answers
            assert len(waited) == start + 1
            _configure(tx, 12)
            assert project_row(store)["config"]["review_queue_cap"] == 12  # after a write: read afresh
        assert isinstance(store, PgStore) and not store.conn.prefetched


def test_reads_sent_ahead_are_answered_in_one_round_trip_and_forgotten_at_a_write(location: StateLocation) -> None:
    reads = [("SELECT COUNT(*) FROM events WHERE seq > ?", (0,)), ("SELECT config FROM project", ())]
    with PgStore.open_database(location) as store, _answers_waited() as waited:
        with store.write("tester") as tx:
            start = len(waited)
            store.read_ahead(reads)
            assert len(waited) == start + 1
            assert tx.conn.execute(*reads[0]).fetchone() == (1,)
            assert tx.conn.execute(*reads[1]).fetchall() == [("{}",)]
            assert len(waited) == start + 1  # both answered from what came back
            store.read_ahead(reads)
            _note(tx, 13)
            assert tx.conn.execute(*reads[0]).fetchone() == (2,)  # the write made the rows sent ahead stale


def test_a_claim_and_a_submission_holding_the_lock_from_their_start_wait_for_four_answers_inside_it(
        pg_url: str, anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock with the chain head, the project row and the PRD gates; the offer; the task's claims,
    bundle, conflicts and contract version sent together; the events and the commit (ten on main)."""
    from anvil.ops.invoke import invoke
    from anvil.ops.scenarios import build_scenario

    env = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)
    build_scenario("ready", env, env["ANVIL_ROOT"])
    real = PgStore.write

    def locked(store: PgStore, actor: str, *, optimistic: bool = False) -> Any:
        return real(store, actor, optimistic=False)

    monkeypatch.setattr(PgStore, "write", locked)
    # The first claim reads the PRD's document for its contracts (cached then, per revision).
    assert invoke("claim_next_task", {"actor": "agent-0"}, env=env, cwd=env["ANVIL_ROOT"])["claim"] is not None
    from scripts.bench_claim_lock import PgProbe

    invoke("configure_project", {"evidence_gate": "advisory", "actor": "lead"}, env=env, cwd=env["ANVIL_ROOT"])
    holds: list[dict[str, Any]] = []
    undo = PgProbe(holds.append).install()
    try:
        claim = invoke("claim_next_task", {"actor": "agent-1"}, env=env, cwd=env["ANVIL_ROOT"])["claim"]
        invoke("submit_completion_evidence", {"task_id": claim["task_id"], "actor": "agent-1",
                                              "generation": claim["generation"], "claim_id": claim["id"],
                                              "commands_run": ["pytest -q"], "files_changed": claim["expected_files"]},
               env=env, cwd=env["ANVIL_ROOT"])
        decided = invoke("apply_review_decisions", {"task_ids": [claim["task_id"]], "approve": True,
                                                    "actor": "reviewer"}, env=env, cwd=env["ANVIL_ROOT"])
    finally:
        undo()
    assert decided["decided_count"] == 1
    # Claim, submission, decision (10, 7 and 15 on main): the decision's projection reads what it needs.
    assert [hold["round_trips"] for hold in holds] == [4, 4, 10]


def test_rows_sent_ahead_are_forgotten_at_a_write_of_many_rows_or_a_rollback_to_a_savepoint(
        location: StateLocation) -> None:
    read = ("SELECT COUNT(*) FROM task_deps", ())
    with PgStore.open_database(location) as store, store.write("tester") as tx:
        store.read_ahead([read])
        tx.conn.executemany("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", [("T1", "T0"), ("T2", "T0")])
        assert tx.conn.execute(*read).fetchone() == (2,)
        tx.conn.execute("SAVEPOINT probe")
        tx.conn.execute("INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)", ("T3", "T0"))
        store.read_ahead([read])
        tx.conn.execute("ROLLBACK TO probe")
        assert tx.conn.execute(*read).fetchone() == (2,)
        tx.rollback_only = True
