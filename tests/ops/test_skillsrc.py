"""Every command line of every shipped skill, run as written against a real project, on each route.

One team per route works a real git repository with a bare remote, each person in a clone of their own:
the lead follows anvil-resolve-decisions and anvil-plan from an uninitialized project to ready tasks, an
agent follows anvil-execute (claim-next and release; then next, claim, packet, renew, attest, progress,
proof, commit and push, submit, for two tasks), and a reviewer follows anvil-review (the queue, show,
verify-task and approve for one, reject for the other). Each line is taken from the SKILL.md text, its
variables given the values the agent read from earlier answers, and run as a real ``anvil`` process:
directly, with ``--mcp stdio`` (the CLI in this process, its server on a pipe pair, as in the
loopback suite), and with ``--mcp URL --mcp-token-env NAME`` against a real
``anvil serve --http`` holding per-person tokens (then no line names who acts: the token does).
"""

from __future__ import annotations

import functools
import json
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from anvil.cli.install import shipped_skills
from anvil.mcp.channels import Channels, using
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import do_work, proof_environment
from anvil.ops.skillgen import VARIABLE, command_lines, render_line, substitute
from anvil.ops.skillmodel import Shell
from anvil.ops.skillsrc import EXECUTE, PLAN, RESOLVE, REVIEW, SKILLS
from tests import warm
from tests.gitrepo import git, make_repo
from tests.loopback.support import StdioServerThread, run_cli, spawn_stdio_server
from tests.mcp.support import ServerProcess, free_port, wait_for_port

pytestmark = pytest.mark.xdist_group("skill-routes")
ROUTES = ("direct", "stdio", "http")
TOKEN_VAR = "ANVIL_SKILL_TEST_TOKEN"
PEOPLE = {"lead": "lead", "agent-1": "agent", "rita": "reviewer"}


def skill_text_lines(name: str) -> list[str]:
    """The command lines of a SKILL.md as an agent reads them: each line of its ``sh`` blocks."""
    text = shipped_skills()[name].decode("utf-8")
    blocks = text.split("```sh\n")[1:]
    return [line for block in blocks for line in block.split("\n```")[0].splitlines()]


