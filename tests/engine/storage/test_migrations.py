"""Schema migrations: an older database is brought forward with its projection intact (schema 4:
PRD revisions backfilled from the log; idempotency rows that no event covers dropped)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from anvil.engine.storage import migrations
from anvil.engine.storage.canonical import canonical_json, sha256_hex
from anvil.engine.storage.integrity import verify
from anvil.engine.storage.paths import StateLocation, resolve_state
from anvil.engine.storage.store import Store
from anvil.engine.work.claims import NO_FENCE, held_claim
from anvil.engine.work.offers import next_claimable
from tests.ops.support import op, scenario, store_of

READ_INDEXES = 10
"""The schema that added the indexes the team-wide reads use (issue 25's migration; the lead numbers it)."""
GRAPH_PATH = 11
"""The schema that keeps the whole graph's critical path in the projection (``graph_path``), computed
from its index (``tasks_graph``)."""


def as_schema(db: object, version: int) -> None:
    """Make the database look as anvil with schema ``version`` left it (undo the later migrations)."""
    conn = sqlite3.connect(str(db))
    if version < GRAPH_PATH:
        conn.execute("DROP INDEX tasks_graph")
        conn.execute("DROP TABLE graph_path")
    if version < READ_INDEXES:
        for index in ("prds_gate", "tasks_status", "tasks_gate"):
            conn.execute(f"DROP INDEX {index}")
    if version < 9:
        undo_landing(conn)
    if version < 8:
        undo_trust_columns(conn)
    if version < 7:
        conn.execute("DROP INDEX idempotency_key")
        conn.execute("ALTER TABLE tasks DROP COLUMN scores_confirmed_seq")
    if version < 6:
        undo_proof_columns(conn)
    if version < 5:
        undo_bundle_tables(conn)
    if version < 4:  # no PRD revisions table, idempotency rows without their event's seq
        conn.executescript("DROP TABLE prd_revisions; DROP TABLE idempotency;"
                           "CREATE TABLE idempotency (actor TEXT NOT NULL, operation TEXT NOT NULL, key TEXT NOT NULL,"
                           " request_digest TEXT NOT NULL, result TEXT NOT NULL, created_at TEXT NOT NULL,"
                           " PRIMARY KEY (actor, operation, key)) WITHOUT ROWID;")
    if version < 3:
        undo_identity_columns(conn)
    if version < 2:
        conn.execute("DROP TABLE task_files")
    conn.execute(f"PRAGMA user_version={version}")
    conn.commit()
    conn.close()


def undo_landing(conn: sqlite3.Connection) -> None:
    """Take back what migration 9 (the landing queue) added."""
    for statement in ("DROP TABLE landings", "DROP TABLE landing_files", "ALTER TABLE tasks DROP COLUMN finished",
                      "ALTER TABLE tasks DROP COLUMN landed_seq"):
        conn.execute(statement)


def undo_identity_columns(conn: sqlite3.Connection) -> None:
    """Take back what migration 3 (identity) added, as a database written before it."""
    for statement in ("DROP INDEX claims_active_actor", "DROP INDEX evidence_actor", "DROP TABLE tokens",
                      "ALTER TABLE claims DROP COLUMN actor_key", "ALTER TABLE evidence DROP COLUMN actor_key",
                      "ALTER TABLE reviews DROP COLUMN reviewer_role",
                      "ALTER TABLE reviews DROP COLUMN reviewer_authenticated"):
        conn.execute(statement)


BUNDLE_TABLES = ("bundles", "bundle_members", "bundle_claims", "bundle_reviews", "bundle_checkpoints",
                 "bundle_progress")


def undo_bundle_tables(conn: sqlite3.Connection) -> None:
    """Take back what migration 5 (execution bundles) added."""
    for table in BUNDLE_TABLES:
        conn.execute(f"DROP TABLE {table}")


def undo_proof_columns(conn: sqlite3.Connection) -> None:
    """Take back what migration 6 (git-bound claims and proofs) added."""
    for statement in ("DROP INDEX claims_active_git", "DROP TABLE command_proofs", "DROP TABLE attestations",
                      "DROP TABLE trusted_keys", "ALTER TABLE claims DROP COLUMN git",
                      "ALTER TABLE claims DROP COLUMN git_target", "ALTER TABLE claims DROP COLUMN task_revision",
                      "ALTER TABLE claims DROP COLUMN prd_revision", "ALTER TABLE reviews DROP COLUMN evidence_gaps",
                      "ALTER TABLE reviews DROP COLUMN asserted_reason_code"):
        conn.execute(statement)


def undo_trust_columns(conn: sqlite3.Connection) -> None:
    """Take back what migration 8 (trust levels, commit-bound work) added, and its renaming of trust levels."""
    for statement in ("ALTER TABLE evidence DROP COLUMN tree_sha", "ALTER TABLE evidence DROP COLUMN branch",
                      "ALTER TABLE reviews DROP COLUMN commit_sha", "ALTER TABLE reviews DROP COLUMN tree_sha",
                      *(f"ALTER TABLE command_proofs DROP COLUMN {column}" for column in (
                          "commit_sha", "tree_sha", "proved_by", "proved_by_key", "proved_by_role",
                          "proved_by_authenticated")),
                      "UPDATE command_proofs SET trust_mode = CASE WHEN issuer_id IS NULL THEN "
                      "'claim_owner_self_attested' ELSE 'configured_issuer_verified' END",
                      "UPDATE attestations SET trust_mode = CASE WHEN issuer_id IS NULL THEN "
                      "'claim_owner_self_attested' ELSE 'configured_issuer_verified' END"):
        conn.execute(statement)


def test_a_schema_5_database_keeps_its_claims_without_a_git_binding(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    as_schema(location.db_path, 5)
    claim = op(anvil_env, "get_task", task_id="T001")["claim"]
    assert claim["generation"] == 1 and claim["git_metadata"] is None and claim["branch"] is None
    assert op(anvil_env, "verify_state")["ok"]


def test_a_version_1_database_gains_task_files_and_keeps_file_conflicts(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        before = store.conn.execute("SELECT task_id, file FROM task_files ORDER BY task_id, file").fetchall()
        offered = next_claimable(store.conn)
    assert before, "the scenario's tasks name likely files"
    as_schema(location.db_path, 1)
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


def test_a_schema_4_database_gains_the_bundle_tables_and_keeps_its_claims(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    as_schema(location.db_path, 4)
    with Store.open(location) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert store.conn.execute("SELECT COUNT(*) FROM bundles").fetchone() == (0,)
        assert held_claim(store.conn, "T001", "agent-1", NO_FENCE)["generation"] == 1
    assert op(anvil_env, "create_bundle", bundle_id="B1", task_ids=["T002"], coordinator="agent-2",
              actor="lead")["bundle"]["status"] == "planned"
    assert op(anvil_env, "verify_state")["ok"]


def test_replaying_the_log_from_empty_runs_every_migration(tmp_path: Path) -> None:
    from anvil.engine.project import InitRequest, init_project

    location = StateLocation(tmp_path / "root", tmp_path / "state", "local")
    location.root.mkdir()
    init_project(location, InitRequest(name="Demo", actor="lead"))
    with Store.open(location) as store:
        assert verify(store)["replay_ok"]
def test_a_state_from_before_schema_4_migrates_and_verifies(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    with store_of(anvil_env) as store:
        db = store.location.db_path
        legacy = [e for e in store.events() if e.type != "idempotency.recorded"]
    as_schema(db, 3)
    conn = sqlite3.connect(db)  # a retry record kept before records were events
    conn.execute("INSERT INTO idempotency VALUES ('agent-1', 'claim_task', 'old', 'd', '{}', 't')")
    conn.commit()
    conn.close()
    with store_of(anvil_env) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert store.conn.execute("SELECT COUNT(*) FROM idempotency").fetchone()[0] == 0
        revisions = store.conn.execute("SELECT prd_id, revision FROM prd_revisions").fetchall()
        assert revisions == [("default", 1)]
        assert len(list(store.events())) == len(legacy)
        report = verify(store)
    assert report["ok"], report["problems"]
    op(anvil_env, "release_task", task_id="T001", actor="agent-1", idempotency_key="new")
    with store_of(anvil_env) as store:
        assert verify(store)["ok"]


def _legacy_proof(env: dict[str, str], pem: str | None) -> dict:
    """A command proof as anvil wrote it before trust levels were honest: a version 1 body (no ``signer``),
    signed over the version 1 signing input, named by the old trust mode."""
    from anvil.engine.proof.artifacts import PROOF
    from anvil.engine.proof.runner import run_proof
    from anvil.engine.proof.signing import sign

    claim = op(env, "get_task", task_id="T001")["claim"]
    body = run_proof(claim, ["python", "-c", "pass"], Path(env["ANVIL_ROOT"]))
    signature = sign(pem, f"{PROOF}.v1\n".encode() + canonical_json(body).encode()) if pem else None
    return {"digest": sha256_hex(canonical_json(body)), "body": body, "signature": signature,
            "trust_mode": "configured_issuer_verified" if pem else "claim_owner_self_attested",
            "issuer_id": signature["key_id"] if signature else None}


def test_a_log_with_the_old_trust_names_replays_as_client_reported_and_a_schema_7_database_migrates(
        anvil_env: dict[str, str]) -> None:
    from anvil.engine.proof.signing import generate

    scenario(anvil_env, "claimed")
    pem, public = generate()
    op(anvil_env, "add_trusted_key", public_key=public, actor="lead")
    proofs = [_legacy_proof(anvil_env, pem), _legacy_proof(anvil_env, None)]
    payload = {"evidence_id": "EV00000099", "task_id": "T001", "claim_id": proofs[0]["body"]["claim_id"],
               "generation": 1, "actor": "agent-1", "category": "completion", "commands_run": ["python -c pass"],
               "files_changed": [], "output_excerpt": None, "pr_url": None, "commit_sha": None,
               "command_proofs": proofs, "ends_claim": True}  # an event of the old shape: no tree or branch
    with store_of(anvil_env) as store, store.write("agent-1") as tx:
        tx.append("evidence.submitted", payload)
    expected = [("client_reported", proofs[0]["issuer_id"], "agent-1"), ("client_reported", None, "agent-1")]

    def rows() -> list[tuple]:
        with store_of(anvil_env) as store:
            return store.conn.execute("SELECT trust_mode, issuer_id, proved_by FROM command_proofs ORDER BY "
                                      "issuer_id IS NULL").fetchall()

    assert rows() == expected
    assert op(anvil_env, "verify_state")["ok"]  # replay maps the old names and re-checks the v1 signature
    with store_of(anvil_env) as store:
        db = store.location.db_path
    as_schema(db, 7)  # the rows as anvil with schema 7 kept them (old trust names, no new columns)
    assert rows() == expected  # opening migrates them
    assert op(anvil_env, "verify_state")["ok"]
    history = op(anvil_env, "get_task", task_id="T001")["history"]["evidence"][0]
    assert {p["trust_mode"] for p in history["proofs"]} == {"client_reported"}
    assert history["trust"]["trust_level"] == "client_reported"


def test_a_schema_8_database_counts_its_done_tasks_as_finished_for_their_dependents(
        anvil_env: dict[str, str]) -> None:
    """Nothing landed before schema 9: every done task satisfies its dependents, as it did."""
    scenario(anvil_env, "approved_verified")  # T001 is done; T003 and T004 depend on it
    with store_of(anvil_env) as store:
        db = store.location.db_path
        before = store.conn.execute("SELECT id, unmet_deps FROM tasks ORDER BY id").fetchall()
    as_schema(db, 8)
    with store_of(anvil_env) as store:
        assert store.conn.execute("SELECT id FROM tasks WHERE finished = 1").fetchall() == [("T001",)]
        assert store.conn.execute("SELECT id, unmet_deps FROM tasks ORDER BY id").fetchall() == before
        assert store.conn.execute("SELECT COUNT(*) FROM landings").fetchone()[0] == 0
    assert op(anvil_env, "verify_state")["ok"]


def test_a_schema_8_database_gains_the_read_indexes_and_the_claim_gate_skips_the_prd_document(
        anvil_env: dict[str, str]) -> None:
    from anvil.engine.prd.approval import APPROVED_PRD, approval_problem

    scenario(anvil_env, "ready")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    as_schema(location.db_path, READ_INDEXES - 1)
    with Store.open(location) as store:
        indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"prds_gate", "tasks_status", "tasks_gate"} <= indexes
        plan = " ".join(str(r) for r in store.conn.execute(
            f"EXPLAIN QUERY PLAN SELECT COUNT(*) FROM tasks t WHERE t.status = 'ready' AND {APPROVED_PRD}"))
        assert "COVERING INDEX prds_gate" in plan and "CORRELATED" not in plan
        assert approval_problem(store.conn, "default") is None
        assert approval_problem(store.conn, "nope") == "PRD 'nope' does not exist"
        assert verify(store)["ok"]


def test_a_schema_10_database_gains_the_kept_critical_path_computed_from_the_graph_index(
        anvil_env: dict[str, str]) -> None:
    from anvil.engine.work.views import FINISHED_IDS, OPEN_WEIGHTS, dependency_graph

    scenario(anvil_env, "verified")
    location = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"])
    with Store.open(location) as store:
        before = dependency_graph(store.conn, "all", None)
        kept = store.conn.execute("SELECT * FROM graph_path").fetchall()
    assert before["critical_path"] and len(kept) == 1
    as_schema(location.db_path, GRAPH_PATH - 1)
    with Store.open(location) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert store.conn.execute("SELECT * FROM graph_path").fetchall() == kept
        for query in (OPEN_WEIGHTS, FINISHED_IDS):
            plan = " ".join(str(r) for r in store.conn.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert "COVERING INDEX tasks_graph" in plan, query
        assert dependency_graph(store.conn, "all", None) == before
        assert verify(store)["ok"]


def test_a_schema_10_postgresql_database_gains_the_kept_critical_path_from_its_projection(
        anvil_env: dict[str, str], pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)
    env = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    scenario(env, "verified")
    graph = op(env, "get_dependency_graph", scope="all")
    with psycopg.connect(pg_url, autocommit=True) as pg:
        kept = pg.execute("SELECT path, edge_count, ordered FROM graph_path").fetchall()
        assert kept == [(json.dumps(graph["critical_path"]), graph["paging"]["edge_count"], 1)]
        pg.execute("DROP TABLE graph_path")
        pg.execute("DROP INDEX tasks_graph")
        pg.execute("UPDATE anvil_schema SET version = %s", (GRAPH_PATH - 1,))
    assert op(env, "get_dependency_graph", scope="all") == graph
    with psycopg.connect(pg_url, autocommit=True) as pg:
        assert pg.execute("SELECT path, edge_count, ordered FROM graph_path").fetchall() == kept
        assert pg.execute("SELECT version FROM anvil_schema").fetchone() == (migrations.SCHEMA_VERSION,)
    assert op(env, "verify_state")["ok"]
