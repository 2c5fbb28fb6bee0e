"""Schema migrations: an older database is brought forward with its projection intact."""

from __future__ import annotations

import sqlite3

from anvil.engine.storage import migrations
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import resolve_state
from anvil.engine.storage.store import Store
from anvil.engine.work.offers import next_claimable
from tests.ops.support import op, scenario


def test_a_version_1_database_gains_task_files_and_keeps_file_conflicts(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        before = store.conn.execute("SELECT task_id, file FROM task_files ORDER BY task_id, file").fetchall()
        offered = next_claimable(store.conn)
    assert before, "the scenario's tasks name likely files"
    conn = sqlite3.connect(location.db_path)  # as anvil with schema 1 left it
    conn.execute("DROP TABLE task_files")
    conn.execute("PRAGMA user_version=1")
    conn.close()
    with Store.open(location) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        after = store.conn.execute("SELECT task_id, file FROM task_files ORDER BY task_id, file").fetchall()
        assert after == before
        assert next_claimable(store.conn) == offered
        assert verify(store)["ok"]
    assert op(anvil_env, "verify_state")["ok"]
