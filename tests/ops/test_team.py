"""Token operations: a token is shown once and never kept, listed without secrets, revoked by name or id."""

from __future__ import annotations

import sqlite3

from anvil.engine.storage.paths import resolve_state
from tests.ops.support import op, refused, scenario, store_of


def everything_stored(env: dict[str, str]) -> str:
    """Every byte anvil keeps for the project: database (checkpointed), WAL, mirror, other files."""
    location = resolve_state(env, env["ANVIL_ROOT"])
    texts = [path.read_bytes().decode("utf-8", errors="replace") for path in location.state_dir.rglob("*")
             if path.is_file()] if location.state_dir.is_dir() else []
    if location.database_url:  # PostgreSQL: every row of every table
        import psycopg

        with psycopg.connect(location.database_url) as pg:
            for (table,) in pg.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"):
                texts.extend(repr(row) for row in pg.execute(f'SELECT * FROM "{table}"'))
        return "\n".join(texts)
    with store_of(env) as store:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    texts = [path.read_bytes().decode("utf-8", errors="replace") for path in location.state_dir.rglob("*")
             if path.is_file()]
    conn = sqlite3.connect(location.db_path)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            texts.extend(repr(row) for row in conn.execute(f"SELECT * FROM {table}"))
    finally:
        conn.close()
    return "\n".join(texts)


def test_a_token_is_shown_once_and_only_its_digest_is_kept(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    issued = op(anvil_env, "add_token", name="agent-1", role="agent", expires="30d", actor="lead")
    token = issued["token"]
    assert token and issued["role"] == "agent" and issued["expires_at"] and "shown only here" in issued["notice"]
    assert token not in everything_stored(anvil_env)
    listed = op(anvil_env, "list_tokens")["tokens"]
    assert [t["token_id"] for t in listed] == [issued["token_id"]] and listed[0]["created_by"] == "lead"
    assert token not in repr(listed) and "digest" not in listed[0]


def test_an_idempotent_retry_of_a_grant_never_replays_the_token(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    first = op(anvil_env, "add_token", name="agent-1", role="agent", idempotency_key="grant-1")
    again = op(anvil_env, "add_token", name="agent-1", role="agent", idempotency_key="grant-1")
    assert first["token"] and again["token"] is None and again["token_id"] == first["token_id"]
    assert first["token"] not in everything_stored(anvil_env)
    assert op(anvil_env, "list_tokens")["count"] == 1


def test_a_dry_run_grant_shows_no_token_and_keeps_nothing(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    preview = op(anvil_env, "add_token", name="agent-1", role="agent", dry_run=True)
    assert preview["token"] is None and op(anvil_env, "list_tokens")["count"] == 0


def test_revoking_by_name_ends_every_live_token_and_by_id_only_one(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    a = op(anvil_env, "add_token", name="agent-1", role="agent")["token_id"]
    b = op(anvil_env, "add_token", name="Agent-1", role="agent")["token_id"]
    c = op(anvil_env, "add_token", name="agent-2", role="agent")["token_id"]
    assert op(anvil_env, "revoke_token", name="agent-1", token_id=a)["revoked"] == [a]
    assert op(anvil_env, "revoke_token", name="AGENT-1")["revoked"] == [b]
    assert op(anvil_env, "revoke_token", name="agent-1")["count"] == 0
    assert refused(anvil_env, "revoke_token", name="agent-1", token_id=a).code == "token_not_found"
    assert [t["token_id"] for t in op(anvil_env, "list_tokens")["tokens"]] == [c]
    ended = op(anvil_env, "list_tokens", name="agent-1", all=True)["tokens"]
    assert {t["token_id"]: t["status"] for t in ended} == {a: "revoked", b: "revoked"}


def test_a_name_keeps_one_role(anvil_env) -> None:
    scenario(anvil_env, "initialized")
    op(anvil_env, "add_token", name="agent-1", role="agent")
    error = refused(anvil_env, "add_token", name="agent-1", role="lead")
    assert (error.code, error.exit_code) == ("token_role_conflict", 5) and "revoke" in error.message


def test_the_cli_prints_a_new_token_once_with_a_warning(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", "--json").code == 0
    human = cli("token", "add", "agent-1", "--role", "agent")
    assert human.code == 0 and "anvil_tk" in human.stdout and "only once" in human.stdout
    listed = cli("token", "list")
    assert listed.code == 0 and "anvil_tk" not in listed.stdout and "agent-1" in listed.stdout
