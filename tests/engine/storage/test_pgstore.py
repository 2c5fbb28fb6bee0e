"""The PostgreSQL store: versioned schema, chained log, writers serialised by an advisory lock."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from anvil.engine.errors import AnvilError, NotFound, StateIncompatible
from anvil.engine.storage import migrations
from anvil.engine.storage.paths import StateLocation
from anvil.engine.storage.pgstore import PgStore
from anvil.engine.storage.postgres import LOCK_KEY, display_database_url, translate_placeholders
from anvil.engine.storage.store import GENESIS_HASH


@pytest.fixture
def location(tmp_path: Path) -> StateLocation:
    return StateLocation(tmp_path, tmp_path / "state", "local")


def at(location: StateLocation, url: str) -> StateLocation:
    return location._replace(database_url=url)


def created(location: StateLocation, url: str) -> PgStore:
    store = PgStore.open_database(at(location, url), create=True)
    with store.write("tester") as tx:
        tx.append("project.created", {"project_id": "demo", "name": "Demo", "description": "", "root": "/x",
                                      "config": {}})
    return store


def test_a_new_database_gets_the_current_schema_and_a_chained_log(location: StateLocation, pg_url: str) -> None:
    with created(location, pg_url) as store:
        assert store.conn.execute("SELECT version FROM anvil_schema").fetchone()[0] == migrations.SCHEMA_VERSION
        with store.write("tester") as tx:
            tx.append("state.initialized", {"schema_version": migrations.SCHEMA_VERSION})
        events = list(store.events())
    assert [e.seq for e in events] == [1, 2]
    assert events[0].prev_hash == GENESIS_HASH and events[1].prev_hash == events[0].hash
    with PgStore.open_database(at(location, pg_url)) as again:
        assert again.conn.execute("SELECT name FROM project").fetchone()[0] == "Demo"


def test_an_empty_database_is_not_initialized(location: StateLocation, pg_url: str) -> None:
    with pytest.raises(NotFound) as info:
        PgStore.open_database(at(location, pg_url))
    assert info.value.code == "not_initialized"


def test_a_database_from_a_newer_anvil_fails_closed(location: StateLocation, pg_url: str) -> None:
    created(location, pg_url).close()
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE anvil_schema SET version = %s", (migrations.SCHEMA_VERSION + 1,))
    with pytest.raises(StateIncompatible) as info:
        PgStore.open_database(at(location, pg_url))
    assert info.value.details["database_schema"] == migrations.SCHEMA_VERSION + 1
    assert (info.value.code, info.value.details["direction"], info.value.details["restart_required"]) == \
        ("schema_mismatch", "newer", True)


def test_a_database_of_another_application_is_refused_untouched(location: StateLocation, pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (id INTEGER)")
    with pytest.raises(StateIncompatible) as info:
        PgStore.open_database(at(location, pg_url), create=True)
    assert info.value.code == "not_anvil_state"


def test_a_failed_mutation_leaves_log_and_projection_untouched(location: StateLocation, pg_url: str) -> None:
    with created(location, pg_url) as store:
        with pytest.raises(RuntimeError), store.write("tester") as tx:
            tx.append("project.configured", {"changes": {"self_review": True}})
            raise RuntimeError("the handler failed after appending")
        assert store.last_event()[0] == 1
        assert store.conn.execute("SELECT config FROM project").fetchone()[0] == "{}"


def test_a_writer_waiting_past_the_lock_timeout_is_busy_and_writes_nothing(location: StateLocation,
                                                                           pg_url: str) -> None:
    import psycopg

    created(location, pg_url).close()
    holder = psycopg.connect(pg_url)
    holder.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
    try:
        with PgStore.open_database(at(location, pg_url), lock_timeout=0.2) as store, \
                pytest.raises(AnvilError) as info, store.write("tester") as tx:
            tx.append("project.configured", {"changes": {"self_review": True}})
        assert info.value.code == "state_busy"
    finally:
        holder.rollback()
        holder.close()
    with PgStore.open_database(at(location, pg_url)) as store:
        assert store.last_event()[0] == 1


def test_writers_in_threads_are_serialised_into_one_unbroken_chain(location: StateLocation, pg_url: str) -> None:
    created(location, pg_url).close()

    def writer(n: int) -> None:
        with PgStore.open_database(at(location, pg_url)) as store:
            for _ in range(10):
                with store.write(f"w{n}") as tx:
                    tx.append("project.configured", {"changes": {"review_queue_cap": n}})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    with PgStore.open_database(at(location, pg_url)) as store:
        events = list(store.events())
    assert [e.seq for e in events] == list(range(1, 42))
    assert all(b.prev_hash == a.hash for a, b in zip(events, events[1:], strict=False))


def test_the_database_clock_moves_forward(location: StateLocation, pg_url: str) -> None:
    with created(location, pg_url) as store:
        first, second = store.now(), store.now()
    assert first.tzinfo is not None and second >= first


def test_a_shown_connection_string_never_carries_its_password() -> None:
    url = "postgresql://anvil:s3cret-pw@db.internal:5433/team?sslmode=require&password=other"
    shown = display_database_url(url)
    assert shown == "postgresql://anvil@db.internal:5433/team"
    assert "s3cret" not in shown and "other" not in shown


def test_an_unreachable_database_is_reported_without_its_password(location: StateLocation) -> None:
    with pytest.raises(StateIncompatible) as info:
        PgStore.open_database(at(location, "postgresql://anvil:s3cret-pw@127.0.0.1:9/none?connect_timeout=2"))
    assert info.value.code == "database_unavailable"
    assert "s3cret" not in str(info.value) and "s3cret" not in repr(info.value.details)


def test_placeholders_are_translated_outside_quoted_text() -> None:
    assert translate_placeholders("SELECT '?', x FROM t WHERE a = ? AND b LIKE '5%' AND c = ?") == \
        "SELECT '?', x FROM t WHERE a = %s AND b LIKE '5%%' AND c = %s"


def test_the_postgresql_schema_has_the_sqlite_schemas_tables_and_columns(location: StateLocation,
                                                                           pg_url: str) -> None:
    import sqlite3

    from anvil.engine.storage.integrity import replay_into

    embedded = sqlite3.connect(":memory:", isolation_level=None)
    replay_into(embedded, [])
    tables = [r[0] for r in embedded.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    with created(location, pg_url) as store:
        for table in tables:
            sqlite_columns = [r[1] for r in embedded.execute(f"PRAGMA table_info({table})")]
            pg_columns = [r[0] for r in store.conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                (table,)).fetchall()]
            assert pg_columns == sqlite_columns, table


def test_a_waiter_is_woken_by_a_commit_from_another_connection(location: StateLocation, pg_url: str) -> None:
    from anvil.engine.storage.changes import head_seq, wait_for_change

    created(location, pg_url).close()
    where = at(location, pg_url)
    seen = head_seq(where)
    woke: list[int] = []
    waiter = threading.Thread(target=lambda: woke.append(wait_for_change(where, seen, 30)))
    waiter.start()
    with PgStore.open_database(where) as store, store.write("tester") as tx:
        tx.append("project.configured", {"changes": {"self_review": True}})
    waiter.join(timeout=30)
    assert woke == [seen + 1]
    assert wait_for_change(where, seen + 1, 0.2) == seen + 1  # nothing new: back at the deadline


def test_the_postgresql_form_of_a_data_migration_fills_what_the_sqlite_form_fills(pg_url: str) -> None:
    import json
    import sqlite3

    import psycopg

    from anvil.engine.storage import pgschema

    git = {"mode": "branch", "branch": "agent/T001-x", "target_path": "/repo"}
    events = [("claim.acquired", {"claim_id": "C1", "git": git, "task_revision": "r1", "prd_revision": 3}),
              ("claim.acquired", {"claim_id": "C2", "git": None}),
              ("task.updated", {"claim_id": "C1", "git": {"target_path": "/elsewhere"}})]
    tables = ("CREATE TABLE events (seq INTEGER, type TEXT, payload TEXT)",
              "CREATE TABLE claims (id TEXT, git TEXT, git_target TEXT, task_revision TEXT, prd_revision INTEGER)")
    sqlite_update = pgschema.split_sql(migrations.MIGRATIONS[5])[4]
    lite = sqlite3.connect(":memory:")
    with psycopg.connect(pg_url, autocommit=True) as pg:
        pg.execute("CREATE SCHEMA m6 AUTHORIZATION CURRENT_USER")
        pg.execute("SET search_path TO m6")
        for statement in tables:
            lite.execute(statement)
            pg.execute(pgschema.translate(statement))
        for seq, (kind, payload) in enumerate(events, 1):
            lite.execute("INSERT INTO events VALUES (?, ?, ?)", (seq, kind, json.dumps(payload)))
            pg.execute("INSERT INTO events VALUES (%s, %s, %s)", (seq, kind, json.dumps(payload)))
        for claim in ("C1", "C2", "C3"):
            lite.execute("INSERT INTO claims (id) VALUES (?)", (claim,))
            pg.execute("INSERT INTO claims (id) VALUES (%s)", (claim,))
        lite.execute(sqlite_update)
        pg.execute(pgschema.DATA_STATEMENTS[(5, 4)])
        query = "SELECT id, git, git_target, task_revision, prd_revision FROM claims ORDER BY id"
        from_pg = [(i, g and json.loads(g), t, r, p) for i, g, t, r, p in pg.execute(query).fetchall()]
        pg.execute("DROP SCHEMA m6 CASCADE")
    from_lite = [(i, g and json.loads(g), t, r, p) for i, g, t, r, p in lite.execute(query).fetchall()]
    assert from_pg == from_lite
    assert from_lite[0] == ("C1", git, "/repo", "r1", 3) and from_lite[1][1:] == (None, None, None, None)


def test_a_replica_whose_own_clock_runs_a_day_ahead_leases_and_reaps_by_the_database_clock(
        anvil_env: dict[str, str], pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime, timedelta

    from tests.ops.support import advance_clock, op, scenario

    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)
    env = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    scenario(env, "ready")
    advance_clock(monkeypatch, 86400)  # this process's clock says tomorrow; the database's says now
    claim = op(env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=60)
    lease_end = datetime.fromisoformat(claim["lease_expires_at"])
    assert abs(lease_end - (datetime.now(UTC) + timedelta(seconds=60))) < timedelta(minutes=5), claim
    op(env, "get_next_task", actor="agent-2")  # a skewed replica's read reaps nothing that is still leased
    task = op(env, "get_task", task_id="T001")
    assert task["status"] == "claimed" and task["claim"]["id"] == claim["id"] and not task["claim"]["expired"]


def test_a_pooled_connection_the_server_closed_while_idle_is_replaced(location: StateLocation, pg_url: str) -> None:
    import psycopg

    from anvil.engine.storage.postgres import connect, forget_pool

    forget_pool()
    created(location, pg_url).close()  # its connection goes back to the pool
    pooled = connect(pg_url)
    backend_pid = pooled.raw.info.backend_pid
    pooled.close()
    with psycopg.connect(pg_url, autocommit=True) as admin:  # a server restart or an idle cut, for this one
        assert admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,)).fetchone() == (True,)
    with PgStore.open_database(at(location, pg_url)) as store:
        assert store.last_event()[0] == 1
        assert store.conn.raw.info.backend_pid != backend_pid


def test_the_change_feed_head_survives_a_pooled_connection_closed_while_idle(location: StateLocation,
                                                                           pg_url: str) -> None:
    import psycopg

    from anvil.engine.storage.postgres import PgFeed, connect, forget_pool

    forget_pool()
    created(location, pg_url).close()
    pooled = connect(pg_url)
    backend_pid = pooled.raw.info.backend_pid
    pooled.close()
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
    assert PgFeed(pg_url).head() == 1
