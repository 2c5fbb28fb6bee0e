"""Schema migrations: an older database is brought forward with its projection intact."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from anvil.engine.storage import migrations
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import StateLocation, resolve_state
from anvil.engine.storage.store import Store
from anvil.engine.work.claims import NO_FENCE, held_claim
from anvil.engine.work.offers import next_claimable
from tests.ops.support import op, scenario


def undo_identity_columns(conn: sqlite3.Connection) -> None:
    """Take back what migration 3 (identity) added, as a database written before it."""
    for statement in ("DROP INDEX claims_active_actor", "DROP INDEX evidence_actor", "DROP TABLE tokens",
                      "ALTER TABLE claims DROP COLUMN actor_key", "ALTER TABLE evidence DROP COLUMN actor_key",
                      "ALTER TABLE reviews DROP COLUMN reviewer_role",
                      "ALTER TABLE reviews DROP COLUMN reviewer_authenticated"):
        conn.execute(statement)


def test_a_version_1_database_gains_task_files_and_keeps_file_conflicts(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        before = store.conn.execute("SELECT task_id, file FROM task_files ORDER BY task_id, file").fetchall()
        offered = next_claimable(store.conn)
    assert before, "the scenario's tasks name likely files"
    conn = sqlite3.connect(location.db_path)  # as anvil with schema 1 left it
    conn.execute("DROP TABLE task_files")
    undo_identity_columns(conn)
    conn.execute("PRAGMA user_version=1")
    conn.close()
    with Store.open(location) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        after = store.conn.execute("SELECT task_id, file FROM task_files ORDER BY task_id, file").fetchall()
        assert after == before
        assert next_claimable(store.conn) == offered
        assert verify(store)["ok"]
    assert op(anvil_env, "verify_state")["ok"]


def test_a_schema_2_database_gets_name_keys_for_its_claims_and_evidence(tmp_path: Path) -> None:
    location = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    location.root.mkdir()
    location.state_dir.mkdir()
    conn = sqlite3.connect(location.db_path)
    conn.executescript(migrations.MIGRATIONS[0])
    conn.executescript(migrations.MIGRATIONS[1])
    conn.execute("PRAGMA user_version=2")
    conn.execute(f"PRAGMA application_id={migrations.APPLICATION_ID}")
    conn.execute("INSERT INTO tasks (id, prd_id, title, description, status, priority, priority_rank, likely_files, "
                 "dependencies, inferred_dependencies, acceptance_criteria, verification, conflict_groups, "
                 "created_seq, updated_seq) VALUES ('T001','default','t','','claimed','high',3,'[]','[]','[]','[]',"
                 "'[]','[]',1,1)")
    conn.execute("INSERT INTO claims (id, task_id, actor, generation, status, claimed_at, lease_expires_at, "
                 "expected_files) VALUES ('C1','T001','Agent-Ｘ',1,'active','2030','2999','[]')")
    conn.execute("INSERT INTO evidence (id, task_id, actor, category, commands_run, files_changed, submitted_at, seq) "
                 "VALUES ('EV1','T001','ÉVA','completion',?,'[]','2030',1)", (json.dumps(["true"]),))
    conn.commit()
    conn.close()
    with Store.open(location) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert store.conn.execute("SELECT actor, actor_key FROM claims").fetchone() == ("Agent-Ｘ", "agent-x")
        assert store.conn.execute("SELECT actor_key FROM evidence").fetchone() == ("éva",)
        assert held_claim(store.conn, "T001", "AGENT-X", NO_FENCE)["id"] == "C1"


def test_replaying_the_log_from_empty_runs_every_migration(tmp_path: Path) -> None:
    from anvil.engine.project import InitRequest, init_project

    location = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    location.root.mkdir()
    init_project(location, InitRequest(name="Demo", actor="lead"))
    with Store.open(location) as store:
        assert verify(store)["replay_ok"]
