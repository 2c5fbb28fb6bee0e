"""The exact commands that continue a claim: prove each verification command, attest, commit, submit.

A claim result (and the work packet) carries them so an agent never has to guess a flag: each
verification command becomes an ``anvil proof run`` argv whose artifact lands at a predictable
path, and the submit argv names those artifacts.
"""

from __future__ import annotations

import hashlib
import shlex
from functools import lru_cache
from typing import Any

from anvil.engine.prd.commands import command_problem

PROOF_DIR = ".anvil/proofs"
"""Where ``anvil proof run`` writes artifacts by default, relative to the claim's tree (git ignores it:
the directory holds a ``.gitignore`` of ``*``)."""
_SHELL_SYNTAX = frozenset("|&;<>()$`*?")


COMMAND_CACHE_SIZE = 4096
COMMAND_CACHE_MAX_LENGTH = 1024
"""The parsing below remembers up to ``COMMAND_CACHE_SIZE`` distinct commands of at most this many
characters per process (longer ones are parsed each time, so the memory stays small). A claim, a
submission and a review each spell the same few verification commands several times, and ``shlex``
is slow; the answers depend on the text alone, so a remembered one is always right."""


def command_argv(command: str) -> list[str]:
    """The argv that runs verification ``command``: its words, or ``sh -c`` when it needs a shell."""
    if len(command) > COMMAND_CACHE_MAX_LENGTH:
        return list(_parse_argv(command))
    return list(_remembered_argv(command))


def normal_command(command: str) -> str:
    """One spelling per command: its words re-joined (so extra spaces or quoting styles still match)."""
    if len(command) > COMMAND_CACHE_MAX_LENGTH:
        return _normalise(command)
    return _remembered_normal(command)


def _parse_argv(command: str) -> tuple[str, ...]:
    try:
        words = shlex.split(command)
    except ValueError:
        return ("sh", "-c", command)
    needs_shell = any(set(word) & _SHELL_SYNTAX or word[:1] in ("~", "#") for word in words)
    if not words or needs_shell or "=" in words[0]:
        return ("sh", "-c", command)
    return tuple(words)


def _normalise(command: str) -> str:
    try:
        return shlex.join(shlex.split(command))
    except ValueError:
        return " ".join(command.split())


_remembered_argv = lru_cache(maxsize=COMMAND_CACHE_SIZE)(_parse_argv)
_remembered_normal = lru_cache(maxsize=COMMAND_CACHE_SIZE)(_normalise)


def argv_command(argv: list[str]) -> str:
    """The command an argv proves: ``sh -c X`` (or bash) proves ``X``; otherwise the joined words."""
    if len(argv) == 3 and argv[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and argv[1] == "-c":
        return normal_command(argv[2])
    return shlex.join(argv)


def proof_file(task_id: str, generation: int, command: str) -> str:
    """The default artifact path of a proof of ``command`` (relative to the claim's tree)."""
    digest = hashlib.sha256(normal_command(command).encode("utf-8")).hexdigest()[:12]
    return f"{PROOF_DIR}/{task_id.lower()}-g{generation}-{digest}.json"


def continuation(task: dict[str, Any], claim: dict[str, Any], commands: list[str] | None = None) -> dict[str, Any]:
    """The next commands for ``claim`` on ``task``: a proof of each of ``commands`` (the evidence
    contract's commands; default: the task's verification commands), the commit and the submission."""
    task_id, generation, actor = claim["task_id"], claim["generation"], claim["actor"]
    git = claim.get("git")
    fence = ["--generation", str(generation), "--actor", actor]
    # A verification entry no proof can run (a sentence, an unbalanced quote) is not offered as a
    # command; it is listed instead (the readiness gate keeps new such tasks from being claimed).
    commands = list(task.get("verification", []) if commands is None else commands)
    unprovable = [command for command in commands if command_problem(command) is not None]
    prove = [{"command": command, "artifact": proof_file(task_id, generation, command),
              "argv": ["anvil", "proof", "run", task_id, *fence, "--", *command_argv(command)]}
             for command in commands if command not in unprovable]
    submit = ["anvil", "submit", task_id, *fence]
    for step in prove:
        submit += ["--proof", step["artifact"]]
    if not prove:
        submit += ["--command", "<command you ran>"]
    out: dict[str, Any] = {"cd": git["target_path"] if git else None, "prove": prove,
                           "attest_progress": None, "commit": None, "submit": submit,
                           "renew": ["anvil", "renew", task_id, *fence], "unprovable": unprovable}
    if git is not None:
        # The submission hands in the claim branch's head: commit the work first (`git add` new files).
        out["commit"] = ["git", "commit", "-am", f"{task_id}: {task.get('title') or 'work'}"]
        artifact = f"{PROOF_DIR}/{task_id.lower()}-g{generation}-attestation.json"
        out["attest_progress"] = [["anvil", "attest", task_id, *fence, "--out", artifact],
                                  ["anvil", "progress", task_id, *fence, "--attestation-file", artifact]]
    return out
