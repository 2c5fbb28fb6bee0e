"""``anvil verify-task`` end to end: the whole trust loop in real repositories with a real bare remote, on
every route (direct, stdio, HTTP with agent, reviewer and runner tokens) and on both storage backends.

An implementer claims a task in its own clone, proves and commits the work, pushes the claim branch and
submits (binding the branch head); approval under the enforcing gate with require_verified (auto: on
in a git mode) refuses the implementer's client_reported proofs and names `anvil verify-task`; the
implementer may not verify its own work; a runner in another clone fetches the commit, re-proves it in
a scratch worktree that is removed afterwards, and the approval then records that commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from anvil.engine.proof.verification import approved_commit
from tests.backends import backend_env  # noqa: F401 - the fixture
from tests.cli.support import ROUTES, VERIFY, World, implement, make_world, scratch_dirs
from tests.gitrepo import git, make_repo, plan_in_repo, worktrees
from tests.ops.support import assert_replays, op, store_of


@pytest.fixture(params=ROUTES)
def world(request: pytest.FixtureRequest, backend_env: dict[str, str], tmp_path: Path) -> Iterator[World]:  # noqa: F811
    yield from make_world(backend_env, request.param, tmp_path)


def test_the_trust_loop_runs_on_every_route_and_backend(world: World) -> None:
    tree, submitted = implement(world)
    head = git(tree, "rev-parse", "HEAD").strip()
    assert submitted["commit_sha"] == head
    assert [p["trust_mode"] for p in submitted["claim_bound_command_proofs"]] == ["client_reported"]
    refused = world.anvil("lead", "apply", "T001", "--approve")
    assert (refused.code, refused.error) == (5, "claim_unproven")
    assert "verified" in refused.doc["error"]["message"] and "anvil verify-task T001" in refused.doc["error"]["message"]
    assert refused.doc["error"]["details"]["next_command"] == ["anvil", "verify-task", "T001"]
    own = world.anvil("agent-1", "verify-task", "T001")
    assert own.code in (4, 5) and own.error == ("forbidden_by_role" if world.route == "http"
                                                else "verifier_is_implementer"), own.doc
    verified = world.anvil("runner-1", "verify-task", "T001")
    assert verified.code == 0, verified.doc
    doc = verified.doc
    assert doc["passed"] and doc["trust_level"] == "verified"
    assert doc["commit_sha"] == head and doc["verifier"] == "runner-1" and doc["fetched_from"] == "origin"
    assert [r["command"] for r in doc["results"]] == [" ".join(VERIFY)] and doc["unverified_commands"] == []
    runner = world.clone("runner-1")
    assert worktrees(runner) == [str(runner)] and scratch_dirs(world.env) == []  # the scratch worktree is gone
    assert git(runner, "status", "--porcelain") == ""
    shown = world.anvil("rita", "show", "T001")
    evidence = shown.doc["history"]["evidence"][0]
    assert evidence["trust"]["trust_level"] == "verified" and evidence["commit_sha"] == head
    assert evidence["tree_sha"] == git(tree, "rev-parse", "HEAD^{tree}").strip()
    assert {p["trust_mode"] for p in evidence["proofs"]} == {"client_reported", "verified"}
    if world.route == "http":
        assert world.anvil("runner-1", "claim", "T002").error == "forbidden_by_role"
        assert world.anvil("runner-1", "apply", "T001", "--approve").error == "forbidden_by_role"
    decided = world.anvil("rita", "apply", "T001", "--approve")
    assert decided.code == 0, decided.doc
    assert decided.doc["commit_sha"] == head and decided.doc["trust_level"] == "verified"
    with store_of(world.env) as store:
        approved = approved_commit(store.conn, "T001")
    assert approved is not None and approved["commit"] == head and approved["branch"] == submitted_branch(world)
    assert approved["verified_commands"] == [" ".join(VERIFY)]
    assert_replays(world.env)


def submitted_branch(world: World) -> str:
    return str(op(world.env, "get_task", task_id="T001")["history"]["evidence"][0]["branch"])


@pytest.fixture
def direct_world(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[World]:
    yield from make_world(anvil_env, "direct", tmp_path)


def test_a_verifiers_failing_run_is_recorded_and_refutes_the_implementers_pass(direct_world: World) -> None:
    """The implementer's test file never reached the commit: it passed in its tree, fails in a clean one."""
    world = direct_world
    implement(world, commit_test=False)
    failed = world.anvil("runner-1", "verify-task", "T001")
    assert failed.code == 5 and failed.doc["passed"] is False, failed.doc
    assert failed.doc["failed_commands"] == [" ".join(VERIFY)] and failed.doc["trust_level"] == "client_reported"
    refused = world.anvil("lead", "apply", "T001", "--approve")
    assert refused.error == "claim_unproven" and "when runner-1 verified" in refused.doc["error"]["message"]
    op(world.env, "configure_project", require_verified="off", actor="lead")
    still = world.anvil("lead", "apply", "T001", "--approve")  # a refuted pass counts at any trust level
    assert still.error == "claim_unproven" and "failed (exit" in still.doc["error"]["message"]
    task = op(world.env, "get_task", task_id="T001")
    assert task["history"]["evidence"][0]["trust"]["failed_verifications"][0]["verifier"] == "runner-1"


