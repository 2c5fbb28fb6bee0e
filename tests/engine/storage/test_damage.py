"""Damaged, foreign and half-made state: exit 8 with detail, foreign files untouched, init in one step,
and one winner among concurrent forced inits."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.storage.locking import LOCK_NAME
from anvil.engine.storage.paths import resolve_state
from tests.conftest import ANVIL, anvil_json, anvil_subprocess_env
from tests.faults import killed, run_killed_at
from tests.ops.support import scenario, store_of


def cli(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    return anvil_json(env, *args)


def location(env: dict[str, str]) -> Any:
    return resolve_state(env, env["ANVIL_ROOT"])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_verify_on_a_corrupted_database_exits_8_naming_what_is_wrong(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "ready")
    db = location(anvil_env).db_path
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    for page in range(2, pages):  # every page but the header page: tables and indexes alike
        start = page * page_size
        data[start + 8:start + 64] = b"\xa5" * 56
    db.write_bytes(bytes(data))
    code, document = cli(anvil_env, "verify")
    assert code == 8, document
    text = json.dumps(document)
    assert any(word in text for word in ("damaged", "malformed", "database file", "cannot be read")), document


def test_a_database_file_that_is_not_sqlite_is_a_state_error(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    db = location(anvil_env).db_path
    db.write_bytes(b"this is not a database" * 400)
    for args in (["status"], ["verify"]):
        code, document = cli(anvil_env, *args)
        assert code == 8 and document["error"]["code"] in ("state_damaged", "not_anvil_state"), document


@pytest.mark.parametrize("version", [0, 3])
def test_status_on_a_foreign_sqlite_file_never_writes_to_it(anvil_env: dict[str, str], version: int) -> None:
    loc = location(anvil_env)
    loc.state_dir.mkdir(parents=True)
    conn = sqlite3.connect(loc.db_path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.execute(f"PRAGMA user_version={version}")
    conn.commit()
    conn.close()
    before = digest(loc.db_path)
    for args in (["status"], ["next"], ["config"], ["verify"]):
        code, document = cli(anvil_env, *args)
        assert (code, document["error"]["code"]) == (8, "not_anvil_state"), (args, document)
    assert digest(loc.db_path) == before, "the foreign file is byte for byte unchanged"
    conn = sqlite3.connect(loc.db_path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()


@pytest.mark.parametrize("point", ["init_built", "init_installed"])
def test_init_killed_at_any_point_leaves_no_half_made_state(anvil_env: dict[str, str], point: str) -> None:
    proc = run_killed_at(anvil_env, point, "init", "--json")
    assert killed(proc), proc.stderr
    code, status = cli(anvil_env, "status")
    assert code == 0, status
    if status["initialized"]:  # killed after the database took its place: a whole project
        assert status["project_id"] and cli(anvil_env, "verify")[1]["ok"]
    else:
        assert cli(anvil_env, "init")[0] == 0
    assert cli(anvil_env, "verify")[1]["ok"]


def test_a_crash_before_init_commits_leaves_no_database_and_init_can_run_again(anvil_env: dict[str, str]) -> None:
    proc = run_killed_at(anvil_env, "init_built", "init", "--json")
    assert killed(proc)
    assert not location(anvil_env).db_path.exists()
    code, document = cli(anvil_env, "init", "--name", "Again")
    assert code == 0 and document["project_name"] == "Again", document


def blocked_waiters(lock: Path) -> int:
    """flock waiters blocked on ``lock`` right now (from /proc/locks)."""
    inode = os.stat(lock).st_ino
    return sum(1 for line in Path("/proc/locks").read_text().splitlines()
               if "->" in line and line.split()[-3].endswith(f":{inode}"))


def test_eight_concurrent_forced_inits_have_one_winner_and_leave_one_backup(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "initialized")
    loc = location(anvil_env)
    hold = ("import fcntl,os,sys; fd=os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(loc.state_dir / LOCK_NAME)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    procs = [subprocess.Popen([*ANVIL, "init", "--force", "--yes", "--json"], env=anvil_subprocess_env(anvil_env),
                              cwd=anvil_env["ANVIL_ROOT"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    try:
        deadline = time.monotonic() + 60
        while blocked_waiters(loc.state_dir / LOCK_NAME) < 8:  # all of them have looked and wait for the lock
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "the inits did not queue"
            time.sleep(0.05)
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err
        results.append((proc.returncode, json.loads(out)))
    assert sorted(code for code, _ in results) == [0] + [5] * 7, results
    assert {doc["error"]["code"] for code, doc in results if code} == {"init_raced"}
    backups = list(loc.state_dir.parent.glob(loc.state_dir.name + ".bak-*"))
    assert len(backups) == 1, backups
    assert cli(anvil_env, "verify")[1]["ok"]
    with store_of(anvil_env) as store:
        assert store.last_event()[0] == 2, "one fresh project"
