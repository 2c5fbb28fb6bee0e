"""The storage contract, held by both backends: one chained log, events and projection written
together, replay equality, idempotent retries, dry runs, fail-closed schema versions, a bounded
writer lock, and the same projection whichever backend ran the same calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from anvil.engine.errors import AnvilError, StateIncompatible
from anvil.engine.storage import migrations
from anvil.engine.storage.integrity import projection_rows, verify
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import GENESIS_HASH, Store
from tests.backends import backend_of
from tests.ops.support import op, refused, scenario, store_of


def _raw_execute(env: dict[str, str], sql: str, params: tuple[Any, ...] = ()) -> None:
    """Change the state behind anvil's back (to prove that checks notice)."""
    if backend_of(env) == "postgresql":
        import psycopg

        with psycopg.connect(env["ANVIL_DATABASE_URL"], autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)
    else:
        import sqlite3

        conn = sqlite3.connect(resolve_state(env, env["ANVIL_ROOT"]).db_path)
        conn.execute(sql, params)
        conn.commit()
        conn.close()


def test_a_whole_work_loop_leaves_a_chained_log_that_replays_to_the_projection(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "submitted")
    op(backend_env, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")
    with store_of(backend_env) as store:
        events = list(store.events())
        report = verify(store)
    assert events[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.hash and b.seq == a.seq + 1 for a, b in zip(events, events[1:], strict=False))
    assert report["ok"], report["problems"]
    assert report["chain_ok"] and report["replay_ok"]


def test_both_backends_build_the_same_projection_from_the_same_calls(anvil_env: dict[str, str], pg_url: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANVIL_DATABASE_URL", raising=False)  # SQLite first, even under ANVIL_TEST_BACKEND
    embedded_env = {k: v for k, v in anvil_env.items() if k != "ANVIL_DATABASE_URL"}
    scenario(embedded_env, "submitted")
    with store_of(embedded_env) as store:
        assert type(store).__name__ == "Store"
        embedded = projection_rows(store.conn)
        embedded_types = [e.type for e in store.events()]
    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)
    server_env = {**embedded_env, "ANVIL_DATABASE_URL": pg_url}
    scenario(server_env, "submitted")
    with store_of(server_env) as store:
        assert type(store).__name__ == "PgStore"
        shared = projection_rows(store.conn)
        shared_types = [e.type for e in store.events()]
    assert shared_types == embedded_types
    assert {t: len(rows) for t, rows in shared.items()} == {t: len(rows) for t, rows in embedded.items()}
    # Times and ids drawn from times differ between runs; the shapes and the text columns must not.
    assert [row[:5] for row in shared["tasks"]] == [row[:5] for row in embedded["tasks"]]


def test_an_idempotent_retry_returns_the_first_result_and_writes_nothing(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "ready")
    first = op(backend_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k-1")
    with store_of(backend_env) as store:
        head = store.last_event()
    again = op(backend_env, "claim_task", task_id="T001", actor="agent-1", idempotency_key="k-1")
    assert again == first
    with store_of(backend_env) as store:
        assert store.last_event() == head
    assert refused(backend_env, "claim_task", task_id="T002", actor="agent-1",
                   idempotency_key="k-1").code == "idempotency_conflict"


def test_a_dry_run_and_a_refusal_write_nothing(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "ready")
    with store_of(backend_env) as store:
        head = store.last_event()
    op(backend_env, "claim_task", task_id="T001", actor="agent-1", dry_run=True)
    assert refused(backend_env, "claim_task", task_id="T404", actor="agent-1").code == "task_not_found"
    with store_of(backend_env) as store:
        assert store.last_event() == head


def test_verify_notices_a_tampered_event_and_a_drifted_projection(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "initialized")
    _raw_execute(backend_env, "UPDATE project SET name = ?", ("edited by hand",))
    with store_of(backend_env) as store:
        drifted = verify(store)
    assert drifted["chain_ok"] and not drifted["replay_ok"]
    _raw_execute(backend_env, "UPDATE events SET actor = ? WHERE seq = 1", ("mallory",))
    with store_of(backend_env) as store:
        tampered = verify(store)
    assert not tampered["ok"] and not tampered["chain_ok"]


def test_a_state_from_a_newer_anvil_fails_closed(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "initialized")
    newer = migrations.SCHEMA_VERSION + 1
    if backend_of(backend_env) == "postgresql":
        _raw_execute(backend_env, "UPDATE anvil_schema SET version = ?", (newer,))
    else:
        _raw_execute(backend_env, f"PRAGMA user_version={newer}")
    with pytest.raises(StateIncompatible) as info:
        Store.open(resolve_state(backend_env, backend_env["ANVIL_ROOT"]))
    assert info.value.exit_code == 8 and info.value.details["database_schema"] == newer


def test_a_writer_kept_waiting_past_the_lock_timeout_is_busy(backend_env: dict[str, str]) -> None:
    scenario(backend_env, "ready")
    location = resolve_state(backend_env, backend_env["ANVIL_ROOT"])
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with Store.open(location) as store, store.write("holder"):
            holding.set()
            release.wait(timeout=60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=30)
        with pytest.raises(AnvilError) as info:
            op({**backend_env, "ANVIL_LOCK_TIMEOUT": "0.2"}, "claim_task", task_id="T001", actor="agent-1")
        assert (info.value.code, info.value.exit_code) == ("state_busy", 9)
    finally:
        release.set()
        holder.join(timeout=60)
    assert op(backend_env, "claim_task", task_id="T001", actor="agent-1")["generation"] == 1
