"""`anvil board`: columns by status, claims with countdowns, the review queue, waiting tasks; `--watch`
redraws a terminal in place (Rich's live display) on every change and prints once when piped."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from anvil.cli.boardview import next_refresh, render_board
from anvil.cli.render import View
from anvil.cli.tables import Screen
from anvil.cli.tables import lines as shown
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import build_scenario
from tests.conftest import anvil_subprocess_env, interruptible


def board(anvil_env: dict[str, str], **args: object) -> dict:  # type: ignore[type-arg]
    return invoke("get_board", args, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])


def test_the_board_has_a_column_per_status_claims_waiting_tasks_and_events(anvil_env: dict[str, str]) -> None:
    build_scenario("submitted", anvil_env, anvil_env["ANVIL_ROOT"])
    invoke("claim_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    result = board(anvil_env)
    screen = Screen(120, False, False)
    lines = shown(render_board(result, View(screen, {}, {})), screen)
    text = "\n".join(lines)
    assert lines[0].startswith("Demo · 9 tasks · event ")
    assert lines[2].split() == ["WAITING", "(7)", "CLAIMED", "(1)", "REVIEW", "(1)"]
    assert "T002  agent-2  2" in text or "T002  agent-2  1" in text
    assert "ends in 14m" in text or "ends in 15m" in text
    assert "Review queue (1)" in text and "T001  agent-1" in text
    assert "client_reported" in text  # what T001's proofs amount to: the implementer's own runs
    assert "T003  T001, T002  Create-link endpoint" in text
    assert "Latest events" in text and "claim.acquired" in text
    assert all(len(line) <= 120 for line in lines)


def test_a_narrow_board_lists_its_columns_as_rows(anvil_env: dict[str, str]) -> None:
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    screen = Screen(40, False, True)
    lines = shown(render_board(board(anvil_env), View(screen, {}, {})), screen)
    assert all(len(line) <= 40 for line in lines)
    assert any(line.startswith("waiting") for line in lines) and any(line.startswith("claimed") for line in lines)


def test_the_board_waits_for_the_next_change_and_answers_at_once_when_behind(anvil_env: dict[str, str]) -> None:
    import threading

    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    head = board(anvil_env)["head"]
    started = time.monotonic()
    assert board(anvil_env, after_seq=head - 1, wait_seconds=60)["head"] == head
    assert time.monotonic() - started < 60  # answered before its wait ran out
    answer: dict[str, int] = {}
    waiter = threading.Thread(target=lambda: answer.update(head=board(anvil_env, after_seq=head,
                                                                      wait_seconds=120)["head"]))
    waiter.start()
    invoke("claim_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
    waiter.join(60)
    assert answer.get("head", 0) > head


def test_countdowns_refresh_every_second_only_near_a_lease_end() -> None:
    base = {"now": "2026-01-01T00:00:00.000+00:00", "claims": []}
    assert next_refresh(base) == 15.0
    soon = {**base, "claims": [{"lease_expires_at": "2026-01-01T00:01:00.000+00:00"}]}
    assert next_refresh(soon) == 1.0


def test_board_watch_piped_prints_the_board_once(cli, anvil_env) -> None:  # type: ignore[no-untyped-def]
    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    result = cli("board", "--watch")
    assert result.code == 0 and result.stdout.count("Demo · 9 tasks") == 1 and "\x1b" not in result.stdout


def _read_until(fd: int, needle: bytes, seen: bytearray, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while needle not in seen:
        assert time.monotonic() < deadline, seen[-400:]
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen.extend(os.read(fd, 65536))
            except OSError:
                return


def test_board_watch_on_a_terminal_redraws_when_the_state_changes(anvil_env: dict[str, str]) -> None:
    import pty

    build_scenario("claimed", anvil_env, anvil_env["ANVIL_ROOT"])
    head = board(anvil_env)["head"]
    controller, terminal = pty.openpty()
    env = {**anvil_subprocess_env(anvil_env), "COLUMNS": "120", "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, "-m", "anvil", "board", "--watch"], env=env, stdin=terminal,
                               stdout=terminal, stderr=terminal, cwd=anvil_env["ANVIL_ROOT"],
                               preexec_fn=interruptible)
    os.close(terminal)
    seen = bytearray()
    try:
        _read_until(controller, f"event {head} ".encode(), seen)
        invoke("claim_task", {"task_id": "T002", "actor": "agent-2"}, env=anvil_env, cwd=anvil_env["ANVIL_ROOT"])
        _read_until(controller, f"event {head + 1} ".encode(), seen)  # redrawn by the write
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130  # interrupted, like every other anvil command
    finally:
        process.kill()
        process.wait()
        os.close(controller)
    assert b"\x1b[?25l" in seen and b"\x1b[2K" in seen and b"CLAIMED (2)" in seen  # Rich's live display redrew it
