"""The build's identity (issue 24 item 2): every field found from git or from what the build baked,
None when it cannot be found, never invented."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from anvil import __version__
from anvil.ops.buildinfo import BUILD_FILE, FIELDS, bake, build_identity, checkout_facts, display_version
from anvil.ops.invoke import invoke

REPO = Path(__file__).resolve().parents[2]


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def source_tree(root: Path) -> Path:
    """A git checkout shaped like anvil's (an ``anvil/`` package at its top), with one commit."""
    (root / "anvil").mkdir(parents=True)
    (root / "anvil" / "__init__.py").write_text("", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return root


def test_item_2_this_checkout_reports_its_own_commit_and_dirtiness() -> None:
    if checkout_facts(REPO) is None:
        pytest.skip("this anvil does not run from a git checkout")
    identity = build_identity(__version__)
    assert set(identity) == set(FIELDS)
    assert identity["build_kind"] == "source_checkout" and identity["built_at"] is None
    assert identity["commit"] == git(REPO, "rev-parse", "HEAD")
    assert identity["dirty"] is bool(git(REPO, "status", "--porcelain"))
    assert identity["version"] == __version__


def test_item_2_a_tagged_clean_checkout_shows_its_tag_and_a_plain_version(tmp_path: Path) -> None:
    root = source_tree(tmp_path / "src")
    git(root, "tag", "v1.2.3")
    facts = checkout_facts(root)
    assert facts == {"commit": git(root, "rev-parse", "HEAD"), "tag": "v1.2.3", "tag_distance": 0, "dirty": False}
    assert display_version("1.2.3", facts) == "1.2.3"
    (root / "anvil" / "new.py").write_text("x = 1\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "second")
    (root / "anvil" / "__init__.py").write_text("changed = True\n", encoding="utf-8")
    later = checkout_facts(root)
    assert later is not None and (later["tag"], later["tag_distance"], later["dirty"]) == ("v1.2.3", 1, True)
    assert display_version("1.2.3", later) == f"1.2.3+1.g{later['commit'][:12]}.dirty"


def test_item_2_a_directory_that_is_not_anvils_checkout_says_nothing(tmp_path: Path) -> None:
    assert checkout_facts(tmp_path) is None
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")  # a repository, but no anvil package at its top
    assert checkout_facts(other) is None


def test_item_2_an_installed_package_reports_what_its_build_baked_and_otherwise_nothing(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "anvil"
    package.mkdir(parents=True)
    unknown = build_identity(__version__, package)
    assert unknown["build_kind"] == "unknown" and unknown["display_version"] == unknown["version"]
    assert all(unknown[name] is None for name in ("commit", "tag", "tag_distance", "dirty", "built_at"))
    baked = {"commit": "a" * 40, "tag": "v0.1.0", "tag_distance": 0, "dirty": False, "built_at": "2026-01-02T03:04:05Z"}
    (package / BUILD_FILE).write_text(json.dumps(baked), encoding="utf-8")
    assert build_identity(__version__, package) == {"version": unknown["version"],
                                                     "display_version": unknown["version"],
                                                     "build_kind": "package_build", **baked}


def test_item_2_a_build_outside_git_bakes_only_what_its_variables_say(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)
    monkeypatch.delenv("ANVIL_BUILD_COMMIT", raising=False)
    monkeypatch.delenv("ANVIL_BUILD_TAG", raising=False)
    assert bake(tmp_path, now) == {"commit": None, "tag": None, "tag_distance": None, "dirty": None,
                                   "built_at": "2026-05-06T07:08:09Z"}
    monkeypatch.setenv("ANVIL_BUILD_COMMIT", "ABCDEF1")
    assert bake(tmp_path, now)["commit"] == "abcdef1"


def test_item_2_the_build_step_bakes_the_checkouts_facts_into_the_built_package(tmp_path: Path) -> None:
    """setup.py's build_py (what pip runs for a wheel or the image) writes _build.json into the built
    package only: the source tree is left as it was."""
    if shutil.which("git") is None or checkout_facts(REPO) is None:
        pytest.skip("needs git and a checkout of anvil")
    before = git(REPO, "status", "--porcelain")
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path / "lib")], cwd=REPO,
                   check=True, capture_output=True)
    baked = json.loads((tmp_path / "lib" / "anvil" / BUILD_FILE).read_text(encoding="utf-8"))
    assert baked["commit"] == git(REPO, "rev-parse", "HEAD") and baked["built_at"].endswith("Z")
    assert not (REPO / "anvil" / BUILD_FILE).exists()
    assert git(REPO, "status", "--porcelain") == before


def test_item_2_describe_surface_carries_the_build_identity() -> None:
    described = invoke("describe_surface", {})
    assert set(FIELDS) <= set(described)
    assert described["version"] == __version__ and described["api_version"].startswith("c")
