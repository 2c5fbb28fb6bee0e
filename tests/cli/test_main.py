"""The CLI entry and its error boundary: exact JSON documents, one-line errors, fixed exit codes; a
reader that closes the pipe early ends any command quietly with exit 141."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from anvil import __version__
from anvil.ops.scenarios import build_scenario
from tests.conftest import ANVIL, anvil_subprocess_env


def test_version_prints_the_engine_version(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--version")
    assert (result.code, result.stdout) == (0, f"anvil {__version__}\n")


def test_status_before_init_answers_uninitialized_as_json(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    result = cli("status", "--json")
    assert result.code == 0 and result.stderr == ""
    doc = result.json()
    assert doc["initialized"] is False
    assert doc["total_tasks"] == 0 and set(doc["task_counts"].values()) == {0}
    assert result.stdout == json.dumps(doc, indent=2, sort_keys=True) + "\n"


def test_init_then_status_reports_the_project(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", "--name", "Shop Front", "--json").json()["project_id"] == "shop-front"
    doc = cli("status", "--json").json()
    assert (doc["initialized"], doc["project_name"]) == (True, "Shop Front")


def test_a_refused_operation_prints_the_error_envelope_and_exit_code(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--json")
    result = cli("init", "--json")
    assert result.code == 5
    assert result.json()["error"]["code"] == "already_initialized"
    assert set(result.json()["error"]) == {"code", "message"}


def test_a_destructive_variant_needs_confirmation(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--json")
    result = cli("init", "--force", "--json")
    assert (result.code, result.json()["error"]["code"]) == (3, "confirmation_required")
    assert cli("init", "--force", "--yes", "--name", "Again", "--json").code == 0
    assert cli("status", "--json").json()["project_name"] == "Again"


def test_dry_run_reports_without_writing(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("init", "--dry-run", "--json")
    assert result.code == 0 and result.json()["created"] is True
    assert cli("status", "--json").json()["initialized"] is False


def test_an_unknown_flag_is_one_line_on_stderr_with_exit_2(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("status", "--bogus")
    assert result.code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--bogus" in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_flag_with_json_prints_the_error_envelope(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("status", "--bogus", "--json")
    assert result.code == 2
    assert result.json()["error"]["code"] == "usage"


def test_a_bad_mcp_target_is_a_usage_error_before_anything_runs(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("status", "--mcp", "https://u:pw@host/mcp", "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "credentials_in_url")
    assert "pw" not in result.stdout


def test_an_unreachable_http_target_is_exit_7_naming_the_safe_target(cli) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli("status", "--mcp", f"http://127.0.0.1:{port}/mcp?k=v#f", "--json")
    assert result.code == 7
    message = result.json()["error"]["message"]
    assert f"http://127.0.0.1:{port}/mcp" in message and "k=v" not in message


def test_a_newer_database_fails_closed_with_exit_8(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from anvil.engine.storage.paths import resolve_state

    cli("init", "--json")
    db = resolve_state(anvil_env, anvil_env["ANVIL_ROOT"]).db_path
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version=999")
    conn.close()
    result = cli("summary", "--json")
    assert (result.code, result.json()["error"]["code"]) == (8, "schema_mismatch")
    assert cli("summary").stderr.count("\n") == 1


def test_a_command_that_needs_an_actor_refuses_without_one(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("ready", anvil_env, anvil_env["ANVIL_ROOT"])
    result = cli("claim", "T001", "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "missing_actor")
    human = cli("claim", "T001")
    assert human.code == 2 and "ANVIL_ACTOR" in human.stderr and len(human.stderr.splitlines()) == 1


def test_next_quiet_exits_3_on_an_empty_queue(cli) -> None:  # type: ignore[no-untyped-def]
    cli("init", "--json")
    empty = cli("next", "-q")
    assert (empty.code, empty.stdout) == (3, "")


def run_into_a_closed_pipe(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        return subprocess.run([*ANVIL, *args], stdout=write_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=anvil_subprocess_env(env), timeout=60, cwd=env["ANVIL_ROOT"])
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["--help"], ["status"], ["status", "--json"]], ids=" ".join)
def test_a_closed_stdout_ends_the_command_quietly_with_141(anvil_env: dict[str, str], args: list[str]) -> None:
    proc = run_into_a_closed_pipe(args, anvil_env)
    assert (proc.returncode, proc.stderr) == (141, b""), proc.stderr.decode()
