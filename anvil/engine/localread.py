"""The one reader for files a caller names: bounded, regular files only, never blocking.

Every file anvil reads because a caller named it (``--file``, ``--proof``, ``--attestation-file``, a
PRD source, a remembered spec) goes through :func:`read_regular_file`. A path is only a name the
caller chose: it may be ``/dev/zero`` (endless), ``/dev/urandom``, a FIFO (a blocking open, then a
read that never ends) or a symlink inside the project to any of these. So the file is checked
before it is opened (``stat`` follows links: a link to a device is refused there), opened with
``O_NONBLOCK`` (a FIFO's open returns at once) and ``O_NOCTTY``, checked again on the descriptor
(``fstat``: the thing actually opened, whatever was swapped in between) and read for at most
``limit + 1`` bytes, so a file that grows while it is read is still refused as too large.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal

from anvil.engine.errors import NotFound, UsageError

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 16


class FileTooLarge(Exception):
    """The file holds more than the limit; ``size`` is what was seen (at least ``limit + 1``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes; the limit is {limit} bytes")
        self.size = size
        self.limit = limit


class NotRegularFile(Exception):
    """The path names a device, FIFO, socket or directory, not a regular file; ``kind`` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def file_kind(mode: int) -> str:
    """A short name for the type of file ``mode`` describes (for error messages)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path``, refusing anything else and anything over ``limit``.

    Raises:
        FileNotFoundError: nothing is at ``path`` (also a dangling symlink).
        NotRegularFile: ``path`` (after symlinks) is not a regular file.
        FileTooLarge: the file holds more than ``limit`` bytes.
        OSError: the file cannot be opened or read (permissions, I/O error).
    """
    before = os.stat(path)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(file_kind(before.st_mode))
    if before.st_size > limit:
        raise FileTooLarge(before.st_size, limit)
    fd = os.open(path, _FLAGS)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped between the stat and the open
            raise NotRegularFile(file_kind(opened.st_mode))
        chunks: list[bytes] = []
        held = 0
        while held <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - held))
            if not chunk:
                break
            chunks.append(chunk)
            held += len(chunk)
    finally:
        os.close(fd)
    if held > limit:
        raise FileTooLarge(max(held, opened.st_size), limit)
    return b"".join(chunks)


Purpose = Literal["local", "artifact", "prd"]
"""What a named file is for, which picks its codes: a CLI input (``local_file_*``), a proof or
attestation artifact (``proof_oversized``), a PRD source (``prd_too_large``, ``prd_source_missing``)."""


def read_named_file(path: str | os.PathLike[str], limit: int, flag: str, purpose: Purpose = "local") -> bytes:
    """:func:`read_regular_file` for a file a caller named with ``flag``, failing with anvil's error codes.

    Raises:
        NotFound: ``local_file_missing`` (``prd_source_missing`` for a PRD) when nothing readable is there.
        UsageError: ``local_file_not_regular`` for a device, FIFO, socket or directory; over ``limit``,
            ``local_file_too_large`` (``proof_oversized`` for an artifact, ``prd_too_large`` for a PRD);
            ``invalid_input`` for a name the system cannot take (a NUL byte, too long).
    """
    shown = str(path)[:200]
    try:
        return read_regular_file(path, limit)
    except NotRegularFile as exc:
        raise UsageError(f"{flag}: {shown} is {exc.kind}, not a regular file", code="local_file_not_regular",
                         details={"kind": exc.kind}) from None
    except FileTooLarge as exc:
        message, details = f"{flag}: the file is {exc.size} bytes; the limit is {limit} bytes", \
            {"size": exc.size, "limit": limit}
        if purpose == "artifact":
            raise UsageError(message, code="proof_oversized", details=details) from None
        if purpose == "prd":
            raise UsageError(message, code="prd_too_large", details=details) from None
        raise UsageError(message, code="local_file_too_large", details=details) from None
    except ValueError:  # an embedded NUL byte
        raise UsageError(f"{flag}: the file name holds a NUL byte", code="invalid_input") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise UsageError(f"{flag}: the file name is too long for this system", code="invalid_input") from None
        if purpose == "prd":
            raise NotFound(f"{flag}: no readable file at {shown}", code="prd_source_missing") from None
        raise NotFound(f"{flag}: no readable file at {shown}", code="local_file_missing") from None


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` (after symlinks) is a regular file; False when it cannot be looked at."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
