"""State location: ANVIL_ROOT, git main worktree, workspace vs local layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import UsageError
from anvil.engine.storage.paths import git_main_worktree, resolve_state, workspace_key


def test_anvil_root_wins_over_the_working_directory(tmp_path: Path) -> None:
    loc = resolve_state({"ANVIL_ROOT": str(tmp_path / "p"), "ANVIL_HOME": str(tmp_path / "h")}, "/")
    assert loc.root == (tmp_path / "p").resolve()
    assert loc.state_dir == tmp_path / "h" / "workspaces" / workspace_key(loc.root)


def test_local_layout_keeps_state_in_the_project(tmp_path: Path) -> None:
    loc = resolve_state({"ANVIL_STATE_LAYOUT": "local"}, tmp_path)
    assert loc.state_dir == tmp_path.resolve() / ".anvil"


def test_an_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        resolve_state({"ANVIL_STATE_LAYOUT": "cloud"}, tmp_path)


def test_a_subdirectory_of_a_repository_resolves_to_its_root(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "deep").mkdir(parents=True)
    assert git_main_worktree(tmp_path / "repo" / "src" / "deep") == tmp_path / "repo"


def test_linked_worktrees_share_the_main_worktree_state(tmp_path: Path) -> None:
    main = tmp_path / "main"
    gitdir = main / ".git" / "worktrees" / "feature"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    linked = tmp_path / "feature"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {gitdir}\n")
    env = {"ANVIL_HOME": str(tmp_path / "h")}
    assert resolve_state(env, linked).state_dir == resolve_state(env, main).state_dir


def test_different_projects_get_different_workspaces(tmp_path: Path) -> None:
    assert workspace_key(tmp_path / "a" / "app") != workspace_key(tmp_path / "b" / "app")
