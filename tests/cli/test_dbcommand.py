"""``anvil db copy``: a project's whole log moves into PostgreSQL, verified there, and the password
of a connection string never shows."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ANVIL, CliResult, anvil_subprocess_env
from tests.gitrepo import git, make_repo, plan_in_repo
from tests.ops.support import op, scenario


@pytest.fixture(autouse=True)
def sqlite_source(anvil_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The project copied is an embedded SQLite one, even under ``ANVIL_TEST_BACKEND=postgresql``."""
    monkeypatch.delenv("ANVIL_DATABASE_URL", raising=False)
    anvil_env.pop("ANVIL_DATABASE_URL", None)


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


def test_a_git_bound_project_with_signed_proofs_and_bundles_copies_and_replays_equal(
        anvil_env: dict[str, str], cli: Callable[..., CliResult], pg_url: str, tmp_path: Path) -> None:
    from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY

    root = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env)
    key = cli("keys", "generate", "--out", str(tmp_path / "k.pem"), "--json").json()
    assert cli("trust", "add", key["public_key"], "--label", "ci", "--actor", "lead", "--json").code == 0
    claim = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json").json()
    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proof = cli("proof", "run", "T001", "--actor", "agent-1", "--key-file", str(tmp_path / "k.pem"), "--json", "--",
                *claim["continuation"]["prove"][0]["argv"][claim["continuation"]["prove"][0]["argv"].index("--") + 1:])
    assert proof.code == 0, proof.stdout
    git(root, "add", "shortlink", "tests")
    git(root, "commit", "-q", "-m", "T001")
    submitted = cli("submit", "T001", "--actor", "agent-1", "--proof", proof.json()["path"], "--json")
    assert submitted.json()["claim_bound_command_proofs"][0]["trust_mode"] == "client_reported"
    assert submitted.json()["claim_bound_command_proofs"][0]["issuer_id"] == key["key_id"]
    verified = cli("verify-task", "T001", "--actor", "runner-1", "--json")  # a task.verified event in the log
    assert verified.code == 0 and verified.json()["trust_level"] == "verified", verified.stdout
    assert cli("apply", "T001", "--approve", "--actor", "lead", "--json").json()["decision"] == "accepted"
    second = cli("claim", "T002", "--worktree", "--actor", "agent-2", "--json").json()
    linked = Path(second["continuation"]["cd"])
    (linked / "shortlink" / "validate.py").write_text("OK = True\n")
    made = cli("attest", "T002", "--actor", "agent-2", "--out", str(tmp_path / "att.json"), "--json")
    assert made.code == 0, made.stdout
    progress = cli("progress", "T002", "--actor", "agent-2", "--attestation-file", str(tmp_path / "att.json"), "--json")
    assert progress.json()["event_action"] == "progress.attested"
    assert cli("trust", "remove", key["key_id"], "--actor", "lead", "--json").code == 0
    op(anvil_env, "create_bundle", bundle_id="B1", task_ids=["T005", "T006"], coordinator="agent-3", actor="lead")
    op(anvil_env, "claim_bundle", bundle_id="B1", actor="agent-3")
    before = {name: op(anvil_env, name) for name in ("get_project_status", "list_trusted_keys", "list_bundles")}

    copied = cli("db", "copy", "--to", pg_url, "--json")
    assert copied.code == 0, copied.stdout + copied.stderr
    assert copied.json()["projection_equal"] and copied.json()["replay_ok"] and copied.json()["chain_ok"]
    shared = {**anvil_env, "ANVIL_DATABASE_URL": pg_url}
    assert op(shared, "verify_state")["ok"]  # replay on PostgreSQL re-verifies the signed proof
    after = {name: op(shared, name) for name in before}
    assert after["list_trusted_keys"] == before["list_trusted_keys"]
    assert after["list_bundles"] == before["list_bundles"]
    assert after["get_project_status"]["task_counts"] == before["get_project_status"]["task_counts"]
    task = op(shared, "get_task", task_id="T002")
    assert task["claim"]["git_metadata"]["target_path"] == str(linked)
    renewed = op(shared, "renew_claim", task_id="T002", actor="agent-2")  # the attestation goes on there
    assert renewed["progress"]["digest"] == progress.json()["attestation"]["digest"]


def test_with_anvil_database_url_already_naming_the_target_the_local_state_is_copied(
        anvil_env: dict[str, str], cli: Callable[..., CliResult], pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "ready")
    events = op(anvil_env, "verify_state")["event_count"]
    monkeypatch.setenv("ANVIL_DATABASE_URL", pg_url)  # set for after the move, as docs/deploy.md does
    copied = cli("db", "copy", "--to-env", "ANVIL_DATABASE_URL", "--json")
    assert copied.code == 0, copied.stdout + copied.stderr
    assert copied.json()["ok"] and copied.json()["events_copied"] == events
    assert cli("status", "--json").json()["total_tasks"] > 0  # the team's commands now read PostgreSQL


def test_a_target_variable_that_is_not_set_is_named(cli: Callable[..., CliResult]) -> None:
    result = cli("db", "copy", "--to-env", "ANVIL_NO_SUCH_DATABASE", "--json")
    assert (result.code, result.json()["error"]["code"]) == (2, "database_env_unset")
    assert "ANVIL_NO_SUCH_DATABASE" in result.json()["error"]["message"]
