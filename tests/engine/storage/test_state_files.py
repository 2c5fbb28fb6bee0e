"""State files that cannot be read or written: reads keep working, writes fail with exit 8 naming
the file and the cause, nothing acknowledged is lost, and verify passes again once it is fixed.

The full-disk and read-only cases use a small tmpfs mounted for the test (root only; CI runs as
root); they are skipped with the reason where the machine does not allow mounting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import anvil_json
from tests.ops.support import event_types, scenario, store_of

READS = (["status"], ["summary"], ["next"], ["list"], ["show", "T001"], ["graph"])


def cli(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    return anvil_json(env, *args)


def log_path(env: dict[str, str]) -> Path:
    with store_of(env) as store:
        return store.location.log_path


def assert_reads_work(env: dict[str, str]) -> None:
    for args in READS:
        code, document = cli(env, *args)
        assert code == 0, (args, document)


def assert_write_refused(env: dict[str, str], codes: set[str], cause: str) -> None:
    before = event_types(env)
    code, document = cli(env, "claim", "T002", "--actor", "agent-2")
    assert code == 8 and document["error"]["code"] in codes, document
    message = document["error"]["message"]
    assert cause.lower() in message.lower(), message
    assert event_types(env) == before, "nothing was committed"


def test_an_events_log_replaced_by_a_directory_blocks_writes_not_reads(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    log = log_path(anvil_env)
    kept = log.with_name("kept.jsonl")
    log.rename(kept)
    log.mkdir()
    try:
        assert_reads_work(anvil_env)
        assert_write_refused(anvil_env, {"mirror_unreadable", "mirror_unwritable"}, "is a directory")
        code, report = cli(anvil_env, "verify")
        assert code == 8 and not report["ok"] and any("events.jsonl" in p for p in report["problems"]), report
    finally:
        log.rmdir()
        kept.rename(log)
    assert cli(anvil_env, "verify")[1]["ok"]
    assert cli(anvil_env, "claim", "T002", "--actor", "agent-2")[0] == 0
    assert cli(anvil_env, "verify")[1]["ok"]


def test_an_immutable_events_log_blocks_writes_not_reads(anvil_env: dict[str, str]) -> None:
    scenario(anvil_env, "claimed")
    log = log_path(anvil_env)
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "+i", str(log)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"this file system cannot make files immutable ({made.stderr.strip()[:80]})")
    try:
        assert_reads_work(anvil_env)
        assert_write_refused(anvil_env, {"mirror_unwritable"}, "not permitted")
        assert cli(anvil_env, "verify")[1]["ok"], "an immutable log is still a sound log"
    finally:
        subprocess.run(["chattr", "-i", str(log)], check=True)
    assert cli(anvil_env, "claim", "T002", "--actor", "agent-2")[0] == 0
    assert cli(anvil_env, "verify")[1]["ok"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        pytest.skip(f"this machine does not allow mounting a tmpfs ({made.stderr.strip()[:80]})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def on_disk(anvil_env: dict[str, str], disk: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("ANVIL_HOME", str(disk / "home"))
    env = {**anvil_env, "ANVIL_HOME": str(disk / "home")}
    scenario(env, "claimed")
    return env


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_blocks_writes_not_reads_and_loses_nothing(anvil_env: dict[str, str], small_disk: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    env = on_disk(anvil_env, small_disk, monkeypatch)
    before = event_types(env)
    filler = fill(small_disk)
    assert_reads_work(env)
    assert_write_refused(env, {"disk_full", "mirror_unwritable"}, "full")
    code, report = cli(env, "verify")
    assert code == 0 and report["ok"], report
    filler.unlink()
    assert event_types(env) == before, "every acknowledged write is still there"
    assert cli(env, "claim", "T002", "--actor", "agent-2")[0] == 0
    assert cli(env, "verify")[1]["ok"]


def test_a_read_only_state_directory_blocks_writes_not_reads(anvil_env: dict[str, str], small_disk: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    env = on_disk(anvil_env, small_disk, monkeypatch)
    before = event_types(env)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        assert_reads_work(env)
        code, document = cli(env, "claim", "T002", "--actor", "agent-2")
        assert code == 8 and document["error"]["code"] in {"state_read_only", "state_unavailable", "state_io_error",
                                                             "mirror_unwritable"}, document
        assert cli(env, "verify")[1]["ok"]
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert event_types(env) == before
    assert cli(env, "claim", "T002", "--actor", "agent-2")[0] == 0
    assert cli(env, "verify")[1]["ok"]
