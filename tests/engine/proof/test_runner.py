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
    assert body["exit_code"] == -9 and time.monotonic() - began < 30


def test_the_signing_key_never_reaches_the_proved_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----secret-material")
    body = run_proof(CLAIM, [sys.executable, "-c", "import os; print(os.environ.get('ANVIL_SIGNING_KEY'))"],
                     tmp_path)
    assert body["output_excerpt"] == "None\n"
