"""The git side of landing in real repositories: building a unit onto a tip with each method, conflicts
with their paths, and moving the target by fast-forward only (a lost race leaves the target alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import Refused
from anvil.engine.git.landing import build, check_movable, is_ancestor, move_target, target_tip
from anvil.engine.git.scratch import scratch_worktree
from tests.gitrepo import git


def commit_file(repo: Path, branch: str, start: str, name: str, text: str) -> str:
    """A commit on ``branch`` (made from ``start``) that writes ``name``; the checkout stays where it was."""
    git(repo, "branch", "-f", branch, start)
    tree_path = repo.parent / f"wt-{branch.replace('/', '-')}"
    git(repo, "worktree", "add", "-q", str(tree_path), branch)
    (tree_path / name).write_text(text)
    git(tree_path, "add", name)
    git(tree_path, "commit", "-q", "-m", f"{branch}: {name}")
    head = git(tree_path, "rev-parse", "HEAD").strip()
    git(repo, "worktree", "remove", "--force", str(tree_path))
    return head


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path, str]:
    """A clone with one commit on main, and its bare remote."""
    remote, clone = tmp_path / "remote.git", tmp_path / "clone"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(clone))
    for key, value in (("user.email", "t@example.com"), ("user.name", "t")):
        git(clone, "config", key, value)
    (clone / "a.txt").write_text("one\n")
    git(clone, "add", "a.txt")
    git(clone, "commit", "-q", "-m", "initial")
    git(clone, "remote", "add", "origin", str(remote))
    git(clone, "push", "-q", "origin", "main")
    return clone, remote, git(clone, "rev-parse", "main").strip()


@pytest.mark.parametrize("method", ["merge", "rebase", "squash"])
def test_each_method_puts_the_approved_change_onto_a_moved_tip(repos: tuple[Path, Path, str], method: str) -> None:
    clone, _, base = repos
    approved = commit_file(clone, "agent/t1", base, "b.txt", "two\n")
    tip = commit_file(clone, "other", base, "c.txt", "three\n")  # the target moved since the claim started
    with scratch_worktree(clone, tip) as tree:
        built = build(clone, tree, tip, [("T001", approved, "Land T001")], method)
        assert built.commit is not None and built.changed == ["b.txt"]
        assert (tree / "b.txt").read_text() == "two\n" and (tree / "c.txt").read_text() == "three\n"
    assert is_ancestor(clone, tip, built.commit)
    assert is_ancestor(clone, approved, built.commit) == (method == "merge")  # rebase and squash rewrite it


def test_a_target_that_has_not_moved_fast_forwards_to_the_approved_commit(repos: tuple[Path, Path, str]) -> None:
    clone, _, base = repos
    approved = commit_file(clone, "agent/t1", base, "b.txt", "two\n")
    with scratch_worktree(clone, base) as tree:
        assert build(clone, tree, base, [("T001", approved, "Land T001")], "merge").commit == approved


def test_a_conflict_names_its_paths_and_builds_nothing(repos: tuple[Path, Path, str]) -> None:
    clone, _, base = repos
    approved = commit_file(clone, "agent/t2", base, "a.txt", "mine\n")
    tip = commit_file(clone, "other", base, "a.txt", "theirs\n")
    for method in ("merge", "rebase", "squash"):
        with scratch_worktree(clone, tip) as tree:
            built = build(clone, tree, tip, [("T002", approved, "Land T002")], method)
            assert (built.commit, built.conflict_task, built.conflicts) == (None, "T002", ["a.txt"])
    assert git(clone, "status", "--porcelain") == ""


def test_the_target_moves_only_by_fast_forward_from_the_tip_it_was_built_on(repos: tuple[Path, Path, str]) -> None:
    clone, remote, base = repos
    first = commit_file(clone, "agent/t1", base, "b.txt", "two\n")
    second = commit_file(clone, "agent/t2", base, "c.txt", "three\n")
    assert target_tip(clone, "main", "origin") == base
    assert move_target(clone, "main", "origin", first, base) is True
    assert git(remote, "rev-parse", "main").strip() == first
    # A lander that built on base lost the race: its push is not a fast-forward, the remote keeps the winner.
    assert move_target(clone, "main", "origin", second, base) is False
    assert git(remote, "rev-parse", "main").strip() == first


def test_without_a_remote_the_branch_moves_by_compare_and_swap_unless_it_is_checked_out(
        repos: tuple[Path, Path, str]) -> None:
    clone, _, base = repos
    first = commit_file(clone, "agent/t1", base, "b.txt", "two\n")
    with pytest.raises(Refused) as refused:
        check_movable(clone, "main", None)  # main is the clone's checkout
    assert refused.value.code == "land_target_checked_out"
    git(clone, "branch", "release", base)
    second = commit_file(clone, "agent/t2", base, "c.txt", "three\n")
    assert move_target(clone, "release", None, first, base) is True
    assert move_target(clone, "release", None, second, base) is False  # release is at first now, not base
    assert git(clone, "rev-parse", "release").strip() == first
