"""Which build of anvil is running: its version, commit, tag, whether the tree was dirty, when it was built.

Every field is found, never invented; one that cannot be found is None:

- running from a git checkout of anvil itself (the package directory is the checkout's ``anvil/``,
  as in an editable install): the commit, the nearest ``v*`` tag and the distance to it, and
  whether tracked files differ from the commit, read from git at the time of asking
  (``build_kind`` ``source_checkout``; ``built_at`` is None: nothing was built);
- running an installed package: what its build recorded in ``anvil/_build.json``, written by
  ``setup.py``'s build step from git when it built a checkout, else from the ``ANVIL_BUILD_COMMIT``
  and ``ANVIL_BUILD_TAG`` variables of the build (the Dockerfile passes its build arguments) and the
  time it built (``build_kind`` ``package_build``);
- neither: only the version, from the package metadata (``build_kind`` ``unknown``).

Standard library only, with no anvil import, so ``setup.py`` loads this file by path to bake the
same facts at build time.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BUILD_FILE = "_build.json"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
FIELDS = ("version", "display_version", "build_kind", "commit", "tag", "tag_distance", "dirty", "built_at")
GIT_TIMEOUT_SECONDS = 5.0
_GIT_ENV_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


def _git(args: list[str], cwd: Path) -> str | None:
    """The stdout of ``git ARGS`` (stripped), or None when git is missing, fails or takes too long."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROPPED}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    try:
        proc = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=True, check=False,
                              timeout=GIT_TIMEOUT_SECONDS, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def checkout_facts(source_root: Path) -> dict[str, Any] | None:
    """Commit, tag, distance and dirtiness of ``source_root`` when it is the top of a git checkout
    holding anvil's source (``source_root/anvil`` is the package), else None."""
    top = _git(["rev-parse", "--show-toplevel"], source_root)
    if top is None or Path(top).resolve() != source_root.resolve() or not (source_root / "anvil").is_dir():
        return None
    commit = _git(["rev-parse", "HEAD"], source_root)
    if commit is None:  # a repository without commits
        return None
    tag, distance = None, None
    described = _git(["describe", "--tags", "--long", "--match", "v[0-9]*"], source_root)
    if described:  # v1.2.3-4-gabcdef0: the tag, the commits since it, the abbreviated commit
        name, count, _ = described.rsplit("-", 2)
        tag, distance = name, int(count)
    status = _git(["status", "--porcelain"], source_root)  # untracked files are built in too
    return {"commit": commit, "tag": tag, "tag_distance": distance, "dirty": None if status is None else bool(status)}


def bake(source_root: Path, now: datetime | None = None) -> dict[str, Any]:
    """What a build records in ``_build.json``: git's facts when building a checkout, else the
    ``ANVIL_BUILD_COMMIT`` / ``ANVIL_BUILD_TAG`` variables (None when unset), and the build time."""
    facts = checkout_facts(source_root)
    if facts is None:
        commit = os.environ.get("ANVIL_BUILD_COMMIT", "").strip().lower() or None
        tag = os.environ.get("ANVIL_BUILD_TAG", "").strip() or None
        facts = {"commit": commit, "tag": tag, "tag_distance": None, "dirty": None}
    built = (now or datetime.now(UTC)).replace(microsecond=0)
    return {**facts, "built_at": built.isoformat().replace("+00:00", "Z")}


def _baked(package_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((package_dir / BUILD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def package_version(fallback: str) -> str:
    """The installed distribution's version (its metadata), else ``fallback``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("anvil")
    except PackageNotFoundError:
        return fallback


def display_version(version: str, facts: dict[str, Any]) -> str:
    """The version as people read it: plain for a clean build of its tag, else with a local part
    naming the distance, the commit and a dirty tree (``0.1.0+3.gabcdef123456.dirty``)."""
    commit = facts.get("commit")
    exact = facts.get("tag") is not None and facts.get("tag_distance") == 0
    if not commit or (exact and facts.get("dirty") is False):
        return version
    parts = [str(facts["tag_distance"])] if facts.get("tag_distance") else []
    parts.append("g" + str(commit)[:12])
    if facts.get("dirty"):
        parts.append("dirty")
    return f"{version}+{'.'.join(parts)}"


def build_identity(fallback_version: str, package_dir: Path = PACKAGE_DIR) -> dict[str, Any]:
    """The running build's identity: every field of :data:`FIELDS`, None where it is unknown."""
    version = package_version(fallback_version)
    facts = checkout_facts(package_dir.parent)
    kind = "source_checkout"
    if facts is None:
        facts = _baked(package_dir)
        kind = "package_build" if facts is not None else "unknown"
    facts = facts or {}
    identity = {name: facts.get(name) for name in ("commit", "tag", "tag_distance", "dirty", "built_at")}
    return {"version": version, "display_version": display_version(version, identity), "build_kind": kind,
            **identity}
