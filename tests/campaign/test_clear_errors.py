"""Inputs that once ended in exit 1 "internal": each must be a clear error with its own code and exit.

Every run is a real process with a timeout; bytes that are not UTF-8 go in as raw bytes, as a shell
would pass them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

from tests.campaign.support import StdioSession
from tests.conftest import ANVIL, anvil_subprocess_env


def _run(env: dict[str, str], *argv: str | bytes, python: tuple[str, ...] = tuple(ANVIL),
         **extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = subprocess.run([*python, *argv, "--json"], env={**anvil_subprocess_env(env), **extra},
                          cwd=env["ANVIL_ROOT"], capture_output=True, timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _code(doc: dict) -> str:  # type: ignore[type-arg]
    return str(doc["error"]["code"])


def test_a_cwd_with_a_nul_byte_over_stdio_is_invalid_input(anvil_env: dict[str, str]) -> None:
    with StdioSession(anvil_env) as session:
        reply = session.call("get_project_status", {"cwd": "a\u0000b"})
        assert "Traceback" not in session.close()
    assert reply["error"]["code"] == "invalid_input"


def test_a_cwd_component_over_255_bytes_is_invalid_input(anvil_env: dict[str, str]) -> None:
    for route in ([], ["--mcp", "stdio"]):
        code, doc = _run(anvil_env, "status", "--cwd", "a" * 300, *route)
        assert (code, _code(doc)) == (2, "invalid_input"), route


def test_bytes_that_are_not_utf8_in_an_argument_or_a_missing_files_name_are_clear_errors(
        anvil_env: dict[str, str]) -> None:
    assert _run(anvil_env, "init")[0] == 0
    code, doc = _run(anvil_env, "list", b"\xff")
    assert (code, _code(doc)) == (2, "usage") and "\\udcff" in doc["error"]["message"]
    code, doc = _run(anvil_env, "prd", "parse", "--file", b"bad\xffname.md")
    assert (code, _code(doc)) == (6, "local_file_missing")


@pytest.mark.parametrize("value", ["1e10", "1e300", "99999999999"])
def test_a_lock_timeout_too_large_for_the_platforms_timers_is_refused(anvil_env: dict[str, str], value: str) -> None:
    assert _run(anvil_env, "init")[0] == 0
    code, doc = _run(anvil_env, "claim-next", "--actor", "a", ANVIL_LOCK_TIMEOUT=value)
    assert (code, _code(doc)) == (2, "invalid_lock_timeout")


def test_init_on_a_volume_nobody_may_write_is_exit_8(anvil_env: dict[str, str]) -> None:
    unwritable = Path("/sys/anvil-test-home")
    try:
        unwritable.mkdir()
    except OSError:
        pass
    else:
        unwritable.rmdir()
        pytest.skip("/sys is writable here: no read-only volume to try")
    code, doc = _run(anvil_env, "init", ANVIL_HOME=str(unwritable))
    assert (code, _code(doc)) == (8, "state_dir_unwritable")


def test_a_database_url_without_the_postgresql_driver_is_exit_8(anvil_env: dict[str, str], tmp_path: Path) -> None:
    # ``python -S`` leaves site-packages (and so psycopg) out; the direct path needs only platformdirs.
    site = tmp_path / "site"
    site.mkdir()
    (site / "platformdirs").symlink_to(Path(platformdirs.__file__).parent)
    env = {**anvil_env, "PYTHONPATH": str(site), "ANVIL_DATABASE_URL": "postgresql://u@127.0.0.1:1/x"}
    for argv in (["status"], ["init"], ["list"]):
        code, doc = _run(env, *argv, python=(sys.executable, "-S", "-m", "anvil"))
        assert (code, _code(doc)) == (8, "database_driver_missing"), argv
