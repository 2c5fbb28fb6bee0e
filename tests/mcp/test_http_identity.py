"""Per-agent tokens over real HTTP: a server process, several tokens, the anvil CLI as the client.

Every command, its output, the server's log and the project's stored files are captured, and no
token value may appear in any of them (the one exception: the output of the `token add` that
issued it). Tokens reach the CLI only through the variable named by ``--mcp-token-env``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest

from anvil.engine.storage.paths import resolve_state
from anvil.ops.invoke import invoke
from anvil.ops.registry import all_operations
from anvil.ops.scenarios import build_scenario
from tests import warm
from tests.conftest import anvil_subprocess_env
from tests.mcp.support import Result, ServerProcess, free_port, wait_for_port

TOKEN_VAR = "ANVIL_TEST_TOKEN"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}
LIST_HEADERS = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


@dataclass
class Team:
    """A project served over HTTP with per-agent tokens, and everything said along the way."""

    env: dict[str, str]
    root: Path
    server: ServerProcess
    tokens: dict[str, str] = field(default_factory=dict)
    captured: list[str] = field(default_factory=list)

    def _run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        proc = warm.anvil(argv, env=env, cwd=self.root)
        self.captured += [" ".join(argv), proc.stdout, proc.stderr]
        return proc

    def issue(self, name: str, role: str) -> None:
        """``token add`` run directly on the server's machine; keeps the token (its one showing)."""
        self.tokens[name] = invoke("add_token", {"name": name, "role": role}, env=self.env, cwd=str(self.root))["token"]

    def as_(self, who: str | None, *argv: str, token: str | None = None) -> Result:
        """Run ``anvil ARGV --json`` over HTTP with ``who``'s token (None: no token variable at all)."""
        env = dict(self.env)
        route = ["--mcp", self.server.url]
        if who is not None or token is not None:
            env[TOKEN_VAR] = token if token is not None else self.tokens[who]  # type: ignore[index]
            route += ["--mcp-token-env", TOKEN_VAR]
        proc = self._run([*argv, "--json", *route], env)
        assert "Traceback" not in proc.stderr, proc.stderr
        return Result(proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr)

    def listed_tools(self, who: str) -> set[str]:
        response = httpx2.post(self.server.url, json=LIST, timeout=30,
                               headers={**LIST_HEADERS, "Authorization": f"Bearer {self.tokens[who]}"})
        assert response.status_code == 200
        self.captured.append(response.text)
        return {tool["name"] for tool in response.json()["result"]["tools"]}

    def stored(self) -> str:
        location = resolve_state(self.env, str(self.root))
        files = [p for p in location.state_dir.rglob("*") if p.is_file()]
        return "\n".join(p.read_bytes().decode("utf-8", errors="replace") for p in files)


@pytest.fixture
def team(anvil_env: dict[str, str], tmp_path: Path) -> Iterator[Team]:
    """The "claimed" sample (agent-1 holds T001), tokens for two agents, a reviewer and a lead, and a
    server started without planning mode and without a shared token (the bundle tools forced listed:
    these tests are about what each role sees)."""
    env = anvil_subprocess_env({k: v for k, v in anvil_env.items() if k != "ANVIL_ACTOR"})
    root = Path(anvil_env["ANVIL_ROOT"])
    build_scenario("claimed", {**env, "ANVIL_ACTOR": "lead"}, str(root))
    port = free_port()
    log = tmp_path / "server.log"
    process = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port)], env={**env, "ANVIL_MCP_BUNDLES": "1"},
                               cwd=root, stdout=log)
    server = ServerProcess(process, port, log)
    try:
        wait_for_port(port, process=process)
        team = Team(env, root, server)
        for name, role in (("agent-1", "agent"), ("agent-2", "agent"), ("rita", "reviewer"), ("lead", "lead")):
            team.issue(name, role)
        yield team
    finally:
        server_log = server.stop()
    everything = "\n".join([*team.captured, server_log, team.stored()])
    for name, token in team.tokens.items():
        assert token not in everything, f"the token of {name} leaked"
        secret = token.split("_", 2)[2] if token.startswith("anvil_") else token
        assert secret not in everything, f"the secret part of {name}'s token leaked"


