"""Running a command for a proof: argv only (no shell), bounded output kept, bound to a claim."""

from __future__ import annotations

import hashlib
import os
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from anvil.engine.errors import UsageError
from anvil.engine.proof.artifacts import EXCERPT_BYTES, excerpt

CHUNK = 65536


def binding(claim: dict[str, Any]) -> dict[str, Any]:
    """The fields every artifact of ``claim`` (a claim as operations return it) carries."""
    context = claim.get("attestation_context") or {}
    return {"task_id": claim["task_id"], "claim_id": claim["id"], "generation": claim["generation"],
            "owner": claim["claimed_by"], "task_revision": claim["task_revision"],
            "prd_revision": claim["prd_revision"], "repository_id": context.get("repository_id"),
            "nonce": secrets.token_hex(16)}


SECRET_VARIABLES = ("ANVIL_SIGNING_KEY",)
"""Never passed to the proved command: its output is kept in the artifact and the event log."""


def run_proof(claim: dict[str, Any], argv: list[str], cwd: Path, *, timeout: float = 3600.0,
              echo: Callable[[bytes], None] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` in ``cwd`` (with environment ``env``, default this process's) and return the
    proof body bound to ``claim``.

    Output (stdout and stderr together) is hashed whole and its last 4 KiB kept; ``echo``, when
    given, receives each chunk as it arrives (the CLI passes it to the terminal). A run past ``timeout`` is killed with
    its children. The signing key (``SECRET_VARIABLES``) is never passed to the command.

    Raises:
        UsageError: ``command_not_found`` when the command cannot be started.
    """
    from anvil.engine.storage.store import format_ts, system_clock
    from anvil.engine.work.continuation import argv_command

    started = format_ts(system_clock())
    began = time.monotonic()
    digest, size, tail = hashlib.sha256(), 0, b""
    child_env = {name: value for name, value in (os.environ if env is None else env).items()
                 if name not in SECRET_VARIABLES}
    try:
        # Its own process group, so a timeout or an interruption stops the command and its children
        # (a child left holding the output pipe would keep the run open).
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env, start_new_session=True)
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        raise UsageError(f"cannot start the command: {argv[0][:200]}", code="command_not_found") from None
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    try:
        while True:
            remaining = timeout - (time.monotonic() - began)
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                _stop(proc)  # past the timeout: the run fails (killed, exit -9)
                break
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
            tail = (tail + chunk)[-EXCERPT_BYTES:]
            if echo is not None:
                echo(chunk)
        code = proc.wait()
    except BaseException:
        _stop(proc)
        raise
    finally:
        proc.stdout.close()
    return {**binding(claim), "cwd": str(cwd), "argv": list(argv), "command": argv_command(list(argv)),
            "exit_code": code, "duration_ms": int((time.monotonic() - began) * 1000), "started_at": started,
            "output_sha256": digest.hexdigest(), "output_bytes": size, "output_excerpt": excerpt(tail)}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command's process group and reap the command."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


RUN_FIELDS = ("cwd", "argv", "command", "exit_code", "duration_ms", "started_at", "output_sha256", "output_bytes",
              "output_excerpt")
_UNBOUND = {"task_id": "", "id": "", "generation": 0, "claimed_by": "", "task_revision": None, "prd_revision": None}


def run_command(argv: list[str], cwd: Path, *, timeout: float = 3600.0, echo: Callable[[bytes], None] | None = None,
                env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` in ``cwd`` exactly as :func:`run_proof` does (argv only, its own process group,
    stdin closed, timeout, bounded output, anvil's secrets kept out), for a run bound to no claim
    (``anvil verify-task``); returns what the run was (:data:`RUN_FIELDS`).

    Raises:
        UsageError: ``command_not_found`` when the command cannot be started.
    """
    body = run_proof(_UNBOUND, argv, cwd, timeout=timeout, echo=echo, env=env)
    return {name: body[name] for name in RUN_FIELDS}
