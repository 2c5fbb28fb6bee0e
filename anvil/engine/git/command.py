"""Running ``git``: argv only (never a shell), a timeout on every call, bounded error text.

Commands that only read pass ``GIT_OPTIONAL_LOCKS=0`` so they never take the index lock; commands
that write are retried for a short while when another git process holds a lock file of the
repository, so several agents working in one repository at once never fail on ``index.lock``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from anvil.engine.errors import Refused, UsageError

TIMEOUT_SECONDS = 60.0
LOCK_RETRY_SECONDS = 20.0
_LOCK_MARKERS = (".lock': File exists", "index.lock", "Unable to create", "cannot lock ref", "could not lock")


COMMIT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
"""A full commit (or tree) id: SHA-1 (40 hex digits) or SHA-256 (64), lower case."""

_REDIRECTS = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                        "GIT_NAMESPACE", "GIT_PREFIX"})


class GitError(Exception):
    """A git command failed: ``args`` (first words), its exit status and the first line of stderr."""

    def __init__(self, args: list[str], status: int, stderr: str):
        self.git_args, self.status = args, status
        first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
        self.first_line = first[:300]
        super().__init__(f"git {' '.join(args[:2])} failed ({status}): {self.first_line}")


def _env(read_only: bool) -> dict[str, str]:
    # Variables that point git at another repository than the one in ``cwd`` (a hook's environment).
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANG="C")
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def git(args: list[str], cwd: str | Path, *, read_only: bool = False, timeout: float = TIMEOUT_SECONDS) -> str:
    """Run ``git ARGS`` in ``cwd`` and return its stdout.

    Raises:
        GitError: git exited non-zero (after retrying lock contention on writes).
        UsageError: ``git_unavailable`` when the git command cannot be run at all.
        Refused: ``git_timeout`` when git did not finish within ``timeout`` seconds.
    """
    deadline = time.monotonic() + LOCK_RETRY_SECONDS
    delay = 0.02
    while True:
        try:
            proc = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                                  env=_env(read_only), stdin=subprocess.DEVNULL, check=False)
        except FileNotFoundError:
            raise UsageError("the git command is not installed or not on PATH; install git, or claim with "
                             "--git-mode off", code="git_unavailable") from None
        except subprocess.TimeoutExpired:
            raise Refused(f"git {' '.join(args[:2])} did not finish within {timeout:.0f} s",
                          code="git_timeout") from None
        if proc.returncode == 0:
            return proc.stdout
        contended = not read_only and any(marker in proc.stderr for marker in _LOCK_MARKERS)
        if not contended or time.monotonic() + delay > deadline:
            raise GitError(args, proc.returncode, proc.stderr)
        time.sleep(delay)  # another git process holds a lock of this repository: wait and retry
        delay = min(delay * 2, 0.5)


def find_checkout(start: str | Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a directory or a file), or None.

    A cheap test without running git, so a claim outside any repository costs nothing.
    """
    here = Path(start).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
