"""``anvil rebuild``: the database rebuilt from a verified events.jsonl; no fresh database beside a log."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage import migrations
from anvil.engine.storage.integrity import projection_rows
from tests.conftest import anvil_json
from tests.ops.support import op, scenario, store_of


def cli(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    return anvil_json(env, *args)


def paths(env: dict[str, str]) -> tuple[Path, Path]:
    with store_of(env) as store:
        return store.location.db_path, store.location.log_path


def snapshot(env: dict[str, str]) -> dict[str, list[Any]]:
    with store_of(env) as store:
        return projection_rows(store.conn)


def lose_database(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def test_a_lost_database_is_refused_everywhere_and_rebuilt_from_the_log(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "submitted")
    op(anvil_env, "claim_task", task_id="T002", actor="agent-2", idempotency_key="k-1")
    before = snapshot(anvil_env)
    db, _ = paths(anvil_env)
    lose_database(db)

    for args in (["status"], ["next"], ["verify"], ["claim", "T004", "--actor", "a"]):
        code, document = cli(anvil_env, *args)
        assert (code, document["error"]["code"]) == (8, "database_missing"), (args, document)
    code, document = cli(anvil_env, "init")
    assert (code, document["error"]["code"]) == (8, "database_missing"), "no fresh database beside a log"
    assert not db.exists()

    code, result = cli(anvil_env, "rebuild")
    assert code == 0 and result["rebuilt"] and result["verified"] and result["backup"] is None, result
    assert snapshot(anvil_env) == before, "replaying the log gives the very same projection"
    assert op(anvil_env, "claim_task", task_id="T002", actor="agent-2", idempotency_key="k-1")["generation"] == 1, \
        "idempotency records come back with the log"
    assert cli(anvil_env, "claim-next", "--actor", "agent-3")[0] == 0
    assert cli(anvil_env, "verify")[1]["ok"]


def test_rebuilding_over_an_existing_database_needs_yes_and_keeps_it_as_a_backup(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    before = snapshot(anvil_env)
    code, document = cli(anvil_env, "rebuild")
    assert (code, document["error"]["code"]) == (3, "confirmation_required")
    code, preview = cli(anvil_env, "rebuild", "--yes", "--dry-run")
    assert code == 0 and not preview["rebuilt"] and preview["event_count"] > 0
    code, result = cli(anvil_env, "rebuild", "--yes")
    assert code == 0 and result["verified"] and Path(result["backup"]).is_file(), result
    assert snapshot(anvil_env) == before
    backup = sqlite3.connect(result["backup"])
    assert backup.execute("SELECT COUNT(*) FROM events").fetchone()[0] == result["event_count"]
    backup.close()


def test_a_broken_chain_is_refused_naming_the_first_bad_event(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    db, log = paths(anvil_env)
    lines = log.read_bytes().split(b"\n")
    record = json.loads(lines[4])
    record["actor"] = "mallory"
    lines[4] = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    log.write_bytes(b"\n".join(lines))
    lose_database(db)
    code, document = cli(anvil_env, "rebuild", "--yes")
    assert (code, document["error"]["code"]) == (8, "log_chain_broken"), document
    assert document["error"]["details"]["first_bad_seq"] == 5
    assert "event 5" in document["error"]["message"]
    assert not db.exists(), "nothing is built from a broken chain"


def test_a_partial_last_line_is_dropped_and_said(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    db, log = paths(anvil_env)
    log.write_bytes(log.read_bytes() + b'{"seq": 3, "ts"')
    lose_database(db)
    code, result = cli(anvil_env, "rebuild")
    assert code == 0 and result["partial_line_dropped"] and result["event_count"] == 2, result


@pytest.mark.parametrize("command", [["status"], ["next"], ["verify"], ["config"]], ids=" ".join)
def test_an_empty_database_file_is_a_state_error_not_a_new_schema(anvil_env: dict[str, str],
                                                                   command: list[str]) -> None:
    scenario(anvil_env, "initialized")
    db, _ = paths(anvil_env)
    lose_database(db)
    db.write_bytes(b"")
    code, document = cli(anvil_env, *command)
    assert (code, document["error"]["code"]) == (8, "state_empty"), document
    assert "rebuild" in document["error"]["message"]
    assert db.read_bytes() == b"", "the empty file is left as it is"
    code, result = cli(anvil_env, "rebuild", "--yes")
    assert code == 0 and result["verified"], result
    assert Path(result["backup"]).read_bytes() == b""


def test_the_schema_of_a_rebuilt_database_is_current(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    db, _ = paths(anvil_env)
    lose_database(db)
    assert cli(anvil_env, "rebuild")[0] == 0
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == migrations.APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
