"""Git-bound claims through the real CLI in real repositories: shared branches, worktrees, refusals,
a git failure mid-claim, and eight agent processes claiming into eight worktrees at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anvil.engine.errors import AnvilError
from anvil.ops.invoke import invoke
from tests.conftest import anvil_subprocess_env, interruptible
from tests.gitrepo import branches, current_branch, git, make_repo, plan_in_repo, worktrees
from tests.ops.support import event_types, mini_prd, mini_task, op

BRANCH = "agent/t001-sqlite-storage-layer"


def _project(env: dict[str, str], prd: str | None = None) -> Path:
    root = make_repo(Path(env["ANVIL_ROOT"]))
    plan_in_repo(env, prd)
    return root


def test_branch_mode_switches_the_checkout_and_returns_the_binding(anvil_env, cli) -> None:
    root = _project(anvil_env)
    start = git(root, "rev-parse", "HEAD").strip()
    out = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json")
    claim = out.json()
    assert out.code == 0 and current_branch(root) == BRANCH
    assert claim["branch"] == BRANCH and claim["worktree_path"] is None
    assert claim["git_metadata"] == {"mode": "branch", "canonical_root": str(root / ".git"), "claim_start_sha": start,
                                     "branch": BRANCH, "target_path": str(root), "base_ref": "main"}
    context = claim["attestation_context"]
    assert context["claim_start_sha"] == start and context["repository_id"].startswith("sha256:")
    assert [p["path"] for p in context["expected_paths"]] == ["shortlink/store.py", "shortlink/schema.sql"]
    assert context["expected_paths"][0]["baseline_sha256"] is not None  # committed at the start
    assert context["expected_paths"][1]["baseline_sha256"] is None  # not there yet
    assert claim["continuation"]["cd"] == str(root)
    assert claim["continuation"]["prove"][0]["argv"][-5:] == ["python", "-m", "unittest", "-q", "tests/test_store.py"]
    shown = op(anvil_env, "get_task", task_id="T001")["claim"]
    assert shown["git_metadata"] == claim["git_metadata"]


def test_a_second_claim_on_a_busy_checkout_is_refused_naming_the_holder(anvil_env, cli) -> None:
    root = _project(anvil_env)
    first = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json").json()
    out = cli("claim", "T002", "--branch", "--actor", "agent-2", "--json")
    error = out.json()["error"]
    assert out.code == 5 and error["code"] == "git_checkout_busy"
    assert first["id"] in error["message"] and "--worktree" in error["message"]
    assert current_branch(root) == BRANCH and branches(root) == [BRANCH, "main"]
    assert op(anvil_env, "get_task", task_id="T002")["status"] == "ready"


def test_tracked_uncommitted_changes_refuse_a_branch_claim_and_change_nothing(anvil_env, cli) -> None:
    root = _project(anvil_env)
    (root / "shortlink" / "store.py").write_text("edited\n")
    out = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json")
    assert out.code == 5 and out.json()["error"]["code"] == "git_dirty_tree"
    assert branches(root) == ["main"] and current_branch(root) == "main"
    assert "claim.acquired" not in event_types(anvil_env)


def test_a_new_claim_after_a_release_works_on_a_branch_of_its_own_and_the_old_one_keeps_its_commits(
        anvil_env, cli) -> None:
    root = _project(anvil_env)
    gen = cli("claim", "T001", "--branch", "--actor", "agent-1", "--json").json()["generation"]
    (root / "work.txt").write_text("kept\n")
    git(root, "add", "work.txt")
    git(root, "commit", "-q", "-m", "work")
    kept = git(root, "rev-parse", "HEAD")
    assert cli("release", "T001", "--actor", "agent-1", "--generation", str(gen), "--json").code == 0
    assert BRANCH in branches(root) and current_branch(root) == BRANCH
    git(root, "switch", "-q", "main")
    again = cli("claim", "T001", "--branch", "--actor", "agent-2", "--json")
    assert again.code == 0 and again.json()["branch"] == f"{BRANCH}-g2" == current_branch(root)
    assert not (root / "work.txt").exists() and git(root, "rev-parse", BRANCH) == kept


def test_a_leftover_worktree_of_another_claimer_is_never_handed_to_the_next_claim(anvil_env, cli) -> None:
    """Issue 23: a released claim's branch and worktree stay behind; the next claimer got them, with the
    first claimer's commits, and its attestation credited those commits to it."""
    root = _project(anvil_env)
    first = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    theirs = Path(first["worktree_path"])
    (theirs / "theirs.txt").write_text("agent-1's work\n")
    git(theirs, "add", "theirs.txt")
    git(theirs, "commit", "-q", "-m", "agent-1's work")
    cli("release", "T001", "--actor", "agent-1", "--generation", str(first["generation"]), "--json")
    second = cli("claim", "T001", "--worktree", "--actor", "agent-2", "--json")
    assert second.code == 0, second.stdout
    mine = Path(second.json()["worktree_path"])
    assert mine != theirs and not (mine / "theirs.txt").exists()
    assert git(mine, "rev-parse", "HEAD") == git(root, "rev-parse", "main")
    attested = cli("attest", "T001", "--actor", "agent-2", "--json").json()
    out = cli("progress", "T001", "--actor", "agent-2", "--attestation-file", attested["path"], "--json")
    assert out.json()["error"]["code"] == "attestation_empty"  # nothing of agent-1's counts as agent-2's progress
    assert (theirs / "theirs.txt").exists()  # and agent-1's work is left where it was


