"""``anvil db copy``: a project's whole log moves into PostgreSQL, verified there, and the password
of a connection string never shows."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from tests.conftest import ANVIL, CliResult, anvil_subprocess_env
from tests.ops.support import op, scenario


def with_password(url: str, password: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@")


def test_a_project_copied_into_postgresql_carries_its_history_and_verifies(
        anvil_env: dict[str, str], cli: Callable[..., CliResult], pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "submitted")
    before = op(anvil_env, "get_project_status")
    events = op(anvil_env, "verify_state")["event_count"]
    monkeypatch.setenv("TARGET_DB", with_password(pg_url, "s3cret-never-shown"))
    copied = cli("db", "copy", "--to-env", "TARGET_DB", "--json")
    assert copied.code == 0, copied.stdout + copied.stderr
    report = copied.json()
    assert report["ok"] and report["events_copied"] == events
    assert report["chain_ok"] and report["replay_ok"] and report["projection_equal"]
    assert "s3cret" not in copied.stdout + copied.stderr
    shared = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    after = op(shared, "get_project_status")
    assert {k: after[k] for k in ("task_counts", "project_name", "active_claim_count")} == \
        {k: before[k] for k in ("task_counts", "project_name", "active_claim_count")}
    assert op(shared, "verify_state")["ok"]
    op(shared, "apply_review_decision", task_id="T001", approve=True, reviewer="lead")  # it goes on from there


def test_copying_into_a_database_that_holds_a_log_is_refused(anvil_env: dict[str, str],
                                                             cli: Callable[..., CliResult], pg_url: str) -> None:
    scenario(anvil_env, "initialized")
    assert cli("db", "copy", "--to", pg_url, "--json").code == 0
    again = cli("db", "copy", "--to", pg_url, "--json")
    assert (again.code, again.json()["error"]["code"]) == (5, "database_not_empty")


def test_a_password_on_the_command_line_is_refused_and_never_echoed(anvil_env: dict[str, str],
                                                                    pg_url: str) -> None:
    scenario(anvil_env, "initialized")
    proc = subprocess.run([*ANVIL, "db", "copy", "--to", with_password(pg_url, "s3cret-pw"), "--json"],
                          env=anvil_subprocess_env(anvil_env), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "password_in_database_url"
    assert "s3cret" not in proc.stdout + proc.stderr


def test_an_unreachable_target_is_named_without_its_password(anvil_env: dict[str, str],
                                                             cli: Callable[..., CliResult],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "initialized")
    monkeypatch.setenv("TARGET_DB", "postgresql://anvil:s3cret-pw@127.0.0.1:9/team?connect_timeout=2")
    result = cli("db", "copy", "--to-env", "TARGET_DB")
    assert result.code == 8
    assert "postgresql://anvil@127.0.0.1:9/team" in result.stderr
    assert "s3cret" not in result.stdout + result.stderr


def test_an_invalid_database_url_in_the_environment_is_a_usage_error(cli: Callable[..., CliResult],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_DATABASE_URL", "mysql://root:s3cret@db/x")
    result = cli("status", "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "invalid_database_url")
    assert "s3cret" not in result.stdout + result.stderr
