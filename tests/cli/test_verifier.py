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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from anvil.engine.proof.verification import approved_commit
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY, proof_environment
from tests import warm
from tests.backends import backend_env  # noqa: F401 - the fixture
from tests.gitrepo import git, make_repo, plan_in_repo, worktrees
from tests.mcp.support import Result, ServerProcess, free_port, wait_for_port
from tests.ops.support import assert_replays, op, store_of

VERIFY = ["python", "-m", "unittest", "-q", "tests/test_store.py"]
TOKEN_VAR = "ANVIL_VERIFIER_TEST_TOKEN"
ROUTES = ("direct", "stdio", "http")
PEOPLE = {"agent-1": "agent", "rita": "reviewer", "runner-1": "runner", "lead": "lead"}


@dataclass
class World:
    """A served project (the state's repository), a bare remote, and one clone per person."""

    env: dict[str, str]
    route: str
    served: Path
    remote: Path
    server: ServerProcess | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    clones: dict[str, Path] = field(default_factory=dict)

    def clone(self, who: str) -> Path:
        if who not in self.clones:
            path = self.served.parent / f"clone-{who}"
            git(self.served.parent, "clone", "-q", str(self.remote), str(path))
            git(path, "config", "user.email", f"{who}@example.com")
            git(path, "config", "user.name", who)
            self.clones[who] = path
        return self.clones[who]

    def anvil(self, who: str, *argv: str, cwd: Path | None = None) -> Result:
        """``anvil ARGV --json`` as ``who`` in its clone (or ``cwd``), on this world's route."""
        env = dict(self.env)
        route: list[str] = []
        if self.route == "http":
            assert self.server is not None
            env[TOKEN_VAR] = self.tokens[who]
            route = ["--mcp", self.server.url, "--mcp-token-env", TOKEN_VAR]
        else:
            env["ANVIL_ACTOR"] = who
            route = ["--mcp", "stdio"] if self.route == "stdio" else []
        cut = argv.index("--") if "--" in argv else len(argv)  # a proved command comes last
        proc = warm.anvil([*argv[:cut], "--json", *route, *argv[cut:]], env=env, cwd=cwd or self.clone(who),
                          timeout=180)
        assert "Traceback" not in proc.stderr, proc.stderr
        return Result(proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr)


def _world(env: dict[str, str], route: str, tmp_path: Path) -> Iterator[World]:
    served = make_repo(Path(env["ANVIL_ROOT"]))
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(served, "remote", "add", "origin", str(remote))
    git(served, "push", "-q", "origin", "main")
    plan_in_repo(env)
    op(env, "configure_project", git_mode="worktree", actor="lead")  # require_verified auto: on
    # No PYTHONPATH to this checkout: its ``tests`` package would shadow the sample's ``tests`` folder.
    child = {k: v for k, v in env.items() if k != "ANVIL_ACTOR"}
    child.update({k: v for k, v in proof_environment().items() if k == "PATH" or k.startswith("PYTEST")})
    scratch = tmp_path / "tmp"  # the CLI's own temporary directory: where its scratch worktrees go
    scratch.mkdir()
    child["TMPDIR"] = str(scratch)
    world = World(child, route, served, remote)
    for name in PEOPLE:  # before any work is pushed: a verifier fetches the submitted commit itself
        world.clone(name)
    if route == "http":  # tokens first: the server authenticates every request by token from its start
        for name, role in PEOPLE.items():
            world.tokens[name] = invoke("add_token", {"name": name, "role": role}, env=env, cwd=str(served))["token"]
        port = free_port()
        process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=child, cwd=served,
                                   stdout=tmp_path / "server.log")
        world.server = ServerProcess(process, port, tmp_path / "server.log")
        wait_for_port(port, process=process)
    try:
        yield world
    finally:
        if world.server is not None:
            log = world.server.stop()
            assert all(token not in log for token in world.tokens.values())


@pytest.fixture(params=ROUTES)
def world(request: pytest.FixtureRequest, backend_env: dict[str, str], tmp_path: Path) -> Iterator[World]:  # noqa: F811
    yield from _world(backend_env, request.param, tmp_path)


def _implement(world: World, *, commit_test: bool = True) -> tuple[Path, dict[str, Any]]:
    """agent-1 claims T001 in its clone, does and proves the work, commits and pushes it, and submits."""
    claim = world.anvil("agent-1", "claim", "T001", "--worktree")
    assert claim.code == 0, claim.doc
    tree = Path(claim.doc["worktree_path"])
    for name, text in (("shortlink/__init__.py", ""), ("shortlink/store.py", STORE_PY),
                       ("tests/test_store.py", TEST_STORE_PY)):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    proof = world.anvil("agent-1", "proof", "run", "T001", "--", *VERIFY, cwd=tree)
    assert proof.code == 0 and proof.doc["trust_mode"] == "client_reported", proof.doc
    git(tree, "add", "shortlink", *(["tests"] if commit_test else []))
    git(tree, "commit", "-q", "-m", "T001: storage layer")
    git(tree, "push", "-q", "origin", claim.doc["branch"])
    submitted = world.anvil("agent-1", "submit", "T001", "--proof", proof.doc["path"], cwd=tree)
    assert submitted.code == 0, submitted.doc
    return tree, submitted.doc


def _scratch_dirs(env: dict[str, str]) -> list[str]:
    """What is left in the temporary directory the CLI of ``env`` uses."""
    return sorted(p.name for p in Path(env["TMPDIR"]).iterdir())


def test_the_trust_loop_runs_on_every_route_and_backend(world: World) -> None:
    tree, submitted = _implement(world)
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
    assert worktrees(runner) == [str(runner)] and _scratch_dirs(world.env) == []  # the scratch worktree is gone
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
    yield from _world(anvil_env, "direct", tmp_path)


def test_a_verifiers_failing_run_is_recorded_and_refutes_the_implementers_pass(direct_world: World) -> None:
    """The implementer's test file never reached the commit: it passed in its tree, fails in a clean one."""
    world = direct_world
    _implement(world, commit_test=False)
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
    tree, submitted = _implement(world)
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
    _implement(world)
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
    assert worktrees(served) == [str(served)] and _scratch_dirs(env) == []
    assert "task.verified" not in event_types(anvil_env)