def test_a_claim_whose_branch_exists_without_being_its_own_is_released_naming_the_branch(anvil_env, cli) -> None:
    root = _project(anvil_env)
    git(root, "branch", BRANCH)
    out = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json")
    error = out.json()["error"]
    assert out.code == 5 and error["code"] == "git_branch_taken" and BRANCH in error["message"]
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "ready"
    assert worktrees(root) == [str(root)] and current_branch(root) == "main"


def test_a_deleted_worktree_is_refused_clearly_by_proof_run_attest_and_submit(anvil_env, cli, monkeypatch) -> None:
    import shutil

    root = _project(anvil_env)
    claim = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    tree = Path(claim["worktree_path"])
    monkeypatch.chdir(tree)
    shutil.rmtree(tree)
    for argv in (["proof", "run", "T001", "--actor", "agent-1", "--json", "--", "python", "-c", "pass"],
                 ["attest", "T001", "--actor", "agent-1", "--json"],
                 ["submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--json"]):
        inside = cli(*argv)  # the shell still sits in the removed directory
        assert inside.code == 2 and inside.json()["error"]["code"] == "root_missing", (argv, inside.stdout)
    monkeypatch.chdir(root)
    for argv in (["proof", "run", "T001", "--actor", "agent-1", "--json", "--", "python", "-c", "pass"],
                 ["attest", "T001", "--actor", "agent-1", "--json"],
                 ["submit", "T001", "--actor", "agent-1", "--command", "python -c pass", "--json"]):
        out = cli(*argv)
        error = out.json()["error"]
        assert out.code == 5 and error["code"] == "claim_tree_missing", (argv, out.stdout)
        assert str(tree) in error["message"] and "git worktree add" in error["message"]
        assert "anvil release T001" in error["message"]
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "claimed"


def test_a_seed_shaped_claim_whose_git_step_fails_is_really_released(anvil_env) -> None:
    """Issue 23: a claim naming ``claimed_by`` (no ``actor``) reported "released" while it held the task."""
    root = _project(anvil_env)
    blocker = Path(f"{root}.worktrees/t001-sqlite-storage-layer")
    blocker.mkdir(parents=True)
    (blocker / "notes.txt").write_text("someone's files\n")
    env = {k: v for k, v in anvil_env.items() if k != "ANVIL_ACTOR"}
    with pytest.raises(AnvilError) as failed:
        invoke("claim_task", {"task_id": "T001", "claimed_by": "agent-1", "git_mode": "worktree"}, env=env,
               cwd=str(root))
    assert failed.value.code == "git_step_failed" and "the claim was released" in str(failed.value)
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "ready"
    assert event_types(anvil_env)[-2:] == ["claim.acquired", "claim.released"]