def test_one_agent_cannot_touch_another_agents_claim(team: Team) -> None:
    for argv in (("renew", "T001"), ("progress", "T001", "--notes", "mine now"),
                 ("submit", "T001", "--command", "true"), ("task-status", "T001", "blocked")):
        result = team.as_("agent-2", *argv)
        assert (result.code, result.error) == (5, "not_owner"), argv
    posing = team.as_("agent-2", "renew", "T001", "--actor", "agent-1")
    assert (posing.code, posing.error) == (4, "actor_mismatch")
    takeover = team.as_("agent-2", "release", "T001", "--yes")
    assert (takeover.code, takeover.error) == (4, "forbidden_by_role")
    own = team.as_("agent-1", "renew", "T001")
    assert own.code == 0 and own.doc["actor_identity"] == {
        "actor": "agent-1", "authenticated": True, "how": "token", "role": "agent", "notice": None}
    taken = team.as_("lead", "release", "T001", "--yes", "--reason", "reassigning")
    assert taken.code == 0 and taken.doc["actor_identity"]["role"] == "lead"


def test_an_agent_cannot_approve_and_a_reviewer_cannot_approve_their_own_work(team: Team) -> None:
    refused = team.as_("agent-1", "submit", "T001", "--command", "pytest -q")
    assert (refused.code, refused.error) == (5, "submission_unproven")  # no proof: the claim stays live
    commands = refused.doc["error"]["details"]["next_commands"]
    assert all("--actor" not in argv and "--mcp-token-env" in argv for argv in commands), commands  # the token says who
    assert team.as_("lead", "config", "--evidence-gate", "advisory").code == 0  # commands as text are accepted
    assert team.as_("agent-1", "submit", "T001", "--command", "pytest -q").code == 0
    assert team.as_("lead", "config", "--evidence-gate", "enforcing").code == 0
    denied = team.as_("agent-1", "apply", "T001", "--approve")
    assert (denied.code, denied.error) == (4, "forbidden_by_role")
    claimed = team.as_("rita", "claim-next")
    assert claimed.code == 0 and claimed.doc["claim"]["claimed_by"] == "rita"
    task = claimed.doc["claim"]["task_id"]
    assert team.as_("lead", "config", "--evidence-gate", "advisory").code == 0
    assert team.as_("rita", "submit", task, "--command", "pytest -q").code == 0
    assert team.as_("lead", "config", "--evidence-gate", "enforcing").code == 0
    own = team.as_("rita", "apply", task, "--approve")
    assert (own.code, own.error) == (5, "self_review_forbidden")
    unproven = team.as_("rita", "apply", "T001", "--approve")
    assert (unproven.code, unproven.error) == (5, "claim_unproven")
    assert team.as_("lead", "config", "--evidence-gate", "advisory").code == 0
    approved = team.as_("rita", "apply", "T001", "--approve")
    assert approved.code == 0 and approved.doc["reviewer"] == "rita" and approved.doc["to_status"] == "done"
    rejected = team.as_("lead", "apply", task, "--reject", "--reason", "no test", "--reason-code", "quality")
    assert rejected.code == 0
    history = team.as_("lead", "show", task).doc["history"]["reviews"][0]
    assert (history["reviewer"], history["reviewer_role"], history["reviewer_authenticated"]) == ("lead", "lead", True)


def test_a_revoked_token_is_refused_on_its_next_request(team: Team) -> None:
    assert team.as_("agent-2", "list").code == 0
    revoked = team.as_("lead", "token", "revoke", "agent-2")
    assert revoked.code == 0 and revoked.doc["count"] == 1
    after = team.as_("agent-2", "list")
    assert (after.code, after.error) == (4, "auth_failed")
    assert "--mcp-token-env" in after.doc["error"]["message"] and TOKEN_VAR in after.doc["error"]["message"]
    assert team.as_("agent-1", "list").code == 0


def test_a_missing_or_wrong_token_gets_a_bearer_challenge_that_says_which(team: Team) -> None:
    missing = httpx2.post(team.server.url, json=LIST, headers=LIST_HEADERS, timeout=30)
    wrong = httpx2.post(team.server.url, json=LIST, timeout=30,
                        headers={**LIST_HEADERS, "Authorization": "Bearer anvil_tk000001_" + "x" * 43})
    for response in (missing, wrong):
        team.captured.append(response.text + repr(response.headers))
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer ")
    assert 'error="invalid_token"' not in missing.headers["www-authenticate"]
    assert missing.json()["error"] == "missing_token"
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"] and wrong.json()["error"] == "invalid_token"
    cli = team.as_(None, "list")
    assert (cli.code, cli.error) == (4, "auth_required") and "--mcp-token-env" in cli.doc["error"]["message"]
    bad = team.as_(None, "list", token="anvil_tk000001_" + "y" * 43)
    assert (bad.code, bad.error) == (4, "auth_failed")


