"""Running a proved command: what the proof keeps, the timeout, and what the command never sees."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from anvil.engine.proof.runner import run_proof

CLAIM = {"task_id": "T001", "id": "C000001", "generation": 2, "claimed_by": "agent-1", "task_revision": "r1",
         "prd_revision": 1, "attestation_context": None}


def test_a_proof_keeps_the_exit_code_the_output_digest_and_its_tail(tmp_path: Path) -> None:
    import hashlib

    body = run_proof(CLAIM, [sys.executable, "-c", "print('x' * 5000); raise SystemExit(4)"], tmp_path)
    assert body["exit_code"] == 4 and body["output_bytes"] == 5001 and body["cwd"] == str(tmp_path)
    assert body["output_sha256"] == hashlib.sha256(b"x" * 5000 + b"\n").hexdigest()
    assert body["output_excerpt"] == "x" * 4095 + "\n" and body["generation"] == 2


def test_a_silent_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    began = time.monotonic()
    sleeper = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
               "time.sleep(60)']); time.sleep(60)")
    body = run_proof(CLAIM, [sys.executable, "-c", sleeper], tmp_path, timeout=0.5)
    # The child holds the output pipe for 60 s: ending before that means the timeout killed it too.
    assert body["exit_code"] == -9 and time.monotonic() - began < 60


def test_the_signing_key_never_reaches_the_proved_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----secret-material")
    body = run_proof(CLAIM, [sys.executable, "-c", "import os; print(os.environ.get('ANVIL_SIGNING_KEY'))"],
                     tmp_path)
    assert body["output_excerpt"] == "None\n"


SECRET_ENV = {"PATH": "/usr/bin:/bin", "AGENT_TOKEN": "anvil_tk000007_" + "s" * 43, "PGPASSWORD": "pg-pass-12345",
              "ANVIL_DATABASE_URL": "postgresql://anvil:db%2Fpass-987@db.internal:5432/anvil",
              "DATABASE_URL": "postgresql://app:app-pass-555@db.internal/app", "ANVIL_ROOT": "/p",
              "ANVIL_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----material"}
SHOWN = "import os, sys; print(sorted(os.environ)); sys.stdout.write(open(sys.argv[1]).read())"


def test_the_proved_command_runs_without_the_token_anvils_variables_and_database_credentials(
        tmp_path: Path) -> None:
    (tmp_path / "leak.txt").write_text("")
    body = run_proof(CLAIM, [sys.executable, "-c", SHOWN, "leak.txt"], tmp_path, env=SECRET_ENV,
                     token_env="AGENT_TOKEN")
    seen = body["output_excerpt"]
    for name in ("AGENT_TOKEN", "PGPASSWORD", "ANVIL_DATABASE_URL", "DATABASE_URL", "ANVIL_ROOT",
                 "ANVIL_SIGNING_KEY"):
        assert f"'{name}'" not in seen, name
    assert "'PATH'" in seen


def test_every_known_secret_is_redacted_from_the_recorded_output_even_at_the_excerpts_edge(
        tmp_path: Path) -> None:
    secrets = [SECRET_ENV["AGENT_TOKEN"], "pg-pass-12345", "db/pass-987", "app-pass-555", "extra-signing-secret",
               SECRET_ENV["ANVIL_DATABASE_URL"]]
    # The command finds them anyway (a file it reads); the first is cut by the excerpt's start.
    filler = "y" * (4096 - len(" ".join(secrets[1:])) - 3)
    (tmp_path / "leak.txt").write_text(secrets[0] + " " + filler + " " + " ".join(secrets[1:]))
    body = run_proof(CLAIM, [sys.executable, "-c", "import sys; sys.stdout.write(open(sys.argv[1]).read())",
                             "leak.txt"], tmp_path, env=SECRET_ENV, token_env="AGENT_TOKEN",
                     secrets_=["extra-signing-secret"])
    seen = body["output_excerpt"]
    assert "[redacted]" in seen
    for value in [*secrets, SECRET_ENV["AGENT_TOKEN"][-20:]]:
        assert value not in seen, value
