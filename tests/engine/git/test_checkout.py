"""The git step in real repositories: it creates what the claim needs and undoes only that."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.engine.errors import Refused
from anvil.engine.git.checkout import baselines, claim_marker, perform, undo
from anvil.engine.git.command import GitError
from anvil.engine.git.plan import bind, read_facts
from tests.gitrepo import branches, current_branch, git, make_repo, worktrees

TASK = {"id": "T001", "title": "Storage"}


def _meta(repo: Path, mode: str, claim_id: str = "C000007") -> dict:
    facts = read_facts(str(repo))
    return {**bind(facts, mode, TASK), "checkout": facts["toplevel"], "claim_id": claim_id,
            "claimed_at": "2026-01-05T10:00:00Z"}


def _branch_of_this_claim(repo: Path, mode: str) -> dict:
    """The claim branch, made by this very claim (a retry after its step was cut short)."""
    meta = _meta(repo, mode)
    git(repo, "branch", meta["branch"])
    git(repo, "config", f"branch.{meta['branch']}.anvilclaim", claim_marker(meta))
    return meta


def test_branch_mode_creates_and_switches_and_undo_restores_the_checkout(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    meta = _meta(repo, "branch")
    created = perform(meta)
    assert created == {"branch": True, "worktree": False, "switched": True}
    assert current_branch(repo) == "agent/t001-storage"
    assert perform(meta) == {"branch": False, "worktree": False, "switched": False}  # a retry changes nothing
    undo(meta, created)
    assert current_branch(repo) == "main" and branches(repo) == ["main"]


def test_the_claims_own_existing_branch_is_switched_to_and_never_deleted_by_undo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    meta = _branch_of_this_claim(repo, "branch")
    created = perform(meta)
    assert created["branch"] is False and current_branch(repo) == "agent/t001-storage"
    undo(meta, created)
    assert current_branch(repo) == "main" and "agent/t001-storage" in branches(repo)


def test_worktree_mode_adds_a_worktree_beside_the_checkout(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    meta = _meta(repo, "worktree")
    created = perform(meta)
    target = Path(meta["target_path"])
    assert created == {"branch": True, "worktree": True, "switched": False}
    assert str(target) in worktrees(repo) and current_branch(target) == "agent/t001-storage"
    assert current_branch(repo) == "main"
    assert perform(meta)["worktree"] is False  # the retry of the same claim finds it in place
    undo(meta, created)
    assert not target.exists() and branches(repo) == ["main"]


def test_a_failing_worktree_step_removes_the_branch_it_made_and_leaves_what_was_there(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    meta = _meta(repo, "worktree")
    target = Path(meta["target_path"])
    target.mkdir(parents=True)
    (target / "keep.txt").write_text("not git's\n")  # git refuses to add a worktree over a non-empty directory
    with pytest.raises(GitError):
        perform(meta)
    assert branches(repo) == ["main"] and (target / "keep.txt").read_text() == "not git's\n"


def test_baselines_are_the_content_digests_at_the_claim_start_commit(tmp_path: Path) -> None:
    import hashlib

    repo = make_repo(tmp_path / "repo")
    meta = _meta(repo, "branch")
    (repo / "shortlink" / "store.py").write_text("changed later\n")
    assert baselines(meta, ["shortlink/store.py", "missing.py"]) == [
        {"path": "shortlink/store.py", "baseline_sha256": hashlib.sha256(b"STORE = 1\n").hexdigest()},
        {"path": "missing.py", "baseline_sha256": None}]


def _failing_post_checkout(repo: Path) -> None:
    """A post-checkout hook that fails: git reports the failure after it switched or added a worktree."""
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\nexit 7\n")
    hook.chmod(0o755)


def test_a_switch_that_fails_after_switching_is_undone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    _failing_post_checkout(repo)
    with pytest.raises(GitError):
        perform(_meta(repo, "branch"))
    assert current_branch(repo) == "main" and branches(repo) == ["main"]


def test_a_worktree_add_that_fails_after_adding_is_undone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    _failing_post_checkout(repo)
    meta = _meta(repo, "worktree")
    with pytest.raises(GitError):
        perform(meta)
    assert worktrees(repo) == [str(repo)] and branches(repo) == ["main"]
    assert not Path(meta["target_path"]).exists() and not Path(meta["target_path"]).parent.exists()


def test_a_failed_step_over_an_existing_branch_keeps_the_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    meta = _branch_of_this_claim(repo, "worktree")
    _failing_post_checkout(repo)
    with pytest.raises(GitError):
        perform(meta)
    assert worktrees(repo) == [str(repo)] and "agent/t001-storage" in branches(repo)


@pytest.mark.parametrize("mode", ["branch", "worktree"])
def test_a_leftover_branch_of_another_claim_is_refused_and_left_as_it_was(tmp_path: Path, mode: str) -> None:
    repo = make_repo(tmp_path / "repo")
    earlier = _meta(repo, "worktree", claim_id="C000003")
    perform(earlier)  # an earlier claim's branch and worktree, with its claimer's commit on it
    tree = Path(earlier["target_path"])
    (tree / "theirs.txt").write_text("another claimer's work\n")
    git(tree, "add", "theirs.txt")
    git(tree, "commit", "-q", "-m", "theirs")
    head = git(tree, "rev-parse", "HEAD")
    if mode == "branch":
        git(repo, "worktree", "remove", str(tree))
    with pytest.raises(Refused) as refused:
        perform(_meta(repo, mode, claim_id="C000042"))  # the same branch name for a new claim
    assert refused.value.code == "git_branch_taken" and "agent/t001-storage" in str(refused.value)
    assert current_branch(repo) == "main" and git(repo, "rev-parse", "agent/t001-storage") == head
    assert worktrees(repo) == ([str(repo)] if mode == "branch" else [str(repo), str(tree)])


def test_a_branch_made_by_hand_is_never_taken_over(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "agent/t001-storage")
    with pytest.raises(Refused) as refused:
        perform(_meta(repo, "branch"))
    assert refused.value.code == "git_branch_taken" and current_branch(repo) == "main"
