"""Running a command for a proof: argv only (no shell), bounded output kept, bound to a claim."""

from __future__ import annotations

import hashlib
import os
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
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


SECRET_PREFIXES = ("ANVIL_",)
SECRET_NAMES = frozenset({"PGPASSWORD", "PGPASSFILE", "DATABASE_URL", "MCP_TOKEN"})
"""Never passed to a proved or verified command (its output is kept in the artifact and from there
in the append-only event log, and the code under test is the implementer's): anvil's own variables
(the state's location and database URL, the signing key, the token variable's name) and database
credentials. The variable holding the caller's bearer token (named by ``--mcp-token-env``) is
dropped too."""
SECRET_VALUE_NAMES = ("PGPASSWORD", "ANVIL_SIGNING_KEY", "ANVIL_DATABASE_URL", "DATABASE_URL", "MCP_TOKEN")
"""Variables whose values (and the passwords of URLs among them) are redacted from recorded output."""
REDACTED = b"[redacted]"
MIN_SECRET_BYTES = 8  # shorter values would redact ordinary words


def _token_variables(env: Mapping[str, str], token_env: str | None) -> set[str]:
    """The variables that may hold the caller's bearer token: ``token_env`` and the one
    ``ANVIL_MCP_TOKEN_ENV`` names (which also routes calls that give no ``--mcp-token-env``)."""
    return {name for name in (token_env, env.get("ANVIL_MCP_TOKEN_ENV", "").strip()) if name}


def command_environment(env: Mapping[str, str], token_env: str | None) -> dict[str, str]:
    """What a proved or verified command runs with: ``env`` without :data:`SECRET_PREFIXES`,
    :data:`SECRET_NAMES` and the variables holding the bearer token (``token_env``, and the one
    ``ANVIL_MCP_TOKEN_ENV`` names)."""
    tokens = _token_variables(env, token_env)
    return {name: value for name, value in env.items()
            if not name.startswith(SECRET_PREFIXES) and name not in SECRET_NAMES and name not in tokens}


def known_secrets(env: Mapping[str, str], token_env: str | None, extra: Sequence[str] = ()) -> list[str]:
    """Every secret value anvil knows of in ``env`` (the bearer token, passwords, database URLs and
    their passwords, the signing key) and ``extra``, longest first: redacted from anything recorded."""
    from urllib.parse import unquote, urlsplit

    values = [env.get(name, "") for name in (*_token_variables(env, token_env), *SECRET_VALUE_NAMES)]
    values += list(extra)
    for url in (env.get("ANVIL_DATABASE_URL", ""), env.get("DATABASE_URL", "")):
        try:
            password = urlsplit(url.strip()).password
        except ValueError:
            password = None
        if password:
            values += [password, unquote(password)]
    found = {v.strip() for v in values if len(v.strip().encode("utf-8", "surrogateescape")) >= MIN_SECRET_BYTES}
    return sorted(found, key=len, reverse=True)


def redact(data: bytes, secrets_: Sequence[str]) -> bytes:
    """``data`` with every value of ``secrets_`` replaced by ``[redacted]``."""
    for value in secrets_:
        data = data.replace(value.encode("utf-8", "surrogateescape"), REDACTED)
    return data


def run_proof(claim: dict[str, Any], argv: list[str], cwd: Path, *, timeout: float = 3600.0,
              echo: Callable[[bytes], None] | None = None, env: Mapping[str, str] | None = None,
              token_env: str | None = None, secrets_: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``argv`` in ``cwd`` and return the proof body bound to ``claim``.

    The command runs with ``env`` (default this process's) reduced by :func:`command_environment`;
    ``token_env`` names the variable holding the caller's bearer token. Output (stdout and stderr
    together) is hashed whole and its last 4 KiB kept, with every :func:`known_secrets` value (and
    ``secrets_``) redacted; ``echo``, when given, receives each chunk as it arrives (the CLI passes it
    to the terminal). A run past ``timeout`` is killed with its children.

    Raises:
        UsageError: ``command_not_found`` when the command cannot be started.
    """
    from anvil.engine.storage.store import format_ts, system_clock
    from anvil.engine.work.continuation import argv_command

    started = format_ts(system_clock())
    began = time.monotonic()
    digest, size, tail = hashlib.sha256(), 0, b""
    source = os.environ if env is None else env
    child_env = command_environment(source, token_env)
    hidden = known_secrets(source, token_env, secrets_)
    # Keep enough before the excerpt that a secret cut by its start is still whole when redacted.
    kept = EXCERPT_BYTES + max((len(v.encode("utf-8", "surrogateescape")) for v in hidden), default=0)
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
            tail = (tail + chunk)[-kept:]
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
            "output_sha256": digest.hexdigest(), "output_bytes": size,
            "output_excerpt": excerpt(redact(tail, hidden))}


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
                env: Mapping[str, str] | None = None, token_env: str | None = None) -> dict[str, Any]:
    """Run ``argv`` in ``cwd`` exactly as :func:`run_proof` does (argv only, its own process group,
    stdin closed, timeout, bounded output, anvil's secrets kept out), for a run bound to no claim
    (``anvil verify-task``); returns what the run was (:data:`RUN_FIELDS`).

    Raises:
        UsageError: ``command_not_found`` when the command cannot be started.
    """
    body = run_proof(_UNBOUND, argv, cwd, timeout=timeout, echo=echo, env=env, token_env=token_env)
    return {name: body[name] for name in RUN_FIELDS}
