"""An entry point's boundary: every failure becomes one report and one exit code, never a traceback."""

from __future__ import annotations

import json

import pytest

from anvil.engine.errors import AnvilError, NotFound
from anvil.ops.boundary import EXIT_BROKEN_PIPE, run_guarded


def run(body, env=None):  # type: ignore[no-untyped-def]
    reported: list[AnvilError] = []

    def report(error: AnvilError) -> int:
        reported.append(error)
        return error.exit_code

    return run_guarded(body, report, env or {}), reported


def test_a_clean_run_returns_its_exit_code_and_reports_nothing() -> None:
    assert run(lambda: 3) == (3, [])


def test_an_anvil_error_is_reported_as_it_is() -> None:
    def fail() -> int:
        raise NotFound("no such task", code="task_not_found")

    code, reported = run(fail)
    assert code == 6 and [(e.code, e.message) for e in reported] == [("task_not_found", "no such task")]


def test_a_bug_is_one_internal_error_naming_only_its_type(capsys: pytest.CaptureFixture[str]) -> None:
    def bug() -> int:
        raise KeyError("secret-value")

    code, reported = run(bug)
    assert code == 1 and [e.code for e in reported] == ["internal"]
    assert "KeyError" in reported[0].message and "secret-value" not in reported[0].message
    assert capsys.readouterr().err == ""


def test_a_bug_shows_its_traceback_only_with_anvil_debug(capsys: pytest.CaptureFixture[str]) -> None:
    def bug() -> int:
        raise KeyError("details")

    code, _ = run(bug, {"ANVIL_DEBUG": "1"})
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" in err and "KeyError" in err


def test_ctrl_c_is_reported_as_interrupted_with_exit_130() -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    code, reported = run(interrupted)
    assert code == 130 and [e.code for e in reported] == ["interrupted"]


def test_a_closed_pipe_ends_quietly_even_while_reporting() -> None:
    def closed() -> int:
        raise BrokenPipeError

    assert run(closed) == (EXIT_BROKEN_PIPE, [])

    def refuse(error: AnvilError) -> int:
        raise BrokenPipeError

    def fail() -> int:
        raise NotFound("gone")

    assert run_guarded(fail, refuse, {}) == EXIT_BROKEN_PIPE


def test_item_8_a_working_directory_that_no_longer_exists_is_a_usage_error_not_a_bug(tmp_path, monkeypatch,
                                                                                       capsys) -> None:
    """Issue 24 item 8: status from a removed directory says what is wrong (exit 2, root_missing) on
    the direct route and over stdio, instead of an internal error."""
    from anvil.cli.main import main

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("ANVIL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ANVIL_ROOT", raising=False)
    for route in ([], ["--mcp", "stdio"]):
        assert main(["status", "--json", *route]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "root_missing" and "no longer exists" in error["message"]