def test_each_role_lists_its_tools_and_a_lead_plans_without_planning_mode(team: Team) -> None:
    agent, reviewer, lead = (team.listed_tools(who) for who in ("agent-1", "rita", "lead"))
    assert "claim_task" in agent and "apply_review_decision" not in agent and "plan_tasks" not in agent
    assert reviewer == agent | {"apply_review_decision", "record_bundle_review", "finalize_bundle_review"}
    # Without planning mode every list is the execution surface (its byte budget: tests/mcp/test_budgets.py);
    # a lead still calls any planning tool by name, as the CLI does below.
    assert lead == {op.name for op in all_operations() if op.surface == "execution" and not op.local_only}
    assert team.as_("lead", "score", "--all-prds").code == 0
    assert team.as_("lead", "token", "list").doc["count"] == 4
    hidden = team.as_("agent-1", "token", "list")
    assert (hidden.code, hidden.error) == (4, "forbidden_by_role")


def test_a_runner_token_may_read_verify_and_land_but_never_claim_submit_review_or_plan(team: Team) -> None:
    team.issue("ci", "runner")
    runner = team.listed_tools("ci")
    reads = {op.name for op in all_operations() if op.effect == "read" and op.min_role == "agent"
             and op.surface == "execution"}
    assert runner == reads  # verify_task and land_task (planning surface) are called by name: verify-task, land
    for argv in (("claim", "T002"), ("claim-next",), ("submit", "T001", "--command", "true"),
                 ("apply", "T001", "--approve"), ("plan",), ("config", "--self-review"), ("token", "list"),
                 ("release", "T001", "--yes")):
        result = team.as_("ci", *argv)
        assert (result.code, result.error) == (4, "forbidden_by_role"), argv
    shown = team.as_("ci", "show", "T001")
    assert shown.code == 0 and shown.doc["claim"]["claimed_by"] == "agent-1"
    not_yet = team.as_("ci", "verify-task", "T001")  # allowed to try: T001 is not submitted yet
    assert (not_yet.code, not_yet.error) == (5, "not_in_review")


def test_look_alike_names_are_refused_over_http(team: Team) -> None:
    for who, argv in (("lead", ("token", "add", "\u0430gent-1", "--role", "agent")),
                      ("agent-1", ("renew", "T001", "--actor", "agent\u200b-1")),
                      ("agent-1", ("list", "--claimed-by", "\u0430gent-1"))):
        result = team.as_(who, *argv)
        assert (result.code, result.error) == (2, "invalid_actor"), argv


def test_a_shared_server_token_is_not_accepted_once_per_agent_tokens_exist(team: Team) -> None:
    shared = "shared-" + "z" * 40
    team.tokens["shared"] = shared
    env = {**team.env, "SHARED": shared}
    port = free_port()
    proc = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port), "--token-env", "SHARED"], env=env,
                            cwd=team.root, stdout=os.devnull)
    try:
        wait_for_port(port, process=proc)
        response = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=LIST, timeout=30,
                               headers={**LIST_HEADERS, "Authorization": f"Bearer {shared}"})
        team.captured.append(response.text)
        assert response.status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_shared_token_caller_cannot_issue_the_first_token_and_revoking_every_token_restores_it(
        anvil_env: dict[str, str], tmp_path: Path) -> None:
    env = anvil_subprocess_env({k: v for k, v in anvil_env.items() if k != "ANVIL_ACTOR"})
    root = Path(env["ANVIL_ROOT"])
    build_scenario("ready", {**env, "ANVIL_ACTOR": "lead"}, str(root))
    shared = "shared-" + "q" * 40
    env = {**env, "SHARED": shared, "ANVIL_MCP_PLANNING": "1"}
    port = free_port()
    proc = warm.WarmProcess("anvil", ["serve", "--http", "--port", str(port), "--token-env", "SHARED"], env=env,
                            cwd=root, stdout=os.devnull)
    server = ServerProcess(proc, port, tmp_path / "unused.log")

    def shared_call(*argv: str) -> subprocess.CompletedProcess[str]:
        return warm.anvil([*argv, "--json", "--mcp", server.url, "--mcp-token-env", "SHARED"], env=env, cwd=root)

    try:
        wait_for_port(port, process=proc)
        grab = shared_call("token", "add", "boss", "--role", "lead")
        assert grab.returncode == 4 and '"token_issue_needs_lead_token"' in grab.stdout, grab.stdout + grab.stderr
        assert shared_call("list").returncode == 0, "nobody was locked out"
        invoke("add_token", {"name": "lead", "role": "lead"}, env=env, cwd=str(root))  # direct: a deliberate switch
        assert shared_call("list").returncode == 4
        invoke("revoke_token", {"name": "lead"}, env=env, cwd=str(root))
        assert shared_call("list").returncode == 0, "revoking every token hands the server back to the shared token"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