def test_worktree_mode_from_the_project_config_adds_an_isolated_checkout(anvil_env, cli) -> None:
    root = _project(anvil_env)
    assert cli("config", "--git-mode", "worktree", "--actor", "lead", "--json").json()["config"]["git_mode"] == \
        "worktree"
    one = cli("claim", "T001", "--actor", "agent-1", "--json").json()
    two = cli("claim", "T002", "--actor", "agent-2", "--json").json()
    assert one["worktree_path"] == f"{root}.worktrees/t001-sqlite-storage-layer"
    assert set(worktrees(root)) == {str(root), one["worktree_path"], two["worktree_path"]}
    assert current_branch(root) == "main" and current_branch(Path(two["worktree_path"])) == two["branch"]


def test_a_shared_tree_claim_under_worktree_isolation_takes_the_branch_in_the_shared_checkout(anvil_env, cli) -> None:
    root = _project(anvil_env)
    cli("config", "--git-mode", "worktree", "--actor", "lead", "--json")
    claim = cli("claim", "T001", "--shared-tree", "--actor", "agent-1", "--json").json()
    assert claim["git_metadata"]["mode"] == "branch" and claim["worktree_path"] is None
    assert current_branch(root) == BRANCH and worktrees(root) == [str(root)]
    refused = cli("claim", "T002", "--shared-tree", "--worktree", "--actor", "agent-2", "--json")
    assert refused.code != 0 and refused.json()["error"]["code"] == "invalid_input"


def test_a_shared_tree_claim_without_a_plan_takes_no_git_step_under_worktree_isolation(anvil_env) -> None:
    """A claim that came over HTTP describes no checkout: worktree isolation refuses it, unless it opts
    into the shared tree (as the reference's shared_tree does)."""
    root = _project(anvil_env)
    op(anvil_env, "configure_project", git_mode="worktree", actor="lead")

    def remote_claim(**args: object) -> dict:
        return invoke("claim_task", {"task_id": "T001", "actor": "agent-1", **args}, env=anvil_env, cwd=str(root),
                      remote=True)

    with pytest.raises(AnvilError) as caught:
        remote_claim()
    assert caught.value.code == "git_plan_required"
    claim = remote_claim(shared_tree=True)
    assert claim["git_metadata"] is None and claim["branch"] is None and claim["worktree_path"] is None
    assert current_branch(root) == "main" and worktrees(root) == [str(root)]


def test_an_explicit_worktree_path_is_taken_relative_to_the_caller(anvil_env, cli) -> None:
    root = _project(anvil_env)
    out = cli("claim", "T001", "--worktree=../elsewhere/t1", "--actor", "agent-1", "--json").json()
    assert out["worktree_path"] == str(root.parent / "elsewhere" / "t1") and (root.parent / "elsewhere" / "t1").is_dir()


def test_a_git_failure_mid_claim_releases_the_claim_and_removes_only_what_it_made(anvil_env, cli) -> None:
    root = _project(anvil_env)
    blocker = Path(f"{root}.worktrees/t001-sqlite-storage-layer")
    blocker.mkdir(parents=True)
    (blocker / "notes.txt").write_text("someone's files\n")
    out = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json")
    error = out.json()["error"]
    assert out.code == 5 and error["code"] == "git_step_failed" and error["details"]["claim_id"]
    assert branches(root) == ["main"] and worktrees(root) == [str(root)]
    assert (blocker / "notes.txt").read_text() == "someone's files\n"
    assert event_types(anvil_env)[-2:] == ["claim.acquired", "claim.released"]
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "ready"


def test_outside_git_a_claim_works_as_before_with_null_git_fields(anvil_env, cli) -> None:
    from tests.ops.support import scenario

    scenario(anvil_env, "ready")
    cli("config", "--git-mode", "branch", "--actor", "lead", "--json")
    claim = cli("claim", "T001", "--actor", "agent-1", "--json").json()
    assert claim["branch"] is None and claim["git_metadata"] is None and claim["attestation_context"] is None
    # No tree of its own: the commands run where the claim was made (the CLI names that directory).
    assert claim["continuation"]["cd"] == os.getcwd() and claim["continuation"]["prove"]


