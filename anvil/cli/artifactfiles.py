"""Inputs naming local artifact files: the CLI reads them and sends their bytes base64-encoded.

An operation lists them in its registry entry (``base64_files``: path field -> base64 field).
Reading on the caller's side means ``anvil submit --proof FILE`` and ``anvil progress
--attestation-file FILE`` work the same direct, over stdio and against a remote server.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from anvil.engine.errors import UsageError
from anvil.ops.contract import OpSpec

MAX_FILE_BYTES = 65536


def read_base64_files(op: OpSpec, args: dict[str, Any], cwd: str) -> dict[str, Any]:
    """``args`` with each named file read into its base64 field (the path field cleared).

    Raises:
        UsageError: both a file and its content were given, a file is over the artifact limit
            (``proof_oversized``) or is not a regular file (``local_file_not_regular``).
        NotFound: ``local_file_missing`` when a file cannot be read.
    """
    out = dict(args)
    for path_field, content_field in op.base64_files:
        names = out.get(path_field)
        if not names:
            continue
        flag, content_flag = op.param(path_field).flag, op.param(content_field).flag
        if out.get(content_field):
            raise UsageError(f"pass either {flag} or {content_flag}, not both", code="invalid_input")
        encoded = [_read(Path(cwd, name).expanduser(), flag) for name in (names if isinstance(names, list)
                                                                           else [names])]
        out[content_field] = encoded if isinstance(names, list) else encoded[0]
        out[path_field] = None
    return out


def _read(path: Path, flag: str) -> str:
    from anvil.engine.localread import read_named_file

    data = read_named_file(path, MAX_FILE_BYTES, flag, "artifact")
    return base64.b64encode(data).decode("ascii")
