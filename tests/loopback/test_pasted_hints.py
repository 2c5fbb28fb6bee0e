"""Issue 20 item 4: every command the CLI prints for pasting works pasted as printed, on every route.

An agent that knows nothing but what the CLI prints claims a task, pastes the claim's hints
(``anvil packet``, the heartbeat), the packet's next commands, a refusal's commands and a proof's
``send it`` line, and gets its work handed in and approved by a reviewer: directly, through its stdio
server, and over HTTP with a per-agent token (where no printed command names ``--actor``: the token says who). The
commands run as printed: nothing is added to them, ``cd`` lines change the directory the next
ones run in. The routes are the loopback's (:mod:`tests.loopback.support`), all in this process.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from anvil.mcp.channels import using
from anvil.ops.invoke import invoke
from anvil.ops.scenarios import do_work, proof_environment
from tests.loopback.support import ROUTES, Loopback, RouteResult, captured_logs, run_cli

pytestmark = pytest.mark.xdist_group("pasted_hints")
AGENT_TOKEN_VAR = "AGENT_ONE_TOKEN"
REVIEWER_TOKEN_VAR = "RITA_TOKEN"


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    with captured_logs():
        lb = Loopback(tmp_path_factory.mktemp("pasted"))
        try:
            with lb.http:
                yield lb
        finally:
            lb.close()


class Agent:
    """Runs command lines exactly as pasted into a shell: ``cd DIR`` moves it, ``anvil ...`` runs."""

    def __init__(self, loopback: Loopback, env: dict[str, str]) -> None:
        self.loopback, self.env, self.cwd = loopback, env, str(loopback.root)

    def run(self, line: str) -> RouteResult:
        words = shlex.split(line, comments=True)
        if words[:1] == ["cd"]:
            self.cwd = words[1]
            return RouteResult(0, "", "")
        assert words[:1] == ["anvil"], line
        with using(self.loopback.channels):
            return run_cli(words[1:], self.env, self.cwd)

    def paste(self, lines: list[str]) -> list[RouteResult]:
        results = []
        for line in lines:
            result = self.run(line)
            assert result.code == 0, (line, result.stdout, result.stderr)
            assert "--actor" not in line or AGENT_TOKEN_VAR not in line, f"a token says who: {line}"
            results.append(result)
        return results


def _agent(loopback: Loopback, route: str) -> tuple[Agent, list[str]]:
    """A fresh claimable project and the agent's environment and route flags (over HTTP: its own token)."""
    loopback.reset("ready")
    env = {k: v for k, v in loopback.env.items() if k != "ANVIL_ACTOR"}
    env.update({k: v for k, v in proof_environment().items() if k in ("PATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")})
    flags = loopback.route_flags(route)
    if route == "http":
        issued = invoke("add_token", {"name": "agent-1", "role": "agent", "actor": "lead"}, env=loopback.env,
                        cwd=str(loopback.root))
        env[AGENT_TOKEN_VAR] = issued["token"]
        flags = ["--mcp", loopback.http.url, "--mcp-token-env", AGENT_TOKEN_VAR]
    return Agent(loopback, env), flags


def _reviewer(loopback: Loopback, route: str, agent_env: dict[str, str]) -> tuple[Agent, list[str]]:
    """Someone else, who approves the work on the same route (over HTTP: with a reviewer token)."""
    env = {k: v for k, v in agent_env.items() if k != AGENT_TOKEN_VAR}
    if route != "http":
        return Agent(loopback, env), ["--actor", "rita", *loopback.route_flags(route)]
    issued = invoke("add_token", {"name": "rita", "role": "reviewer", "actor": "lead"}, env=loopback.env,
                    cwd=str(loopback.root))
    env[REVIEWER_TOKEN_VAR] = issued["token"]
    return Agent(loopback, env), ["--mcp", loopback.http.url, "--mcp-token-env", REVIEWER_TOKEN_VAR]


