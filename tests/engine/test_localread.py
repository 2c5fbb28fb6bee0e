"""The one reader of caller-named files: regular files only, never more than the limit, never blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil.engine.errors import NotFound, UsageError
from anvil.engine.localread import FileTooLarge, NotRegularFile, read_named_file, read_regular_file


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"x" * 100)
    assert read_regular_file(target, 100) == b"x" * 100


def test_a_regular_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"x" * 101)
    with pytest.raises(FileTooLarge) as info:
        read_regular_file(target, 100)
    assert (info.value.size, info.value.limit) == (101, 100)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_is_refused_without_being_read(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} is not on this machine")
    with pytest.raises(NotRegularFile) as info:
        read_regular_file(device, 1 << 20)
    assert info.value.kind == "a character device"


def test_a_fifo_is_refused_without_blocking_on_its_open(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # nobody writes: a blocking open would never return
    with pytest.raises(NotRegularFile) as info:
        read_regular_file(fifo, 1 << 20)
    assert info.value.kind == "a FIFO"


def test_a_symlink_to_a_device_is_refused_and_one_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "real.txt").write_bytes(b"ok")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    with pytest.raises(NotRegularFile):
        read_regular_file(tmp_path / "zero", 1 << 20)
    assert read_regular_file(tmp_path / "link.txt", 10) == b"ok"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        read_named_file(tmp_path, 10, "--proof")
    assert (info.value.code, info.value.details["kind"]) == ("local_file_not_regular", "a directory")


@pytest.mark.parametrize(("name", "code"), [("missing.txt", "local_file_missing"), ("nul\0name", "invalid_input"),
                                            ("x" * 300, "invalid_input")])
def test_names_that_cannot_be_read_fail_with_clear_codes(tmp_path: Path, name: str, code: str) -> None:
    with pytest.raises((NotFound, UsageError)) as info:
        read_named_file(str(tmp_path / name), 10, "--proof")
    assert info.value.code == code  # type: ignore[union-attr]
