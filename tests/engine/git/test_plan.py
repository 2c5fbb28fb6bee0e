"""The git plan: facts read from a real checkout without changing it, checked and bound by the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from anvil.engine.errors import Refused, UsageError
from anvil.engine.git.plan import bind, branch_name, changed_paths, decode, encode, read_facts
from tests.gitrepo import git, make_repo

TASK = {"id": "T001", "title": "SQLite storage layer!"}


def test_facts_of_a_clean_checkout_name_its_root_head_and_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    facts = read_facts(str(repo / "sub"))
    assert facts["toplevel"] == str(repo) and facts["common_dir"] == str(repo / ".git")
    assert facts["main_root"] == str(repo) and facts["head_ref"] == "main"
    assert facts["head"] == git(repo, "rev-parse", "HEAD").strip() and facts["dirty_count"] == 0
    assert decode(encode(facts)) == facts


def test_facts_outside_a_repository_say_so_without_running_git(tmp_path: Path) -> None:
    assert read_facts(str(tmp_path)) == {"v": 1, "toplevel": None, "worktree_path": None}


def test_tracked_changes_are_dirty_and_untracked_files_are_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "new.txt").write_text("untracked\n")
    assert read_facts(str(repo))["dirty_count"] == 0
    (repo / "shortlink" / "store.py").write_text("changed\n")
    facts = read_facts(str(repo))
    assert facts["dirty"] == ["shortlink/store.py"] and facts["dirty_count"] == 1
    with pytest.raises(Refused) as info:
        bind(facts, "branch", TASK)
    assert info.value.code == "git_dirty_tree" and "shortlink/store.py" in info.value.message
    assert bind(facts, "worktree", TASK)["mode"] == "worktree"  # a new worktree starts clean


def test_binding_derives_the_branch_and_a_worktree_beside_the_main_checkout(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    facts = read_facts(str(repo))
    assert branch_name("T001", TASK["title"]) == "agent/t001-sqlite-storage-layer"
    shared = bind(facts, "branch", TASK)
    assert shared["target_path"] == str(repo) and shared["claim_start_sha"] == facts["head"]
    isolated = bind(facts, "worktree", TASK)
    assert isolated["target_path"] == f"{repo}.worktrees/t001-sqlite-storage-layer"
    assert bind(facts, "off", TASK) is None and bind({"v": 1, "toplevel": None}, "branch", TASK) is None


def test_a_repository_without_commits_has_nothing_to_branch_from(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    with pytest.raises(Refused) as info:
        bind(read_facts(str(repo)), "branch", TASK)
    assert info.value.code == "git_no_commit"


@pytest.mark.parametrize("text", ["nope", "[]", '{"v": 2}', '{"v": 1, "toplevel": "relative"}',
                                  '{"v": 1, "toplevel": "/a", "common_dir": "/a/.git", "main_root": "/a", '
                                  '"head": "xyz", "head_ref": null, "dirty": [], "dirty_count": 0}',
                                  '{"v": 1, "toplevel": null, "extra": 1}', "x" * 20000])
def test_a_plan_that_is_not_the_clis_facts_is_refused(text: str) -> None:
    with pytest.raises(UsageError) as info:
        decode(text)
    assert info.value.code == "invalid_git_plan"


def test_porcelain_paths_skip_a_renames_old_name() -> None:
    assert changed_paths("R  new.py\0old.py\0 M a b.py\0") == ["new.py", "a b.py"]


def test_a_worktree_of_a_separate_git_dir_checkout_lands_beside_the_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", "-b", "main", f"--separate-git-dir={tmp_path / 'store.git'}", str(checkout)],
                   check=True, timeout=60)
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "i")
    facts = read_facts(str(checkout))
    assert facts["common_dir"] == str(tmp_path / "store.git") and facts["main_root"] == str(checkout)
    assert bind(facts, "worktree", TASK)["target_path"] == f"{checkout}.worktrees/t001-sqlite-storage-layer"