def test_eight_agents_claim_into_eight_worktrees_at_once_without_git_lock_errors(anvil_env) -> None:
    tasks = [f"T{n:03d}" for n in range(1, 9)]
    root = _project(anvil_env, mini_prd(*(mini_task(t) for t in tasks)))
    env = anvil_subprocess_env(anvil_env)
    procs = [subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1); from anvil.cli.main import "
                               "entry; sys.argv[0] = 'anvil'; entry()", "claim", task, "--worktree", "--actor",
                               f"agent-{n}", "--json"], env=env, cwd=root, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n, task in enumerate(tasks)]
    for proc in procs:  # release them together
        assert proc.stdin is not None
        proc.stdin.write(b"x")
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append((proc.returncode, json.loads(out), err.decode()))
    assert [code for code, _, _ in results] == [0] * 8, results
    paths = {doc["worktree_path"] for _, doc, _ in results}
    assert len(paths) == 8 and set(worktrees(root)) == paths | {str(root)}
    for _, doc, _ in results:
        assert current_branch(Path(doc["worktree_path"])) == doc["branch"]


def test_an_interrupted_git_step_releases_the_claim_and_removes_what_it_made(anvil_env, tmp_path) -> None:
    import os
    import signal
    import time

    root = _project(anvil_env)
    mark, gate = tmp_path / "hook-started", tmp_path / "gate"
    os.mkfifo(gate)
    hook = root / ".git" / "hooks" / "post-checkout"  # runs inside `git worktree add`, after it added the tree
    hook.write_text(f"#!/bin/sh\ntouch '{mark}'\nread line < '{gate}'\n")
    hook.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "anvil", "claim", "T001", "--worktree", "--actor", "agent-1",
                             "--json"], env=anvil_subprocess_env(anvil_env), cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():  # the claim is recorded and git is in the middle of its step
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        try:  # let the orphaned hook finish
            os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert proc.returncode == 130 and json.loads(out)["error"]["code"] == "interrupted"
    assert branches(root) == ["main"] and worktrees(root) == [str(root)]
    assert not Path(f"{root}.worktrees").exists()
    assert event_types(anvil_env)[-2:] == ["claim.acquired", "claim.released"]
    assert op(anvil_env, "get_task", task_id="T001")["status"] == "ready"


def test_a_claim_shown_to_people_names_its_worktree_and_the_commands_to_run_there(anvil_env, cli,
                                                                                   monkeypatch) -> None:
    import shlex

    _project(anvil_env)
    monkeypatch.setenv("COLUMNS", "400")  # long temporary paths: no wrapping of the label list
    out = cli("claim", "T001", "--worktree", "--actor", "agent-1").stdout
    claim = op(anvil_env, "get_task", task_id="T001")["claim"]
    lines = [line.strip() for line in out.splitlines()]
    assert f"branch      {BRANCH}" in lines and f"worktree    {claim['worktree_path']}" in lines
    assert f"cd {shlex.quote(claim['continuation']['cd'])}" in lines
    assert shlex.join(claim["continuation"]["prove"][0]["argv"]) in lines
    assert shlex.join(claim["continuation"]["submit"]) in lines


def test_a_submission_binds_the_claim_branch_head_and_refuses_work_that_is_not_committed(anvil_env, cli) -> None:
    _project(anvil_env)
    claim = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    tree = Path(claim["worktree_path"])
    empty = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--json")
    assert empty.code == 5 and empty.json()["error"]["code"] == "no_work_committed"
    (tree / "shortlink" / "store.py").write_text("STORE = 2\n")
    dirty = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--json")
    assert dirty.code == 5 and dirty.json()["error"]["code"] == "uncommitted_work"
    assert dirty.json()["error"]["details"]["paths"] == ["shortlink/store.py"]
    note = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -x", "--category", "diagnostic", "--json")
    assert note.code == 0  # a note hands nothing in
    git(tree, "commit", "-q", "-am", "store")
    head = git(tree, "rev-parse", "HEAD").strip()
    wrong = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--commit", "a" * 40, "--json")
    assert wrong.code == 5 and wrong.json()["error"]["code"] == "commit_not_branch_head"
    unproven = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--json")
    assert unproven.code == 5 and unproven.json()["error"]["code"] == "submission_unproven"
    cli("config", "--evidence-gate", "advisory", "--actor", "lead", "--json")  # the text of a command is accepted
    out = cli("submit", "T001", "--actor", "agent-1", "--command", "pytest -q", "--json").json()
    assert out["commit_sha"] == head
    evidence = op(anvil_env, "get_task", task_id="T001")["history"]["evidence"][0]
    assert (evidence["commit_sha"], evidence["branch"]) == (head, BRANCH)
    assert evidence["tree_sha"] == git(tree, "rev-parse", "HEAD^{tree}").strip()