def test_an_approval_names_its_commit_and_a_later_commit_on_the_branch_does_not_move_it(direct_world: World) -> None:
    world = direct_world
    tree, submitted = implement(world)
    assert world.anvil("runner-1", "verify-task", "T001").code == 0
    assert world.anvil("lead", "apply", "T001", "--approve").code == 0
    (tree / "later.txt").write_text("after the review\n")
    git(tree, "add", "later.txt")
    git(tree, "commit", "-q", "-m", "later")
    with store_of(world.env) as store:
        approved = approved_commit(store.conn, "T001")
        assert approved is not None and approved["commit"] == submitted["commit_sha"]
        assert approved["commit"] != git(tree, "rev-parse", "HEAD").strip()  # the lander sees it is stale
        assert approved_commit(store.conn, "T002") is None


def test_verification_without_a_submitted_commit_or_a_clone_is_refused_before_anything_runs(
        direct_world: World, tmp_path: Path) -> None:
    world = direct_world
    implement(world)
    outside = tmp_path / "not-a-clone"
    outside.mkdir()
    out = world.anvil("runner-1", "verify-task", "T001", cwd=outside)
    assert (out.code, out.error) == (5, "git_checkout_required")
    lonely = tmp_path / "lonely"
    git(tmp_path, "init", "-q", str(lonely))
    missing = world.anvil("runner-1", "verify-task", "T001", cwd=lonely)
    assert (missing.code, missing.error) == (5, "commit_unavailable")
    assert world.anvil("runner-1", "verify-task", "T002").error == "not_in_review"


def test_a_verified_command_never_sees_the_verifiers_token_or_anvils_variables() -> None:
    from anvil.engine.proof.runner import command_environment

    env = {"PATH": "/bin", "ANVIL_ROOT": "/p", "ANVIL_SIGNING_KEY": "k", "MY_TOKEN": "anvil_tk_x", "PGPASSWORD": "pw",
           "HOME": "/home/r"}
    assert command_environment(env, "MY_TOKEN") == {"PATH": "/bin", "HOME": "/home/r"}


SLOW_TASK = ("### T001: Slow\n\n**Feature:** F001\n**Priority:** high\n**Type:** feature\n**Likely files:** slow.py\n"
             "**Dependencies:** none\n**Acceptance criteria:**\n- It is slow.\n**Verification:**\n- `python slow.py`\n")
SLOW_PY = "import os, pathlib, time\npathlib.Path(os.environ['VERIFY_MARK']).touch()\ntime.sleep(120)\n"


def test_an_interrupted_verification_removes_its_scratch_worktree_and_records_nothing(
        anvil_env: dict[str, str], tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import interruptible
    from tests.ops.support import event_types, mini_prd

    served = make_repo(Path(anvil_env["ANVIL_ROOT"]))
    plan_in_repo(anvil_env, mini_prd(SLOW_TASK))
    claim = op(anvil_env, "claim_task", task_id="T001", actor="agent-1", git_mode="off")
    (served / "slow.py").write_text(SLOW_PY)
    git(served, "add", "slow.py")
    git(served, "commit", "-q", "-m", "slow")
    head = git(served, "rev-parse", "HEAD").strip()
    op(anvil_env, "configure_project", evidence_gate="advisory", actor="lead")  # handed in without a proof
    op(anvil_env, "submit_completion_evidence", task_id="T001", actor="agent-1", commands_run=["python slow.py"],
       commit_sha=head, generation=claim["generation"])
    mark = tmp_path / "started"
    (tmp_path / "tmp").mkdir()
    env = {**anvil_env, "ANVIL_ACTOR": "runner-1", "VERIFY_MARK": str(mark), "TMPDIR": str(tmp_path / "tmp")}
    with subprocess.Popen([sys.executable, "-m", "anvil", "verify-task", "T001", "--json"], env=env, cwd=served,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible) as proc:
        deadline = time.monotonic() + 60
        while not mark.exists():  # the command runs in the scratch worktree
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        assert len(worktrees(served)) == 2
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and json.loads(out)["error"]["code"] == "interrupted"
    assert worktrees(served) == [str(served)] and scratch_dirs(env) == []
    assert "task.verified" not in event_types(anvil_env)
