"""The ``events.jsonl`` mirror: one canonical JSON line per committed event.

Lines are separated by ``\\n`` (byte 0x0A) and by nothing else: canonical JSON keeps text as it
is, so a line may hold U+2028, U+2029 or U+0085, which generic "split lines" helpers treat as
line breaks. Every reader here splits bytes on ``b"\\n"`` only.

The mirror is appended after the database commits (under the writer lock) and caught up from the
database whenever it is behind. Failures to read or write it are state errors naming the file and
the cause, so a full disk, an immutable file or a directory in its place is reported, not a bug.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from anvil.engine.errors import StateIncompatible
from anvil.engine.storage.canonical import canonical_json

SPACE_MARGIN = 64 * 1024  # free bytes to keep beyond an append before committing
_CHUNK = 65536


def encode(events: Iterable[Any]) -> bytes:
    """The mirror lines of ``events`` (objects with ``to_dict()``), newline-terminated."""
    return "".join(canonical_json(e.to_dict()) + "\n" for e in events).encode("utf-8")


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines of ``data`` (split on ``b"\\n"`` only) and the unterminated rest."""
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def unwritable(path: Path, exc: OSError) -> StateIncompatible:
    return StateIncompatible(f"{path} cannot be written ({_reason(exc)}); nothing was written: free space or fix "
                             "the file, then retry (`anvil verify` checks the state)", code="mirror_unwritable",
                             details={"file": str(path), "errno": exc.errno})


def unreadable(path: Path, exc: OSError) -> StateIncompatible:
    return StateIncompatible(f"{path} cannot be read ({_reason(exc)}): fix the file, then retry",
                             code="mirror_unreadable", details={"file": str(path), "errno": exc.errno})


def _last_newline_before(handle: IO[bytes], end: int) -> int:
    """Offset of the last newline before ``end`` (-1 when there is none), reading backwards."""
    position = end
    while position > 0:
        start = max(0, position - _CHUNK)
        handle.seek(start)
        found = handle.read(position - start).rfind(b"\n")
        if found >= 0:
            return start + found
        position = start
    return -1


def _line_seq(line: bytes) -> int:
    record = json.loads(line.decode("utf-8"))
    seq = record["seq"]
    if not isinstance(seq, int):
        raise TypeError("seq")
    return seq


def tail_seq(path: Path, *, repair: bool) -> int:
    """Sequence number of the mirror's last complete line (0 when it is empty or missing).

    A torn final line (a crash mid-append) is cut off when ``repair`` is set, which callers do only
    while holding the writer lock; without it a torn line reads as -1 (unknown), since a writer
    may be appending it right now.

    Raises:
        StateIncompatible: the file cannot be read (``mirror_unreadable``) or its final line is not
            an event (``mirror_corrupt``).
    """
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                if not repair:
                    return -1
                size = _last_newline_before(handle, size) + 1
                _truncate(path, size)
                if size == 0:
                    return 0
            start = _last_newline_before(handle, size - 1) + 1
            handle.seek(start)
            return _line_seq(handle.read(size - 1 - start))
    except FileNotFoundError:
        return 0
    except StateIncompatible:
        raise
    except OSError as exc:
        raise unreadable(path, exc) from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise StateIncompatible(f"{path} has an unreadable final line: run `anvil verify`", code="mirror_corrupt",
                                details={"file": str(path)}) from exc


def _truncate(path: Path, size: int) -> None:
    """Cut a torn final line off (the caller holds the writer lock).

    Raises:
        StateIncompatible: ``mirror_unwritable``.
    """
    try:
        os.truncate(path, size)
    except OSError as exc:
        raise unwritable(path, exc) from exc


def ahead(path: Path, tail: int, head: int) -> StateIncompatible:
    return StateIncompatible(
        f"{path} holds events up to {tail} but the database only up to {head} (was state.db restored from a "
        "backup?): run `anvil rebuild --yes` to rebuild the database from the log", code="mirror_ahead",
        details={"mirror_seq": tail, "database_seq": head})


def open_for_append(path: Path, need: int) -> IO[bytes]:
    """Open the mirror for appending ``need`` bytes, refusing before anything is committed when
    the file cannot take them (not writable, not a file, or too little free space).

    Raises:
        StateIncompatible: ``mirror_unwritable``.
    """
    try:
        handle = open(path, "ab")  # noqa: SIM115 - the caller writes and closes it after the commit
    except OSError as exc:
        raise unwritable(path, exc) from exc
    try:
        info = os.fstatvfs(handle.fileno())
        if info.f_bavail * info.f_frsize < need + SPACE_MARGIN:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    except OSError as exc:
        handle.close()
        raise unwritable(path, exc) from exc
    return handle


def write_all(handle: IO[bytes], data: bytes) -> None:
    """Append ``data`` durably and close the handle.

    Raises:
        OSError: the write or the sync failed (the handle is closed either way).
    """
    try:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    finally:
        handle.close()


def append(path: Path, data: bytes) -> None:
    """Append ``data`` to the mirror durably.

    Raises:
        StateIncompatible: ``mirror_unwritable``.
    """
    if not data:
        return
    handle = open_for_append(path, len(data))
    try:
        write_all(handle, data)
    except OSError as exc:
        raise unwritable(path, exc) from exc
