"""Where a project's state lives.

The project root is ``ANVIL_ROOT`` when set, else the main worktree of the git repository holding
the working directory, else the working directory itself. By default state lives in a per-project
workspace under the user data directory (``ANVIL_HOME`` overrides it), keyed by the project's name
and a hash of its root, so every worktree of a repository shares one state.
``ANVIL_STATE_LAYOUT=local`` keeps it in ``<root>/.anvil/`` instead.

``ANVIL_DATABASE_URL=postgresql://...`` keeps the project's log and projection in that PostgreSQL
database instead of ``state.db``; the state directory then holds only caches (the managed PRD copy).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from anvil.engine.errors import UsageError
from anvil.engine.vocab import DEFAULT_PRD

DB_NAME = "state.db"
LOG_NAME = "events.jsonl"


class StateLocation(NamedTuple):
    """The resolved project root and state directory, and the PostgreSQL database when one is used."""

    root: Path
    state_dir: Path
    layout: str  # "workspace" or "local"
    database_url: str | None = None  # ANVIL_DATABASE_URL: the state lives in PostgreSQL

    def __repr__(self) -> str:  # never shows the database URL, which may carry a password
        database = "set" if self.database_url else None
        return (f"StateLocation(root={self.root!r}, state_dir={self.state_dir!r}, layout={self.layout!r}, "
                f"database_url={database!r})")

    @property
    def db_path(self) -> Path:
        return self.state_dir / DB_NAME

    @property
    def log_path(self) -> Path:
        return self.state_dir / LOG_NAME

    @property
    def prd_path(self) -> Path:
        return self.state_dir / "prd.md"

    def named_prd_path(self, prd_id: str) -> Path:
        return self.state_dir / "prds" / f"{prd_id}.md"

    def prd_source_path(self, prd_id: str) -> Path:
        """Where the managed source of ``prd_id`` is kept."""
        return self.prd_path if prd_id == DEFAULT_PRD else self.named_prd_path(prd_id)

    @property
    def initialized(self) -> bool:
        """Whether a state is there (a database named by URL is assumed to be; opening it finds out)."""
        return self.database_url is not None or self.db_path.is_file()


def current_directory() -> str:
    """The process's working directory.

    Raises:
        UsageError: ``root_missing`` when it no longer exists (removed or renamed while in use).
    """
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise UsageError("the current directory no longer exists (it was removed or renamed): cd into an existing "
                         "directory, such as the project's", code="root_missing") from None


def git_main_worktree(start: Path) -> Path | None:
    """The main worktree of the git repository containing ``start``, read from ``.git`` files.

    Reading the files avoids spawning ``git`` on every call; linked worktrees point through
    ``gitdir:`` and ``commondir`` to the main repository.
    """
    for directory in (start, *start.parents):
        dot_git = directory / ".git"
        if dot_git.is_dir():
            return directory
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return directory
            match = re.match(r"gitdir:\s*(.+)", text.strip())
            if not match:
                return directory
            gitdir = (directory / match.group(1).strip()).resolve()
            common = gitdir
            commondir_file = gitdir / "commondir"
            if commondir_file.is_file():
                try:
                    common = (gitdir / commondir_file.read_text(encoding="utf-8").strip()).resolve()
                except OSError:
                    return directory
            # A main repository's git dir is "<main worktree>/.git"; anything else is bare/separate.
            return common.parent if common.name == ".git" else directory
    return None


def user_data_home(env: Mapping[str, str]) -> Path:
    """The directory holding all per-project workspaces."""
    override = env.get("ANVIL_HOME", "").strip()
    if override:
        return Path(override).expanduser()
    import platformdirs  # deferred: only the default layout needs it

    return Path(platformdirs.user_data_dir("anvil", appauthor=False))


def project_root(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> Path:
    """The project root for ``cwd`` under ``env``."""
    explicit = env.get("ANVIL_ROOT", "").strip()
    if explicit:
        return Path(explicit).expanduser().resolve()
    here = Path(cwd).resolve()
    return git_main_worktree(here) or here


def workspace_key(root: Path) -> str:
    """``<name>-<hash8>``: readable, and unique per root path."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.") or "project"
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:8]
    return f"{name[:40]}-{digest}"


def resolve_state(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> StateLocation:
    """Resolve the state location for a call.

    Raises:
        UsageError: ``ANVIL_STATE_LAYOUT`` has an unknown value.
    """
    root = project_root(env, cwd)
    database = database_url(env)
    layout = env.get("ANVIL_STATE_LAYOUT", "").strip().lower() or "workspace"
    if layout == "local":
        return StateLocation(root, root / ".anvil", "local", database)
    if layout not in ("workspace", "home", "default"):
        raise UsageError("ANVIL_STATE_LAYOUT must be 'local' or 'workspace'", code="invalid_layout")
    return StateLocation(root, user_data_home(env) / "workspaces" / workspace_key(root), "workspace", database)


LOCATION_VARIABLES = ("ANVIL_ROOT", "ANVIL_DATABASE_URL", "ANVIL_STATE_LAYOUT", "ANVIL_HOME")
"""The variables :func:`resolve_state` reads (``platformdirs`` reads the process's own ``HOME`` and
``XDG_DATA_HOME`` besides, whatever ``env`` says)."""


def location_inputs(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> tuple[str | None, ...]:
    """What :func:`resolve_state` reads from ``env`` and ``cwd``: two resolutions from equal inputs, made
    at the same moment, find the same location (the file system, read by each, is the same then).
    ``cwd`` is left out when ``ANVIL_ROOT`` is set (the root is then that, wherever the call runs)."""
    explicit = env.get("ANVIL_ROOT", "").strip()
    return (None if explicit else os.fspath(cwd), *(env.get(name) for name in LOCATION_VARIABLES))


def database_url(env: Mapping[str, str]) -> str | None:
    """The PostgreSQL database ``ANVIL_DATABASE_URL`` names (None: the embedded SQLite state).

    Raises:
        UsageError: the value is set but is not a ``postgresql://`` URL (code ``invalid_database_url``;
            the message never repeats the value, which may carry a password).
    """
    value = env.get("ANVIL_DATABASE_URL", "").strip()
    if not value:
        return None
    if not value.lower().startswith(("postgresql://", "postgres://")):
        raise UsageError("ANVIL_DATABASE_URL must be a postgresql:// URL (or unset for the embedded SQLite state)",
                         code="invalid_database_url")
    return value
