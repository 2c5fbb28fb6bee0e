"""Real clones around a served project: a bare remote, one clone per person, ``anvil`` on every route.

Shared by the verifier's and the lander's end-to-end tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.ops.invoke import invoke
from anvil.ops.scenarios import STORE_PY, TEST_STORE_PY, proof_environment
from tests import warm
from tests.gitrepo import git, make_repo, plan_in_repo
from tests.mcp.support import Result, ServerProcess, free_port, wait_for_port
from tests.ops.support import op

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


def make_world(env: dict[str, str], route: str, tmp_path: Path) -> Iterator[World]:
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


def implement(world: World, *, commit_test: bool = True) -> tuple[Path, dict[str, Any]]:
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


def scratch_dirs(env: dict[str, str]) -> list[str]:
    """What is left in the temporary directory the CLI of ``env`` uses."""
    return sorted(p.name for p in Path(env["TMPDIR"]).iterdir())




def deliver(world: World, task_id: str, files: dict[str, str], *, who: str = "agent-1",
            verifier: str | None = "runner-1", reviewer: str = "lead") -> tuple[Path, str]:
    """``who`` claims ``task_id`` into a worktree of its clone, writes ``files``, proves the task's
    commands, commits, pushes the claim branch and submits; ``verifier`` re-proves it (None: the
    project accepts client_reported proofs) and ``reviewer`` approves. Returns the claim's tree and
    the approved commit."""
    claim = world.anvil(who, "claim", task_id, "--worktree")
    assert claim.code == 0, claim.doc
    tree = Path(claim.doc["worktree_path"])
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    task = op(world.env, "get_task", task_id=task_id)
    proofs: list[str] = []
    for command in task["verification"]:
        proof = world.anvil(who, "proof", "run", task_id, "--", *command.split(), cwd=tree)
        assert proof.code == 0, (proof.doc, proof.stderr)
        proofs += ["--proof", proof.doc["path"]]
    git(tree, "add", *files)
    git(tree, "commit", "-q", "-m", f"{task_id}: work")
    git(tree, "push", "-q", "origin", claim.doc["branch"])
    submitted = world.anvil(who, "submit", task_id, *proofs, cwd=tree)
    assert submitted.code == 0, submitted.doc
    if verifier is not None:
        verified = world.anvil(verifier, "verify-task", task_id)
        assert verified.code == 0, verified.doc
    approved = world.anvil(reviewer, "apply", task_id, "--approve")
    assert approved.code == 0, approved.doc
    return tree, str(submitted.doc["commit_sha"])