@dataclass
class Team:
    """A served repository, its bare remote, one clone per person, and the route the CLI takes."""

    route: str
    base: Path
    env: dict[str, str]
    served: Path
    remote: Path
    clones: dict[str, Path] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    server: ServerProcess | None = None
    ran: set[tuple[str, str]] = field(default_factory=set)

    def clone(self, who: str) -> Path:
        if who not in self.clones:
            path = self.base / f"clone-{who}"
            git(self.base, "clone", "-q", str(self.remote), str(path))
            git(path, "config", "user.email", f"{who}@example.com")
            git(path, "config", "user.name", who)
            self.clones[who] = path
        return self.clones[who]

    def start_server(self) -> None:
        """Tokens for every person, then ``anvil serve --http`` (it authenticates by them from its start)."""
        for name, role in PEOPLE.items():
            self.tokens[name] = invoke("add_token", {"name": name, "role": role}, env=self.env,
                                       cwd=str(self.served))["token"]
        port = free_port()
        log = self.base / "server.log"
        process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env=self.env, cwd=self.served,
                                   stdout=log)
        self.server = ServerProcess(process, port, log)
        wait_for_port(port, process=process)

    def line(self, skill: Any, key: str) -> list[str]:
        """The words of the skill's line ``key``, read from its SKILL.md (checked to be there verbatim)."""
        rendered = render_line(skill.lines[key])
        assert rendered in skill_text_lines(skill.name), rendered
        return shlex.split(rendered.split("   # ")[0])

    def run(self, who: str, skill: Any, key: str, values: dict[str, Any], cwd: Path | None = None,
            direct: bool = False) -> subprocess.CompletedProcess[str]:
        """Run line ``key`` of ``skill`` as ``who`` in its clone (or ``cwd``), on the team's route."""
        words = self.line(skill, key)
        where = cwd or self.clone(who)
        env = dict(self.env)
        if isinstance(skill.lines[key], Shell):
            env.update({name: str(value) for name, value in values.items() if isinstance(value, str)})
            proc = subprocess.run(["bash", "-c", render_line(skill.lines[key])],
                                  env=env, cwd=where, capture_output=True, text=True, timeout=120)
        else:
            assert words[0] == "anvil"
            argv = substitute(words[1:], values)
            assert not any(VARIABLE.match(word) for word in argv)
            route: list[str] = []
            if self.route == "http" and not direct:
                assert self.server is not None
                env[TOKEN_VAR] = self.tokens[who]
                route = ["--mcp", self.server.url, "--mcp-token-env", TOKEN_VAR]
            else:
                env["ANVIL_ACTOR"] = who
                route = ["--mcp", "stdio"] if self.route == "stdio" and not direct else []
            cut = argv.index("--") if "--" in argv else len(argv)
            argv = [*argv[:cut], *route, *argv[cut:]]
            proc = in_process_stdio(argv, env, where) if route[-1:] == ["stdio"] else \
                warm.anvil(argv, env=env, cwd=where, timeout=180)
        assert proc.returncode == 0, (skill.name, key, self.route, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        assert all(token not in proc.stdout + proc.stderr for token in self.tokens.values())
        self.ran.add((skill.name, key))
        return proc


def in_process_stdio(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``anvil ARGV --mcp stdio`` with the CLI in this process and the server it spawns on a pipe pair in a
    thread (the loopback suite's channel): a spawned ``python -m anvil.mcp`` per line would cost seconds."""
    servers: list[StdioServerThread] = []

    def no_http(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the stdio route opened an HTTP connection")

    with using(Channels(spawn=functools.partial(spawn_stdio_server, started=servers), open_http=no_http)):
        result = run_cli(argv, env, str(cwd))
    for server in servers:
        assert server.wait() == 0 and not server.killed, server.failure
    assert servers, "the stdio route reached no server"
    return subprocess.CompletedProcess(argv, result.code, result.stdout, result.stderr)


@pytest.fixture(params=ROUTES)
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Team]:
    served = make_repo(tmp_path / "project")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(served, "remote", "add", "origin", str(remote))
    git(served, "push", "-q", "origin", "main")
    scratch = tmp_path / "tmp"  # the CLI's temporary directory: verify-task's scratch worktrees go there
    scratch.mkdir()
    env = {k: v for k, v in proof_environment().items() if not k.startswith("ANVIL_")}
    env.update(ANVIL_ROOT=str(served), ANVIL_HOME=str(tmp_path / "home"), TMPDIR=str(scratch), COLUMNS="200")
    env.pop("PYTHONPATH", None)  # this checkout's ``tests`` package would shadow the sample's ``tests`` folder
    world = Team(request.param, tmp_path, env, served, remote)
    try:
        yield world
    finally:
        if world.server is not None:
            log = world.server.stop()
            assert all(token not in log for token in world.tokens.values())


def lead_plans(team: Team) -> None:
    """anvil-plan with anvil-resolve-decisions, from an uninitialized project to ready tasks."""
    values = {"PRD": "docs/prd.md", "NEW_PRD": "docs/new-prd.md"}
    lead, here = "lead", team.served
    team.run(lead, PLAN, "init", values, cwd=here, direct=True)  # on the machine that holds the state
    if team.route == "http":
        team.start_server()
    for key in ("template", "format", "check", "parse"):
        team.run(lead, PLAN, key, values, cwd=here)
    assert (here / "docs" / "new-prd.md").is_file()  # written where the CLI runs, on every route
    for key in ("decisions", "check", "parse", "again"):
        team.run(lead, RESOLVE, key, values, cwd=here)
    for key in ("assess", "decisions", "review", "approve", "plan", "score", "promote"):
        team.run(lead, PLAN, key, values, cwd=here)
    ready = team.run(lead, PLAN, "ready", values, cwd=here)
    assert "T001" in ready.stdout and "T002" in ready.stdout
    invoke("configure_project", {"git_mode": "worktree", "land_target": "main", "land_remote": "origin",
                                 "actor": "lead"}, env=team.env, cwd=str(here))


def agent_works(team: Team) -> list[str]:
    """anvil-execute: one claim given back, then two tasks done, proved, committed, pushed and submitted."""
    agent = "agent-1"
    taken = json.loads(team.run(agent, EXECUTE, "claim_next", {}).stdout)
    task, gen = taken["claim"]["task_id"], str(taken["claim"]["generation"])
    team.run(agent, EXECUTE, "release", {"TASK": task, "GEN": gen}, cwd=Path(taken["claim"]["worktree_path"]))
    submitted = []
    for _ in range(2):
        found = json.loads(team.run(agent, EXECUTE, "next", {}).stdout)
        task = found["task"]["id"]
        claim = json.loads(team.run(agent, EXECUTE, "claim", {"TASK": task}).stdout)
        tree, gen = Path(claim["worktree_path"]), str(claim["generation"])
        values: dict[str, Any] = {"TASK": task, "GEN": gen, "ATTEST": ".anvil/proofs/progress.json",
                                  "PROOF": ".anvil/proofs/proof.json"}
        team.run(agent, EXECUTE, "packet", values, cwd=tree)
        do_work(tree, task)  # the work itself
        for key in ("renew", "attest", "progress"):
            team.run(agent, EXECUTE, key, values, cwd=tree)
        commands = invoke("get_task", {"task_id": task}, env=team.env, cwd=str(team.served))["verification"]
        assert len(commands) == 1  # the sample's tasks have one each: one --proof
        team.run(agent, EXECUTE, "proof", {**values, "COMMAND": shlex.split(commands[0])}, cwd=tree)
        team.run(agent, EXECUTE, "commit", values, cwd=tree)
        team.run(agent, EXECUTE, "submit", values, cwd=tree)
        submitted.append(task)
    return submitted


def reviewer_decides(team: Team, approve: str, reject: str) -> None:
    """anvil-review: the queue, then verify and approve one submission, reject the other."""
    rita = "rita"
    queue = team.run(rita, REVIEW, "queue", {})
    assert approve in queue.stdout and reject in queue.stdout
    team.run(rita, REVIEW, "show", {"TASK": approve})
    team.run(rita, REVIEW, "verify", {"TASK": approve})
    team.run(rita, REVIEW, "approve", {"TASK": approve})
    team.run(rita, REVIEW, "show", {"TASK": reject})
    team.run(rita, REVIEW, "reject", {"TASK": reject})


def lead_lands(team: Team, task: str) -> None:
    """anvil-review's landing step, as the lead in a clone of its own: the approved task reaches main."""
    queue = team.run("lead", REVIEW, "queue_landing", {}, cwd=team.clone("lead"))
    assert task in queue.stdout
    team.run("lead", REVIEW, "land", {"TASK": task}, cwd=team.clone("lead"))
    landed = git(team.base, "--git-dir", str(team.remote), "log", "--format=%s", "main")
    assert task in landed, landed


def test_every_skill_command_line_runs_on_a_real_project(team: Team) -> None:
    lead_plans(team)
    first, second = agent_works(team)
    reviewer_decides(team, first, second)
    lead_lands(team, first)
    status = {task: invoke("get_task", {"task_id": task}, env=team.env, cwd=str(team.served))["status"]
              for task in (first, second)}
    assert status == {first: "done", second: "drafted"}
    every = {(skill.name, key) for skill in SKILLS for key in skill.lines}
    assert every - team.ran == set(), "a skill line no path runs"
    assert all(command_lines(skill) for skill in SKILLS)