def test_a_remote_submission_of_a_git_bound_claim_must_name_a_full_commit(anvil_env, cli) -> None:
    root = _project(anvil_env)
    claim = cli("claim", "T001", "--worktree", "--actor", "agent-1", "--json").json()
    tree = Path(claim["worktree_path"])
    (tree / "x.txt").write_text("x\n")
    git(tree, "add", "x.txt")
    git(tree, "commit", "-q", "-m", "x")

    def remote_submit(**args: object) -> dict:
        return invoke("submit_completion_evidence", {"task_id": "T001", "actor": "agent-1",
                                                     "commands_run": ["pytest -q"], **args},
                      env=anvil_env, cwd=str(root), remote=True)  # an MCP host calling a server directly

    for args, code in (({}, "commit_required"), ({"commit_sha": "abc1234"}, "invalid_commit"),
                       ({"commit_sha": claim["git_metadata"]["claim_start_sha"]}, "no_work_committed")):
        with pytest.raises(AnvilError) as refused:
            remote_submit(**args)
        assert refused.value.code == code, args
    head = git(tree, "rev-parse", "HEAD").strip()
    with pytest.raises(AnvilError) as unproven:
        remote_submit(commit_sha=head)
    assert unproven.value.code == "submission_unproven"
    invoke("configure_project", {"evidence_gate": "advisory", "actor": "lead"}, env=anvil_env, cwd=str(root))
    assert remote_submit(commit_sha=head)["commit_sha"] == head  # the server records what the caller sent


def test_item_9_a_worktree_path_alone_is_honoured_by_a_local_server_and_refused_clearly_over_http(
        anvil_env, tmp_path) -> None:
    """Issue 24 item 9: worktree_path without git_mode asks for a worktree on every route: a local
    (stdio) server, on its caller's machine, makes it; an HTTP server, which cannot reach the caller's
    checkout, refuses with git_plan_required; nothing is silently ignored."""
    root = _project(anvil_env)
    where = str(tmp_path / "wt-T001")
    claim = invoke("claim_task", {"task_id": "T001", "actor": "agent-1", "worktree_path": where}, env=anvil_env,
                   cwd=str(root))
    assert claim["worktree_path"] == where and where in worktrees(root)
    with pytest.raises(AnvilError) as info:
        invoke("claim_task", {"task_id": "T002", "actor": "agent-2", "worktree_path": str(tmp_path / "wt-T002")},
               env=anvil_env, cwd=str(root), remote=True)
    assert info.value.code == "git_plan_required"


def test_item_9_a_worktree_asked_for_outside_any_checkout_is_refused_not_ignored(anvil_env, tmp_path) -> None:
    """Issue 24 item 9: a local server outside git used to claim without a worktree and say nothing."""
    from tests.ops.support import scenario

    root = scenario(anvil_env, "ready")
    for arguments in ({"worktree_path": str(tmp_path / "wt")}, {"git_mode": "worktree"}, {"git_mode": "branch"}):
        with pytest.raises(AnvilError) as info:
            invoke("claim_task", {"task_id": "T001", "actor": "agent-1", **arguments}, env=anvil_env, cwd=str(root))
        assert info.value.code == "git_checkout_missing"
    assert op(anvil_env, "claim_task", task_id="T001", actor="agent-1")["git_metadata"] is None
