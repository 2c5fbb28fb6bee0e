"""Inputs that name a local file: the CLI reads the file and sends its text instead of the path.

An operation lists such inputs in its registry entry (``local_files``: path field -> content field).
Reading on the caller's side means the same command works direct, over stdio and against a remote
server, and that any file the caller can read is accepted (a spec kept outside the project, a
linked worktree). A path that reaches a server is resolved by the server, inside the project it
serves, so a deployed server never reads its host's other files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from anvil.engine.errors import UsageError
from anvil.ops.contract import OpSpec


def read_local_files(op: OpSpec, args: dict[str, Any], cwd: str, env: Mapping[str, str] | None = None
                     ) -> dict[str, Any]:
    """``args`` with each named local file read into its content field (the path field cleared).

    When the operation also takes ``<content field>_path`` (``source_path``), it gets where the text
    came from: the path relative to the project root, or an absolute path outside it.

    Raises:
        UsageError: both the file and its content were given, the file is over the content field's
            size bound, or it is not UTF-8 text.
        NotFound: the file does not exist or cannot be read.
        UsageError: ``local_file_not_regular``: the path names a device, FIFO, socket or directory.
    """
    if not op.local_files:
        return args
    out = dict(args)
    for path_field, content_field in op.local_files:
        name = out.get(path_field)
        if not name:
            continue
        path_param, content_param = op.param(path_field), op.param(content_field)
        if out.get(content_field) is not None:
            raise UsageError(f"pass either {path_param.flag} or {content_param.flag}, not both", code="invalid_input")
        path = Path(cwd, name).expanduser()
        out[content_field] = _read_text(path, path_param.flag, content_param.max_len)
        out[path_field] = None
        if any(p.name == f"{content_field}_path" for p in op.params):
            out[f"{content_field}_path"] = _shown_path(path, env or {})  # remembered by the server
    return out


def _shown_path(path: Path, env: Mapping[str, str]) -> str:
    """``path`` relative to the project root when it lies inside it, else absolute."""
    from anvil.engine.storage.paths import project_root

    resolved = path.resolve()
    try:
        return resolved.relative_to(project_root(env, path.parent)).as_posix()
    except ValueError:
        return str(resolved)


def _read_text(path: Path, flag: str, max_bytes: int | None) -> str:
    from anvil.engine.localread import read_named_file

    # A content field always has a bound; the fallback only keeps an unbounded one from reading forever.
    data = read_named_file(path, max_bytes if max_bytes is not None else 1 << 24, flag)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{flag}: the file is not UTF-8 text (first invalid byte at offset {exc.start})",
                         code="local_file_not_utf8", details={"offset": exc.start}) from None