def _hint_commands(text: str, prefix: str) -> list[str]:
    """The commands a hint line starting with ``prefix`` names (``next: A; heartbeat with B``)."""
    for line in text.splitlines():
        if line.startswith(prefix):
            rest = line[len(prefix):]
            return [part.strip().removeprefix("heartbeat with ").strip() for part in rest.split(";")]
    raise AssertionError(f"no {prefix!r} hint in {text!r}")


def _next_commands(markdown: str) -> list[str]:
    lines = markdown.split("\n")
    start = lines.index("## Next commands")
    block = lines[lines.index("```bash", start) + 1:]
    return block[:block.index("```")]


@pytest.mark.parametrize("route", ROUTES)
def test_each_hint_of_claim_packet_refusal_and_proof_works_pasted_on_its_route(loopback: Loopback,
                                                                              route: str) -> None:
    agent, flags = _agent(loopback, route)
    who = [] if route == "http" else ["--actor", "agent-1"]
    claimed = agent.run(shlex.join(["anvil", "claim", "T001", *who, *flags]))
    assert claimed.code == 0, claimed.stderr
    packet_line, renew_line = _hint_commands(claimed.stdout, "next: ")
    assert renew_line.startswith("anvil renew T001 --generation 1")
    pasted = agent.paste([packet_line, renew_line])
    packet_lines = _next_commands(pasted[0].stdout)
    assert packet_lines[0].startswith("cd ") and all(flags == [] or shlex.join(flags) in line
                                                     for line in packet_lines[1:]), packet_lines
    do_work(loopback.root, "T001")
    proofs = agent.paste([line for line in packet_lines if " proof run " in line or line.startswith("cd ")])
    sent = [line.removeprefix("send it: ") for line in proofs[-1].stdout.splitlines() if line.startswith("send it:")]
    assert sent and (route != "http" or "--actor" not in sent[0]), proofs[-1].stdout
    refused = agent.run(shlex.join(["anvil", "submit", "T001", "--command", "pytest -q", *who, *flags]))
    assert refused.code == 5 and "[submission_unproven]" in refused.stderr, refused.stderr
    fixes = [line.strip() for line in refused.stderr.splitlines()[1:] if line.startswith("  ")]
    assert fixes[0].startswith("cd ") and fixes[-1].startswith("anvil submit T001"), fixes
    handed = agent.paste(fixes)[-1]
    assert "handed in" in handed.stdout and "for review" in handed.stdout, handed.stdout
    shown = json.loads(agent.run(shlex.join(["anvil", "show", "T001", "--json", *flags])).stdout)
    assert shown["status"] == "needs_review" and shown["history"]["evidence"][0]["trust"]["trust_level"] == \
        "client_reported"
    reviewer, reviewer_flags = _reviewer(loopback, route, agent.env)
    approved = reviewer.run(shlex.join(["anvil", "apply", "T001", "--approve", "--json", *reviewer_flags]))
    assert approved.code == 0 and json.loads(approved.stdout)["to_status"] == "done", approved.stderr


@pytest.mark.parametrize("route", ROUTES)
def test_the_json_continuation_of_a_claim_works_pasted_on_its_route(loopback: Loopback, route: str) -> None:
    agent, flags = _agent(loopback, route)
    who = [] if route == "http" else ["--actor", "agent-1"]
    claimed = agent.run(shlex.join(["anvil", "claim", "T001", "--json", *who, *flags]))
    steps = json.loads(claimed.stdout)["continuation"]
    assert steps["cd"] == str(loopback.root)
    assert all(("--actor" in argv) == (route != "http") for argv in [steps["submit"], steps["renew"]])
    do_work(Path(steps["cd"]), "T001")
    lines = [f"cd {shlex.quote(steps['cd'])}", shlex.join(steps["renew"]),
             *[shlex.join(step["argv"]) for step in steps["prove"]], shlex.join([*steps["submit"], "--json"])]
    handed = agent.paste(lines)[-1]
    assert json.loads(handed.stdout)["task_status"] == "needs_review"
