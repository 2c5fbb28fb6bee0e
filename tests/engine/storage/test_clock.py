"""No environment variable or input moves the clock of a shipped anvil; tests inject a clock."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import ANVIL, anvil_subprocess_env
from tests.ops.support import advance_clock, op, scenario

ANVIL_SOURCE = Path(__file__).resolve().parents[3] / "anvil"


@pytest.mark.parametrize("variable", ["ANVIL_TEST_NOW_OFFSET", "ANVIL_NOW", "FAKETIME"])
def test_a_clock_variable_in_the_environment_changes_nothing(anvil_env: dict[str, str], variable: str) -> None:
    scenario(anvil_env, "ready")
    env = {**anvil_subprocess_env(anvil_env), variable: str(10 * 365 * 86400)}
    proc = subprocess.run([*ANVIL, "claim", "T001", "--actor", "agent-1", "--lease", "60", "--json"], env=env,
                          cwd=anvil_env["ANVIL_ROOT"], capture_output=True, text=True, timeout=60)
    claim = json.loads(proc.stdout)
    lease_end = datetime.fromisoformat(claim["lease_expires_at"])
    assert abs(lease_end - (datetime.now(UTC) + timedelta(seconds=60))) < timedelta(minutes=5), claim


def test_no_module_reads_a_clock_offset() -> None:
    offenders = [str(path.relative_to(ANVIL_SOURCE)) for path in ANVIL_SOURCE.rglob("*.py")
                 if "TEST_NOW" in path.read_text(encoding="utf-8")]
    assert offenders == []


def test_an_injected_clock_moves_time_for_one_call_only(anvil_env: dict[str, str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(anvil_env, "ready")
    advance_clock(monkeypatch, 86400)
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", lease_duration_seconds=60)
    assert datetime.fromisoformat(claim["claimed_at"]) > datetime.now(UTC) + timedelta(hours=23)
